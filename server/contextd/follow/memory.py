"""Giving memory back to the system once following has let go of much of it.

A cold start reads many transcripts, and quiet mirrors' sessions and importers are let go;
CPython frees those objects, but the C allocator keeps the freed pages of its heap for reuse,
so the daemon's resident size would stay at its peak. glibc's `malloc_trim` returns them;
elsewhere (no glibc) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def return_freed_memory() -> None:
    """Collect what is unreachable and hand the C heap's free pages back to the system."""
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
