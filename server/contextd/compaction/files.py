"""Which files the summarized conversation read and modified, from its tool calls."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from typing import Any

from contextd.model import (
    CompactionSettings,
    Entry,
    FileDetails,
    Message,
    ToolCall,
)

FILE_ARGUMENT_KEYS = frozenset({"path", "file_path", "filePath", "file", "filename"})
"""Argument names that tools use for the file they act on."""

PATCH_FILE_HEADER = re.compile(
    r"\*\*\* (?:Update File|Add File|Delete File|Move to): *(?P<path>\S.*?)\s*$", re.MULTILINE
)
"""The file headers of an apply_patch body (`*** Update File: src/app.py`), where they begin
a line. Searched without `^`: a pattern that opens with a literal is found by a fast scan for
it, where `^` tries the whole pattern at every position of a (possibly whole-file) argument."""

FILE_LIST_BLOCK = re.compile(r"\n*<(read-files|modified-files)>.*?</\1>", re.DOTALL)
"""A `<read-files>` or `<modified-files>` block of a summary."""


def named_paths(call: ToolCall) -> list[str]:
    """Paths a tool call names through its file arguments (a string or a list of strings),
    in the order of its arguments."""
    paths: list[str] = []
    for key, value in call.arguments.items():  # a call has fewer arguments than there are file keys
        if key not in FILE_ARGUMENT_KEYS:
            continue
        if isinstance(value, str):
            if value:
                paths.append(value)
        elif isinstance(value, list):
            paths += [item for item in value if isinstance(item, str) and item]
    return paths



def modified_paths(call: ToolCall) -> list[str]:
    """Files a modifying call writes: those its file arguments name, else those its patch
    headers name (apply_patch's input names its files in them). A call that names its file
    writes that file, whatever its content says: a whole file written whose text holds a
    patch does not modify the patch's files, and is not searched for headers."""
    return named_paths(call) or patched_paths(call)


def patched_paths(call: ToolCall) -> list[str]:
    """Paths named by patch headers in any of the call's string arguments."""
    return [
        match["path"]
        for text in _string_values(call.arguments)
        for match in PATCH_FILE_HEADER.finditer(text)
        if match.start() == 0 or text[match.start() - 1] == "\n"
    ]


SHELL_READERS = frozenset({"cat", "nl", "head", "tail", "bat", "less", "more"})
"""Shell programs that show a file's content: running one on a file reads it."""
_CHAIN_PREFIX = re.compile(r"^(?:cd\s+\S+\s*(?:&&|;)\s*)+")
_NOT_A_PLAIN_READ = re.compile(r"\||&&|;|>|\$\(")
"""Pipes, chains, redirections and substitutions: the output is not simply the file's."""


def shell_read_paths(call: ToolCall) -> list[str]:
    """Files a shell call shows whole or in part (`cat a.md`, `sed -n '1,80p' src/x.ts`,
    `nl -ba a.md`): agents without a read tool (Codex) read files this way."""
    command = call.arguments.get("command")
    if not isinstance(command, str):
        command = call.arguments.get("cmd")
        if not isinstance(command, str):
            return []
    command = command.strip()
    if command.startswith("cd"):
        command = _CHAIN_PREFIX.sub("", command)
    # The quick test first: most commands run no reader, and then shlex (50 µs a command)
    # and the search for pipes and redirections are not needed.
    if not command or not may_start_with_reader(command) or _NOT_A_PLAIN_READ.search(command):
        return []
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    if not words or not (words[0] in SHELL_READERS or words[:2] == ["sed", "-n"]):
        return []
    operands = [w for w in words[1:] if not w.startswith("-")]
    if words[0] == "sed":
        operands = operands[1:]  # the first operand is the script ('1,80p')
    return [w for w in operands if re.search(r"[\w-]\.\w+$|/", w) and not re.fullmatch(r"[\d,]+p?", w)]


def may_start_with_reader(command: str) -> bool:
    """Whether the shell may read the command's first word as a reader or `sed`. A word
    without quotes or backslashes reads as itself, so most commands are ruled out without
    `shlex`, the costly part of reading the file lists of a long shell session."""
    first = command.split(maxsplit=1)[0]
    return first in SHELL_READERS or first == "sed" or "'" in first or '"' in first or "\\" in first


def collect_files(
    messages: Iterable[Message],
    settings: CompactionSettings,
    carried: Iterable[FileDetails] = (),
) -> FileDetails:
    """Files read and modified by the tool calls in `messages`, joined with `carried` lists.

    `carried` are the details of earlier summaries (a previous compaction, branch summaries)
    whose conversation is no longer visible, so their files are not forgotten. A tool counts
    as reading or modifying by its name (`settings.readTools` / `settings.modifyTools`); a
    write whose result is an error modified nothing, so a file whose every write failed is not
    listed as modified. A file both read and modified is listed as modified only. Both lists
    are sorted and unique.
    """
    messages = list(messages)
    failed = {m.toolCallId for m in messages if m.role == "toolResult" and m.isError}
    read_tools = set(settings.readTools)
    modify_tools = set(settings.modifyTools)
    read: set[str] = set()
    modified: set[str] = set()
    for details in carried:
        read.update(details.readFiles)
        modified.update(details.modifiedFiles)
    calls = [block for m in messages if m.role == "assistant" for block in m.content if block.type == "toolCall"]
    for call in calls:
        if call.name in modify_tools:
            if call.id in failed:
                continue
            modified.update(modified_paths(call))
        elif call.name in read_tools:
            read.update(named_paths(call))
        else:
            read.update(shell_read_paths(call))
    return FileDetails(readFiles=sorted(read - modified), modifiedFiles=sorted(modified))


def carried_details(entries: Iterable[Entry | None]) -> list[FileDetails]:
    """The file lists that compaction and branch summary entries among `entries` carry."""
    return [
        entry.details
        for entry in entries
        if entry is not None and (entry.type == "compaction" or entry.type == "branch_summary")
    ]


def format_file_lists(files: FileDetails) -> str:
    """The `<read-files>` / `<modified-files>` blocks appended to a summary ("" when empty)."""
    blocks = [
        f"<{tag}>\n" + "\n".join(paths) + f"\n</{tag}>"
        for tag, paths in (("read-files", files.readFiles), ("modified-files", files.modifiedFiles))
        if paths
    ]
    return "\n\n" + "\n\n".join(blocks) if blocks else ""


def without_file_lists(summary: str) -> str:
    """A summary without its file list blocks, which are carried in details and re-appended."""
    return FILE_LIST_BLOCK.sub("", summary).rstrip()


def _string_values(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _string_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _string_values(item)
