"""Layers of explicit settings: merging, dotted keys, who may set what."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from contextd.settings import (
    is_known,
    is_owner_only,
    keep_keys,
    leaves,
    merged,
    set_key,
    suggestion,
    unknown_keys,
    unset_key,
)

NAMES = st.sampled_from(["a", "b", "c", "d"])
VALUES = st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=2))
LAYERS = st.recursive(
    st.dictionaries(NAMES, VALUES, max_size=3),
    lambda inner: st.dictionaries(NAMES, st.one_of(VALUES, inner), max_size=3),
    max_leaves=8,
)


DOTTED = st.dictionaries(st.sampled_from(["x.a", "x.b", "x.y.z", "w"]), VALUES, max_size=4)


def layer_of(flat: dict[str, Any]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for key, value in flat.items():
        set_key(layer, key, value)
    return layer


@given(st.lists(DOTTED, min_size=1, max_size=4))
def test_each_key_takes_the_value_of_the_last_layer_that_sets_it(flats: list[dict[str, Any]]) -> None:
    result = leaves(merged(layer_of(flat) for flat in flats))
    expected: dict[str, Any] = {}
    for flat in flats:
        expected.update(flat)
    assert result == expected


@given(LAYERS)
def test_a_layer_is_rebuilt_from_its_dotted_keys_and_unset_empties_it(layer: dict[str, Any]) -> None:
    rebuilt: dict[str, Any] = {}
    for key, value in leaves(layer).items():
        set_key(rebuilt, key, value)
    assert leaves(rebuilt) == leaves(layer)
    for key in list(leaves(layer)):
        assert unset_key(rebuilt, key)
    assert rebuilt == {}


def test_merging_never_changes_the_layers() -> None:
    low, high = {"compaction": {"keepRecentTokens": 1}}, {"compaction": {"thresholdPercent": 0.5}}
    assert merged([low, high]) == {"compaction": {"keepRecentTokens": 1, "thresholdPercent": 0.5}}
    assert low == {"compaction": {"keepRecentTokens": 1}}


def test_typos_are_found_with_what_was_meant() -> None:
    assert unknown_keys({"compaction": {"keepRecent": 1}, "idle": {"enabled": True}}) == ["compaction.keepRecent"]
    assert suggestion("compaction.keepRecent") == "compaction.keepRecentTokens"
    assert is_known("models.my-model.contextWindow") and is_known("follow.roots.pi")
    assert not is_known("compaction.keepRecent")


def test_where_data_goes_is_the_owners_only() -> None:
    owner = ["storage.dataDir", "models.x.contextWindow", "summarizer.baseUrl", "summarizer.apiKeyEnv", "follow.roots.pi"]
    editor = ["compaction.thresholdPercent", "summarizer.provider", "summarizer.model", "idle.enabled"]
    assert all(is_owner_only(key) for key in owner)
    assert not any(is_owner_only(key) for key in editor)
    layer = {"summarizer": {"provider": "anthropic", "baseUrl": "http://x"}}
    assert keep_keys(layer, lambda key: not is_owner_only(key)) == {"summarizer": {"provider": "anthropic"}}
