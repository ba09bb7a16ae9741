"""collect_files: the files a conversation read and modified, for the summary's lists."""

from __future__ import annotations

from contextd.compaction.files import collect_files, format_file_lists, without_file_lists
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
