"""The parsed ranks of a shipped encoding kept for the next process (tokens/encodings/cache.py):
used only when it is certainly this user's own, current and whole; anything else is parsed
from the shipped file again, and nothing here stops an encoding from being built."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import contextd.tokens.encodings as encodings
from contextd.tokens.encodings.cache import cache_key, cache_path, read_cached_ranks, write_cached_ranks

SPEC = encodings.SPECS["cl100k_base"]
KEY = cache_key(SPEC.expected_sha256)
SMALL = {b"a": 0, b"b": 1, b"ab": 2, bytes(range(256)): 3}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private data directory whose `cache` folder the shipped encodings are kept in."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    monkeypatch.setattr(encodings, "_cache_directory", data_dir / "cache")
    return data_dir / "cache"


def parses_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the shipped files parsed from now on."""
    parsed: list[str] = []
    parse = encodings.read_ranks

    def counting(spec: encodings.EncodingSpec) -> dict[bytes, int]:
        parsed.append(spec.name)
        return parse(spec)

    monkeypatch.setattr(encodings, "read_ranks", counting)
    return parsed


def test_the_second_process_reads_the_ranks_the_first_parsed(cache_dir, monkeypatch):
    parsed = parses_counted(monkeypatch)
    first = encodings.ranks_of(SPEC)
    second = encodings.ranks_of(SPEC)
    assert parsed == ["cl100k_base"]
    assert second == first == encodings.read_ranks(SPEC)
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(cache_path(cache_dir, "cl100k_base").stat().st_mode) == 0o600
    assert [path.name for path in cache_dir.iterdir()] == ["cl100k_base.ranks"]  # no temporary left


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="torn"),
        pytest.param(lambda data: data[:-1] + bytes([data[-1] ^ 1]), id="a flipped bit"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: data.replace(b"tiktoken-", b"tiktoken-0.", 1), id="another tiktoken"),
    ],
)
def test_a_damaged_or_stale_cache_is_parsed_again_and_replaced(cache_dir, monkeypatch, damage):
    expected = encodings.ranks_of(SPEC)
    path = cache_path(cache_dir, "cl100k_base")
    path.write_bytes(damage(path.read_bytes()))
    parsed = parses_counted(monkeypatch)
    assert encodings.ranks_of(SPEC) == expected
    assert parsed == ["cl100k_base"]
    assert read_cached_ranks(cache_dir, "cl100k_base", KEY) == expected  # written whole again


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_change_of_a_cache_file_is_ever_read_as_ranks(tmp_path_factory, data):
    directory = tmp_path_factory.mktemp("cache")
    directory.chmod(0o700)
    write_cached_ranks(directory, "small", "key", SMALL)
    path = cache_path(directory, "small")
    original = path.read_bytes()
    at = data.draw(st.integers(0, len(original) - 1))
    changed = data.draw(
        st.one_of(
            st.builds(lambda byte: original[:at] + bytes([byte]) + original[at + 1 :], st.integers(0, 255)),
            st.just(original[:at]),
            st.builds(lambda extra: original[:at] + extra + original[at:], st.binary(min_size=1, max_size=8)),
        )
    )
    assume(changed != original)
    path.write_bytes(changed)
    assert read_cached_ranks(directory, "small", "key") is None


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_a_cache_file_others_can_reach_is_not_read(cache_dir, monkeypatch, mode):
    encodings.ranks_of(SPEC)
    cache_path(cache_dir, "cl100k_base").chmod(mode)
    assert read_cached_ranks(cache_dir, "cl100k_base", KEY) is None
    parsed = parses_counted(monkeypatch)
    encodings.ranks_of(SPEC)
    assert parsed == ["cl100k_base"]


@pytest.mark.parametrize("mode", [0o750, 0o705, 0o777])
def test_a_cache_directory_others_can_reach_is_neither_read_nor_written(cache_dir, monkeypatch, mode):
    expected = encodings.ranks_of(SPEC)
    path = cache_path(cache_dir, "cl100k_base")
    written = path.read_bytes()
    cache_dir.chmod(mode)
    assert read_cached_ranks(cache_dir, "cl100k_base", KEY) is None
    path.write_bytes(b"left as it was")
    assert encodings.ranks_of(SPEC) == expected
    assert path.read_bytes() == b"left as it was" != written


def test_a_symlinked_cache_file_or_directory_is_not_followed(cache_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    write_cached_ranks(elsewhere, "cl100k_base", KEY, SMALL)
    cache_dir.mkdir(mode=0o700)
    cache_path(cache_dir, "cl100k_base").symlink_to(cache_path(elsewhere, "cl100k_base"))
    assert read_cached_ranks(cache_dir, "cl100k_base", KEY) is None
    linked = tmp_path / "linked"
    linked.symlink_to(elsewhere)
    assert read_cached_ranks(linked, "cl100k_base", KEY) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_cache_file_of_another_user_is_not_read(cache_dir):
    encodings.ranks_of(SPEC)
    os.chown(cache_path(cache_dir, "cl100k_base"), 65534, 65534)
    assert read_cached_ranks(cache_dir, "cl100k_base", KEY) is None


def test_without_a_data_directory_yet_the_encoding_is_parsed_and_nothing_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(encodings, "_cache_directory", tmp_path / "not made yet" / "cache")
    assert encodings.ranks_of(SPEC) == encodings.read_ranks(SPEC)
    assert not (tmp_path / "not made yet").exists()
