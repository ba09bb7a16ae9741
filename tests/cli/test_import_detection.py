"""`contextd import` reads gzip-compressed transcripts, tells which agent wrote a file from
the shape of its records (`--from` is optional), and a wrong `--from` says what it looks like."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from contextd_client.transcripts import detect_agent, open_transcript
from tests.cli.commands import run
from tests.corpus import NAMES, REAL, agent_of


@pytest.mark.parametrize("name", NAMES)
def test_every_real_transcript_is_told_by_its_records(name: str) -> None:
    with open_transcript(REAL / name) as handle:
        assert detect_agent(handle) == agent_of(name)


def test_a_gz_transcript_imports_without_from(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    done = run(data_dir, "import", str(REAL / "pi-coffee-single-task.jsonl.gz"), "--json")
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    assert imported["source"] == "pi" and imported["messages"] > 0


def test_a_wrong_from_says_what_the_file_looks_like(tmp_path: Path) -> None:
    done = run(tmp_path / "data", "import", str(REAL / "codex-lotto.jsonl.gz"), "--from", "claude-code")
    assert done.returncode == 2
    assert "it looks like a Codex transcript: --from codex" in done.stderr, done.stderr


def test_a_file_of_no_agent_asks_for_from(tmp_path: Path) -> None:
    other = tmp_path / "notes.jsonl.gz"
    other.write_bytes(gzip.compress(b'{"hello": "world"}\n'))
    done = run(tmp_path / "data", "import", str(other))
    assert done.returncode == 2
    assert "cannot tell which agent wrote it" in done.stderr and "--from" in done.stderr


def test_a_cut_short_gzip_is_named(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes((REAL / "pi-coffee-single-task.jsonl.gz").read_bytes()[:300])
    done = run(tmp_path / "data", "import", str(cut), "--from", "pi")
    assert done.returncode == 2 and "gzip data is cut short" in done.stderr, done.stderr
