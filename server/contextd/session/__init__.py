"""Live sessions, split by job so each behaviour is found by its name.

- `counting.py`    a session's data, its entries' token counts, calibration, model and window
- `figure.py`      the live state rebuilt from the path: name, pending tool calls, unseen part, figure
- `reports.py`     what a session tells: usage and activity bodies, open/state/stats results
- `state.py`       `LiveState`: all of the above, with appends, instructions, mirrors, model and settings
- `jobs.py`        the running job: compaction, handoff, abort
- `triggers.py`    automatic compaction: threshold, overflow, incomplete answer, promotion
- `idle.py`        the idle timer
- `navigation.py`  the tree view, labels, navigate with a branch summary, fork history
- `live.py`        `LiveSession`, all of the above put together
- `manager.py`     `SessionManager`: open, create, find, evict, list
- `events.py`      what a session tells the server (`SessionEvents`), `SilentEvents`
- `errors.py`      the errors a session raises
"""

from contextd.session.errors import (
    ClientVetoed,
    CompactionFailed,
    CompactionRunning,
    CompactionVetoed,
    EntryNotFound,
    InvalidAppend,
    NothingToCompactError,
)
from contextd.session.events import HookAnswer, SessionEvents, SilentEvents
from contextd.session.running import RunningCompaction
from contextd.session.live import LiveSession
from contextd.session.manager import SessionManager, tree_of
from contextd.session.navigation import entry_preview
from contextd.session.state import check_tool_results

__all__ = [
    "ClientVetoed",
    "CompactionFailed",
    "CompactionRunning",
    "CompactionVetoed",
    "EntryNotFound",
    "HookAnswer",
    "InvalidAppend",
    "LiveSession",
    "NothingToCompactError",
    "RunningCompaction",
    "SessionEvents",
    "SessionManager",
    "SilentEvents",
    "check_tool_results",
    "entry_preview",
    "tree_of",
]
