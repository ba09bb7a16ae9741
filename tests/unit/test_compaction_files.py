"""collect_files: the files a conversation read and modified, for the summary's lists."""

from __future__ import annotations

import re
import shlex

from hypothesis import given
from hypothesis import strategies as st

from contextd.compaction.files import (
    SHELL_READERS,
    collect_files,
    format_file_lists,
    may_start_with_reader,
    patched_paths,
    without_file_lists,
)
from contextd.model import AssistantMessage, CompactionSettings, FileDetails, ToolCall

PATCH = """*** Begin Patch
*** Update File: src/app.py
@@ def main():
-    pass
+    run()
*** Add File: src/new.py
+print("hi")
*** Delete File: src/old.py
*** End Patch"""


def calls(*pairs: tuple[str, dict]) -> AssistantMessage:
    return AssistantMessage(
        content=[
            ToolCall(id=f"c{n}", name=name, arguments=args) for n, (name, args) in enumerate(pairs)
        ]
    )


def test_read_and_modify_tools_by_name_and_argument_key():
    message = calls(
        ("read", {"path": "a.py"}),
        ("Read", {"file_path": "b.py"}),
        ("view", {"filePath": "c.py"}),
        ("cat", {"file": "d.py"}),
        ("open_file", {"filename": "e.py"}),
        ("Edit", {"file_path": "f.py", "old_string": "x", "new_string": "y"}),
        ("bash", {"path": "ignored.sh"}),
    )
    files = collect_files([message], CompactionSettings())
    assert files == FileDetails(
        readFiles=["a.py", "b.py", "c.py", "d.py", "e.py"], modifiedFiles=["f.py"]
    )


def test_apply_patch_headers_name_modified_files():
    files = collect_files([calls(("apply_patch", {"input": PATCH}))], CompactionSettings())
    assert files.modifiedFiles == ["src/app.py", "src/new.py", "src/old.py"]


def test_a_call_that_names_its_file_modifies_that_file_only():
    """Writing a patch to a file, or editing one that holds a patch, changes that file: the
    files its headers name are untouched."""
    files = collect_files(
        [calls(("write", {"path": "fix.patch", "content": PATCH}), ("Edit", {"file_path": "docs/a.md", "new_string": PATCH}))],
        CompactionSettings(),
    )
    assert files.modifiedFiles == ["docs/a.md", "fix.patch"]


def test_read_list_excludes_modified_files_and_lists_are_sorted_and_unique():
    message = calls(
        ("read", {"path": "z.py"}),
        ("read", {"path": "shared.py"}),
        ("read", {"path": "z.py"}),
        ("write", {"path": "shared.py", "content": "..."}),
    )
    carried = [FileDetails(readFiles=["a.py", "m.py"], modifiedFiles=["m.py"])]
    files = collect_files([message], CompactionSettings(), carried)
    assert files == FileDetails(readFiles=["a.py", "z.py"], modifiedFiles=["m.py", "shared.py"])


def test_tool_names_come_from_settings():
    settings = CompactionSettings(readTools=["peek"], modifyTools=["poke"])
    message = calls(
        ("peek", {"path": "p.py"}), ("poke", {"path": "q.py"}), ("read", {"path": "r.py"})
    )
    assert collect_files([message], settings) == FileDetails(
        readFiles=["p.py"], modifiedFiles=["q.py"]
    )


def test_file_list_blocks_format_and_strip():
    text = format_file_lists(FileDetails(readFiles=["a.py"], modifiedFiles=["b.py", "c.py"]))
    assert text == (
        "\n\n<read-files>\na.py\n</read-files>\n\n<modified-files>\nb.py\nc.py\n</modified-files>"
    )
    assert format_file_lists(FileDetails()) == ""
    assert without_file_lists("## Goal\nx" + text) == "## Goal\nx"


LINE_START_HEADER = re.compile(
    r"^\*\*\* (?:Update File|Add File|Delete File|Move to): *(?P<path>\S.*?)\s*$", re.MULTILINE
)
"""The header as a patch defines it: at the start of a line."""


@given(st.lists(st.sampled_from(["*** Update File: ", "*** Add File:", "*** Move to: ", "\n", " ", "a.py", "x"])))
def test_patch_headers_count_only_at_the_start_of_a_line(pieces):
    text = "".join(pieces)
    call = ToolCall(id="1", name="apply_patch", arguments={"input": text})
    assert patched_paths(call) == [match["path"] for match in LINE_START_HEADER.finditer(text)]


@given(st.lists(st.sampled_from(["cat", "sed", "ca", "t", " ", "\t", "\x0b", "\u00a0", "'", '"', "\\", "-n", "x.py"])).map("".join))
def test_commands_ruled_out_before_shlex_name_no_reader(command):
    """The quick check never rules out a command whose first word the shell reads as a reader."""
    if not command.strip() or may_start_with_reader(command.strip()):
        return
    try:
        words = shlex.split(command.strip())
    except ValueError:
        return
    assert not words or words[0] not in {*SHELL_READERS, "sed"}
