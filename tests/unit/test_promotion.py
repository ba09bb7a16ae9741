"""Which rule of `compaction.promotion` names a model, and what it promotes to."""

from __future__ import annotations

import pytest
from contextd.model import ModelOverride, PromotionRule
from contextd.tokens import resolve_model
from contextd.tokens.promotion import names_model, promotion_target


@pytest.mark.parametrize(
    "pattern, model_id, named",
    [
        ("gpt-4o", "gpt-4o", True),
        ("gpt-4o", "gpt-4o-2024-08-06", True),  # a dated id of the model
        ("gpt-4", "gpt-4.1", False),  # a prefix only counts at a boundary
        ("claude-sonnet-4-5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", True),  # behind Bedrock's prefix
        ("claude-4", "claude-opus-4-1", True),  # the registry's family
        ("claude-4", "claude-3-7-sonnet", False),
        ("gemini", "gemini-2.5-flash", True),
        ("my-local", "my-local-model", True),
        ("my-local-model", "other-model", False),
    ],
)
def test_a_rule_names_ids_prefixes_and_families(pattern, model_id, named):
    assert names_model(pattern, resolve_model(model_id, {})) is named


def rules(*pairs: tuple[str, str]) -> list[PromotionRule]:
    return [PromotionRule.model_validate({"from": source, "to": target}) for source, target in pairs]


def test_the_first_rule_with_a_larger_window_wins_and_overrides_count():
    overrides = {"local-big": ModelOverride(contextWindow=500_000)}
    current = resolve_model("gpt-4o", overrides)
    chosen = promotion_target(current, rules(("gpt-4o", "gpt-4o-mini"), ("gpt-4o", "local-big"), ("gpt-4o", "gpt-4.1")), overrides)
    assert chosen is not None and (chosen.id, chosen.context_window) == ("local-big", 500_000)


def test_no_rule_or_no_larger_window_means_none():
    current = resolve_model("gpt-4.1", {})
    assert promotion_target(current, [], {}) is None
    assert promotion_target(current, rules(("gpt-4.1", "gpt-4o")), {}) is None
    assert promotion_target(current, rules(("claude-4", "claude-opus-4-6")), {}) is None
