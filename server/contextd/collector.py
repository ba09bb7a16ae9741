"""The cyclic garbage collector kept out of bulk loading.

Loading a session allocates hundreds of thousands of objects that all survive (entries,
their content, the tree); every few hundred allocations the collector walks the young
ones, and the generation-2 passes walk everything loaded so far, which doubles a load of
tens of thousands of entries. Nothing a load makes is garbage, so it runs with the
collector paused; loads may overlap (worker threads), and the collector resumes when the
last one ends, as it was before the first.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_paused = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block without cyclic collection (reference counting still frees)."""
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0:
                _promote_to_oldest()
                if _was_enabled:
                    gc.enable()


def _promote_to_oldest() -> None:
    """What the loads made goes straight to the oldest generation, as if it had survived the
    young ones' passes (it would: it all survives). Left young, the first allocation after
    the pause would walk every object loaded (a pass as long as a tenth of a load), and the
    middle generation's pass would walk them again. They stay collectable: the oldest
    generation's full passes still see them."""
    gc.freeze()
    gc.unfreeze()
