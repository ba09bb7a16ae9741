"""Every entry the importers make of the real corpus, as the bytes a session file holds, and
every problem they report: the whole-file import (`contextd import`) and the follower's
(bytes fed in parts, settled entries taken as they come). A digest of each lets a change
meant to make the importers faster prove that it changes nothing they import.

    python -m tests.importers.import_dump   # prints the digests as JSON (to refresh the fixture)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import astuple

from contextd.follow.mirror import follower_importer
from contextd.importers import IMPORTERS
from contextd.importers.feed import LineFeed
from contextd.store import encode_line

from tests.corpus import NAMES, agent_of, read_bytes, read_text

FOLLOW_PART = 64 * 1024
"""The follower's reads, smaller than a transcript: lines split across reads are met."""


def whole_import(name: str) -> bytes:
    session = IMPORTERS[agent_of(name)](read_text(name).splitlines())
    entries = b"".join(encode_line(entry) for entry in session.entries)
    problems = "\n".join(repr(astuple(problem)) for problem in session.problems).encode()
    return b"\0".join([entries, problems, repr(session.leaf_id).encode()])


def followed_import(name: str) -> bytes:
    importer = follower_importer(agent_of(name))
    feed, data, made = LineFeed(importer), read_bytes(name), []
    for start in range(0, len(data), FOLLOW_PART):
        feed.feed(data[feed.offset : start + FOLLOW_PART])
        made.extend(encode_line(entry) for entry in importer.take_settled())
        made.append(repr((importer.leaf_id, importer.pending_usage())).encode())
    return b"\0".join(made)


def digests() -> dict[str, dict[str, str]]:
    return {
        name: {
            "import": hashlib.sha256(whole_import(name)).hexdigest(),
            "follow": hashlib.sha256(followed_import(name)).hexdigest(),
        }
        for name in NAMES
    }


if __name__ == "__main__":
    print(json.dumps(digests(), indent=1, sort_keys=True))
