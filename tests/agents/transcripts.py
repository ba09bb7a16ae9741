"""Real agent transcripts from the corpus, placed under a temporary HOME as the agent would
keep them, with their working directory moved to a test's workspace."""

from __future__ import annotations

from pathlib import Path

from tests import corpus

CLAUDE_CODE_COMPACTED = "claude-code-atlas-sonnet45.jsonl.gz"
"""Two compactions by Claude Code; recorded in /Users/Sam."""
CLAUDE_CODE_HOME = "/Users/Sam"


def place_claude_code_transcript(home: Path, workspace: Path, name: str = CLAUDE_CODE_COMPACTED) -> Path:
    """The corpus transcript as Claude Code would have written it for `workspace`."""
    text = corpus.read_text(name)
    text = text.replace(f'"{CLAUDE_CODE_HOME}', f'"{workspace}')
    folder = home / ".claude" / "projects" / str(workspace).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "d453a744-f4f3-4982-8589-34bcc2cfcd46.jsonl"
    path.write_text(text)
    return path
