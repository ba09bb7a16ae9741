"""What the importers make of every real transcript is exactly what they made when the
digests were taken (tests/importers/fixtures/real_import_digests.json): a change meant to
make them faster must not change one byte of an entry, a problem reported or the leaf,
whether a file is imported whole or followed as it grows. A change meant to import
differently refreshes the fixture (`python -m tests.importers.import_dump`) and says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.corpus import NAMES
from tests.importers.import_dump import digests

FIXTURE = Path(__file__).parent / "fixtures" / "real_import_digests.json"


@pytest.fixture(scope="module")
def made_now() -> dict[str, dict[str, str]]:
    return digests()


@pytest.mark.parametrize("name", NAMES)
def test_every_entry_of_the_corpus_imports_as_before(name: str, made_now: dict[str, dict[str, str]]) -> None:
    assert made_now[name] == json.loads(FIXTURE.read_text())[name]
