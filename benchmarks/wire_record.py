"""Record what the daemon writes on the wire during tests, and compare two recordings.

A change meant to make the daemon faster without changing what it says (issue 28) is
checked by recording every message each daemon process sends (replies, notifications,
requests to the client) while the end-to-end and protocol tests run, before and after the
change, and finding every test's messages identical:

    python benchmarks/wire_record.py record /tmp/wire-before            # on the old commit
    python benchmarks/wire_record.py record /tmp/wire-after             # on the new one
    python benchmarks/wire_record.py compare /tmp/wire-before /tmp/wire-after

`record` passes any further arguments to pytest (default: tests/e2e tests/protocol). It
hooks the daemons it starts through a `.pth` file in this interpreter's site-packages, there
only while it runs. What differs from one run to the next is normalized before comparing:
random ids (numbered by first appearance), times, process ids, temporary paths.
"""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

HOOK_NAME = "zz_contextd_wire_record"  # after the editable install's .pth: contextd is importable
SWITCH = Path(tempfile.gettempdir()) / "contextd-wire-record"
"""Holds the recording's directory while `record` runs; the hook does nothing without it."""
BASETEMP = Path(tempfile.gettempdir()) / "contextd-wire-basetemp"
"""One pytest base directory for every recording, so paths (and the workspace hashes made
from them) are the same in both."""


def hook() -> None:
    """In a daemon process: append each message it encodes to its own file under the test
    that started it."""
    try:
        directory = Path(SWITCH.read_text())
    except OSError:
        return
    from contextd.rpc import messages

    test = (directory / "current").read_text() if (directory / "current").exists() else "outside"
    folder = directory / re.sub(r"[^\w.-]+", "_", test)
    folder.mkdir(parents=True, exist_ok=True)
    log = (folder / f"{os.getpid()}.jsonl").open("a")
    encode = messages.encode

    def recording_encode(message: Any) -> bytes:
        data = encode(message)
        log.write(data.decode("ascii") + "\n")
        log.flush()
        return data

    messages.encode = recording_encode


class CurrentTest:
    """The pytest plugin that tells the hook which test is running."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        (self.directory / "current").write_text(nodeid)


def record(directory: Path, pytest_args: list[str]) -> int:
    import pytest

    directory.mkdir(parents=True, exist_ok=False)
    pth = Path(sysconfig.get_paths()["purelib"]) / f"{HOOK_NAME}.pth"
    pth.write_text(f"import runpy; runpy.run_path({str(Path(__file__).resolve())!r}, run_name='wire_record_hook')\n")
    SWITCH.write_text(str(directory.resolve()))
    (directory / "checkout").write_text(str(Path.cwd()))  # a session's default workspace
    try:
        args = pytest_args or ["tests/e2e", "tests/protocol"]
        return pytest.main(["-q", "-p", "no:cacheprovider", f"--basetemp={BASETEMP}", *args], plugins=[CurrentTest(directory)])
    finally:
        SWITCH.unlink()
        pth.unlink()


IDS = re.compile(
    r"\b(?:[0-9a-f]{12}-[0-9a-f]{8}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{12}|[0-9a-f]{8})\b"
)
TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
VARYING_TEXT = [
    (re.compile(re.escape(str(BASETEMP)) + r"/([\w.-]*?)\d+/"), r"<basetemp>/\1/"),  # pytest numbers its folders
    (re.compile(re.escape(tempfile.gettempdir()) + r"/(?!contextd-wire-basetemp)[\w.-]+"), "<tmp>"),
    (re.compile(r"process \d+"), "process <pid>"),
    (re.compile(r"tcp-\d+\.token"), "tcp-<port>.token"),
    (re.compile(r"/workspaces/[^/]+/"), "/workspaces/<workspace>/"),  # named after the checkout's folder
]
VARYING = {"id", "pid", "processId", "startedAt", "connectedAt", "connection", "connections"}
"""Keys whose values differ from run to run (`id`: the client's request ids; the Python
client's own messages are recorded too, as it shares the daemon's framing)."""


class Normalizer:
    """Messages with what varies between runs replaced by stable stand-ins: random ids are
    numbered by first appearance among the replies (`numbered`), else all alike."""

    def __init__(self, checkout: str, numbered: bool) -> None:
        self.checkout = checkout
        self.numbered = numbered
        self.ids: dict[str, str] = {}

    def text(self, value: str) -> str:
        value = TIMES.sub("<time>", value.replace(self.checkout, "<checkout>"))
        for pattern, stand_in in VARYING_TEXT:
            value = pattern.sub(stand_in, value)
        return IDS.sub(self._id, value)

    def _id(self, found: re.Match[str]) -> str:
        if not self.numbered:
            return self.ids.get(found.group(), "<id>")
        return self.ids.setdefault(found.group(), f"<id{len(self.ids)}>")

    def value(self, value: Any, key: str = "") -> Any:
        if key in VARYING and not isinstance(value, (dict, list)):
            return "<varies>"
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(name): self.value(item, name) for name, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, key) for item in value]
        return value


def normalized(log: Path, checkout: str) -> tuple[list[Any], list[Any]]:
    """A daemon's replies in the order it sent them, and its notifications and requests to
    the client sorted (jobs run beside requests: their order against the replies varies)."""
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    normalizer = Normalizer(checkout, numbered=True)
    replies = [normalizer.value(message) for message in sent if "method" not in message]
    normalizer.numbered = False
    others = [normalizer.value(message) for message in sent if "method" in message]
    return replies, sorted(others, key=canonical)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def recordings(directory: Path) -> dict[str, list[tuple[list[Any], list[Any]]]]:
    """Each test's daemons' messages, the daemons in an order independent of their pids."""
    found: dict[str, list[tuple[list[Any], list[Any]]]] = {}
    checkout = (directory / "checkout").read_text()
    for folder in sorted(path for path in directory.iterdir() if path.is_dir()):
        found[folder.name] = sorted((normalized(log, checkout) for log in folder.glob("*.jsonl")), key=canonical)
    return found


def compare(before_dir: Path, after_dir: Path) -> int:
    """Every test recorded in both must have sent the same messages; a test recorded in one
    only is listed (a subset run against a whole one lists the rest)."""
    before, after = recordings(before_dir), recordings(after_dir)
    common = sorted(before.keys() & after.keys())
    differing = [test for test in common if before[test] != after[test]]
    for test in differing:
        print(f"differs: {test}")
        _show_first_difference(before[test], after[test])
    for side, only in (("before", before.keys() - after.keys()), ("after", after.keys() - before.keys())):
        if only:
            print(f"{len(only)} tests recorded {side} only")
    replies = sum(len(log[0]) for test in common for log in after[test])
    others = sum(len(log[1]) for test in common for log in after[test])
    print(f"{len(common)} tests in both, {replies} replies and {others} other messages; {len(differing)} tests differ")
    return 1 if differing else 0


def _show_first_difference(before: list[tuple[list[Any], list[Any]]], after: list[tuple[list[Any], list[Any]]]) -> None:
    flat_before = [message for log in before for part in log for message in part]
    flat_after = [message for log in after for part in log for message in part]
    for index, (old, new) in enumerate(zip(flat_before, flat_after, strict=False)):
        if old != new:
            print(f"  message {index}:\n    before {json.dumps(old)[:600]}\n    after  {json.dumps(new)[:600]}")
            return
    print(f"  {len(flat_before)} messages before, {len(flat_after)} after")


def main() -> int:
    command, *rest = sys.argv[1:] or ["help"]
    if command == "record" and rest:
        return record(Path(rest[0]), rest[1:])
    if command == "compare" and len(rest) == 2:
        return compare(Path(rest[0]), Path(rest[1]))
    print(__doc__)
    return 2


if __name__ == "wire_record_hook":
    hook()
elif __name__ == "__main__":
    sys.exit(main())
