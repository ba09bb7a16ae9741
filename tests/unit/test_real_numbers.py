"""The numbers on real sessions: the demo session and real agent transcripts
(tests/fixtures/real), imported the way `contextd import` does."""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path

import pytest
from contextd.importers import IMPORTERS, save
from contextd.model import Message, Settings, UserMessage
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from pydantic import TypeAdapter

from tests.corpus import read_text
from tests.factories import user

TRANSCRIPTS = [
    ("codex-lotto", "codex"),
    ("claude-code-atlas-short", "claude-code"),
    ("pi-coffee-single-task", "pi"),
]


def imported(data_dir: Path, name: str, agent: str) -> LiveSession:
    lines = read_text(f"{name}.jsonl.gz").splitlines()
    session_id, _ = save(IMPORTERS[agent](lines), data_dir, workspace="/ws", name=None)
    return SessionManager(Store(data_dir), Settings(), SilentEvents()).get(session_id)


def demo(data_dir: Path) -> LiveSession:
    text = resources.files("contextd").joinpath("demo", "session.jsonl").read_text(encoding="utf-8")
    adapter = TypeAdapter(Message)
    session = SessionManager(Store(data_dir), Settings(), SilentEvents()).create("/ws")
    messages = [adapter.validate_json(line) for line in text.splitlines() if line.strip()]
    session.append_messages(messages)
    return session


def preview_then_compact(session: LiveSession) -> tuple[dict[str, int], int]:
    preview = asyncio.run(session.preview_compaction())
    entry = asyncio.run(session.compact("manual"))
    return preview, entry.tokensAfter


@pytest.mark.parametrize(("name", "agent"), TRANSCRIPTS)
def test_a_dry_run_predicts_the_compaction_of_a_real_transcript(tmp_path, name, agent):
    preview, real = preview_then_compact(imported(tmp_path, name, agent))
    assert abs(preview.tokensAfter - real) <= 0.3 * real
    assert preview.tokensAfter <= preview.tokensAfterMax
    assert preview.tokensAfter < preview.tokensBefore


def test_a_dry_run_predicts_the_compaction_of_the_demo_session(tmp_path):
    preview, real = preview_then_compact(demo(tmp_path))
    assert abs(preview.tokensAfter - real) <= 0.3 * real


@pytest.mark.parametrize(("name", "agent"), TRANSCRIPTS)
def test_after_compacting_a_real_transcript_the_figure_drops_and_stays_down(tmp_path, name, agent):
    """Every answer of a real transcript carries usage: none of it may freeze the figure at
    its pre-compaction size, nor start another compaction on the next append."""
    session = imported(tmp_path, name, agent)
    seen_before = session.tokens - session.unseen_tokens
    entry = asyncio.run(session.compact("manual"))

    # The part the agent sends unseen (system prompt, tools: 76k on atlas-short once an MCP
    # server connected) stays; what contextd sees is what a compaction folds.
    assert session.tokens == entry.tokensAfter
    assert entry.tokensAfter - session.unseen_tokens < seen_before / 2
    assert session.usage_body()["source"] in {"counted", "estimated"}
    session.append_messages([UserMessage.model_validate(user("and now the next step"))])
    assert session.tokens < session.threshold_tokens


def test_a_codex_rollout_brings_its_window(tmp_path):
    session = imported(tmp_path, "codex-lotto", "codex")
    assert session.model_id == "gpt-5-codex"
    assert session.model_info.context_window == 258_400  # model_context_window, not the registry's
    assert session.usage_body()["calibration"] == 1.0  # an OpenAI model: exact


def test_a_claude_transcript_learns_its_calibration(tmp_path):
    session = imported(tmp_path, "claude-code-atlas-short", "claude-code")
    assert session.usage_body()["calibration"] != session.model_info.calibration_prior
    assert 1.1 <= session.calibration <= 1.4
