"""The parsed ranks of a shipped encoding, kept for the next process of the same user.

Parsing o200k_base's 3.6 MB of base64 lines takes about 110 ms in every new daemon; reading
the ranks back with `marshal` takes about 30. marshal is not safe against data someone else
made, so a cache file is read only when it can only be this process's own work:

- it lies in a directory of this user's alone (owned by them, no access for others; the
  daemon's data directory is one) and is itself a regular file of theirs, mode 0600, opened
  without following a symlink;
- the sha256 in its first lines matches all that follows, so a torn or damaged file is never
  unmarshalled;
- it names what it was made from: the shipped file's sha256 (which parsing checked), and the
  tiktoken, Python and marshal versions; a file made from anything else is stale;
- what comes out is a dict of as many ranks as it says.

Anything else means the shipped file is parsed as before and the cache written anew: written
whole to a temporary file of the same directory, then renamed over the old one. No failure
here ever stops an encoding from being built.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path

import tiktoken

log = logging.getLogger(__name__)

MAGIC = b"contextd-ranks 1"


def cache_key(expected_sha256: str) -> str:
    """What a cache file must have been made from to be used."""
    return f"{expected_sha256} tiktoken-{tiktoken.__version__} python-{sys.version.split()[0]} marshal-{marshal.version}"


def cache_path(directory: Path, name: str) -> Path:
    return directory / f"{name}.ranks"


def read_cached_ranks(directory: Path, name: str, key: str) -> dict[bytes, int] | None:
    """The ranks kept for encoding `name` made from `key`, or None (missing, stale, damaged
    or not certainly this user's own)."""
    path = cache_path(directory, name)
    try:
        if not _private_directory(directory):
            return None
        data = _read_private_file(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        log.info("encoding cache %s not read (%s): parsing the shipped file", path, error.strerror)
        return None
    if data is None:
        log.warning("encoding cache %s is not this user's alone: not read", path)
        return None
    ranks = _unpacked(data, key)
    if ranks is None:
        log.info("encoding cache %s is stale or damaged: parsing the shipped file", path)
    return ranks


def write_cached_ranks(directory: Path, name: str, key: str, ranks: dict[bytes, int]) -> None:
    """Keep `ranks` for the next process; a directory that is not this user's alone, a data
    directory not made yet, or a write that fails, leaves the cache as it was."""
    body = b"%s\n%d\n%s" % (key.encode(), len(ranks), marshal.dumps(ranks))
    header = b"%s\n%s\n" % (MAGIC, hashlib.sha256(body).hexdigest().encode())
    try:
        directory.mkdir(mode=0o700, exist_ok=True)  # in a data directory the store made private
        if not _private_directory(directory):
            log.warning("encoding cache directory %s is not this user's alone: nothing written", directory)
            return
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}-")  # mode 0600
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(header)
                file.write(body)
            os.replace(temporary, cache_path(directory, name))
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        log.info("encoding cache %s not written (%s)", directory, error.strerror)


def _unpacked(data: bytes, key: str) -> dict[bytes, int] | None:
    """The ranks in a cache file's content: its digest covers all that follows it."""
    magic, _, rest = data.partition(b"\n")
    digest, _, body = rest.partition(b"\n")
    if magic != MAGIC or hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    found_key, _, rest = body.partition(b"\n")
    count, _, payload = rest.partition(b"\n")
    if found_key != key.encode():
        return None
    try:
        ranks = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    return ranks if type(ranks) is dict and len(ranks) == int(count) else None


def _private_directory(directory: Path) -> bool:
    """Whether `directory` is a real directory (not a symlink) of this user's, closed to others."""
    found = os.lstat(directory)
    return stat.S_ISDIR(found.st_mode) and _owner_only(found)


def _read_private_file(path: Path) -> bytes | None:
    """The content of `path`, or None when it is not a regular file of this user's alone;
    never through a symlink."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(descriptor, "rb") as file:
        found = os.fstat(descriptor)
        if not (stat.S_ISREG(found.st_mode) and _owner_only(found)):
            return None
        return file.read()


def _owner_only(found: os.stat_result) -> bool:
    return found.st_uid == os.geteuid() and not found.st_mode & 0o077
