"""Writing an imported session into a contextd data directory.

The daemon's `append` only takes messages, so it cannot carry an imported compaction, branch
summary or tree. An import is therefore written with the store the daemon itself uses
(`Store.create` and `SessionFile.append`: the same lines, the same lock), as a new session;
the daemon then loads it like any other when it is opened.
"""

from __future__ import annotations

from pathlib import Path

from contextd.importers.common import ImportedSession
from contextd.model import LeafEntry, SessionHeader, SessionInfoEntry, is_node
from contextd.store import Store, new_entry_id, new_session_id


def save(imported: ImportedSession, data_dir: Path, *, workspace: str, name: str | None) -> tuple[str, Path]:
    """Write `imported` as a new session of `workspace`; returns its id and file.

    A `name` that differs from the one the source recorded is appended as a `session_info`
    below the leaf, as a rename in contextd would be; the context does not change.
    """
    header = SessionHeader(id=new_session_id(), workspace=workspace, name=name or imported.name)
    ids = {entry.id for entry in imported.entries}
    session_file = Store(data_dir).create(header)
    try:
        for entry in imported.entries:
            session_file.append(entry)
        last_node = next((entry.id for entry in reversed(imported.entries) if is_node(entry)), None)
        if imported.leaf_id != last_node:
            # The source resumed somewhere other than its last node: say so, as navigation does.
            session_file.append(LeafEntry(id=new_entry_id(ids), parentId=last_node, targetId=imported.leaf_id))
        if name and imported.name and name != imported.name:
            session_file.append(SessionInfoEntry(id=new_entry_id(ids), parentId=imported.leaf_id, name=name))
    finally:
        session_file.close()
    return header.id, session_file.path
