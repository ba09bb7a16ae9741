"""A settings change under an open mirror leaves it showing what a load under the new settings
shows: its model (a transcript naming none talks to the default model), window, counts and
calibration, even while the entries of its first read are still to be counted."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contextd.importers import IMPORTERS, STREAMING_IMPORTERS, save
from contextd.importers.feed import LineFeed
from contextd.model import MirrorSource, Settings
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.session.counts import counts_path
from contextd.store import Store
from tests import corpus

TRANSCRIPT = "claude-code-atlas-short.jsonl.gz"
# The first three are counted alike (o200k, prior 1.0) by other tokenizers, with other windows.
DEFAULT_MODELS = st.sampled_from(["gemini-2.5-pro", "glm-4.6", "qwen3-coder", "claude-sonnet-4-6", "gpt-4o"])
OVERRIDES = st.dictionaries(
    st.sampled_from(["glm", "gemini", "claude", "claude-sonnet-4-6"]),
    st.fixed_dictionaries({}, optional={
        "contextWindow": st.sampled_from([32_000, 150_000, 1_000_000]),
        "encoding": st.sampled_from(["o200k_base", "cl100k_base"]),
    }),
    max_size=2,
)
SETTINGS = st.builds(lambda model, models: Settings(defaultModel=model, models=models), DEFAULT_MODELS, OVERRIDES)


def lines(name_models: bool) -> list[str]:
    """The transcript's lines, its answers' models kept or not (an agent that records none)."""
    read = corpus.read_text(TRANSCRIPT).splitlines(keepends=True)
    return read if name_models else [json.dumps(without_model(json.loads(line))) + "\n" for line in read]


def without_model(data: dict[str, Any]) -> dict[str, Any]:
    if isinstance(data.get("message"), dict):
        data["message"].pop("model", None)
    return data


def mirrored(sessions: SessionManager) -> LiveSession:
    """A mirror of the transcript just read, its counts left for later (the follower's
    first read); a transcript naming no model is held until it names one, so it names them."""
    importer = STREAMING_IMPORTERS["claude-code"]()
    LineFeed(importer).feed("".join(lines(name_models=True)).encode())
    mirror = sessions.create_mirror("mirror", "/ws", MirrorSource(agent="claude-code", path="/t/x.jsonl"))
    mirror.mirror(importer.take_settled(), importer.leaf_id, None)
    assert mirror.counts_pending
    return mirror


def imported(sessions: SessionManager) -> LiveSession:
    """The transcript with no model named, imported whole and loaded: it talks to the default model."""
    importer = IMPORTERS["claude-code"](iter(lines(name_models=False)))
    session_id, _ = save(importer, sessions.store.data_dir, workspace="/ws", name=None)
    session = sessions.get(session_id)
    assert session.tree.latest_model_change is None
    return session


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=SETTINGS, after=SETTINGS, kind=st.sampled_from([mirrored, imported]))
@example(before=Settings(defaultModel="gemini-2.5-pro"), after=Settings(defaultModel="glm-4.6"), kind=imported)
def test_a_session_after_a_settings_change_shows_what_a_load_under_them_shows(
    tmp_path_factory: Any, before: Settings, after: Settings, kind: Callable[[SessionManager], LiveSession]
) -> None:
    sessions = SessionManager(Store(tmp_path_factory.mktemp("data")), before, SilentEvents())
    session = kind(sessions)
    sessions.apply_settings(after)
    session.settle_counts()
    applied = session.usage_body()
    sessions.close_all()
    counts_path(session.file.path).unlink()  # nothing kept: the load counts and learns everything
    loaded = SessionManager(sessions.store, after, SilentEvents()).get(session.session_id)
    assert applied == loaded.usage_body()
    loaded.close()
