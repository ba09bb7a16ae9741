"""Loads pause the cyclic collector; overlapping loads leave it as it was before the first."""

from __future__ import annotations

import gc
import threading
import weakref

from contextd.collector import collector_paused


def test_overlapping_pauses_resume_the_collector_once_the_last_ends():
    assert gc.isenabled()
    first_in, second_done = threading.Event(), threading.Event()

    def second() -> None:
        first_in.wait(10)
        with collector_paused():
            pass
        second_done.set()

    other = threading.Thread(target=second)
    other.start()
    with collector_paused():
        first_in.set()
        assert second_done.wait(10)
        assert not gc.isenabled()  # the other load ended, this one has not
    other.join(10)
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_resumes_when_a_load_fails():
    try:
        with collector_paused():
            raise OSError("disk")
    except OSError:
        pass
    assert gc.isenabled()


class Node:
    """An object in a reference cycle, which only the cyclic collector can free."""

    def __init__(self) -> None:
        self.me = self


def test_what_a_load_made_is_old_at_once_and_still_collectable():
    with collector_paused():
        kept, dropped = Node(), Node()
    # Not walked again by the young generations' passes...
    assert any(item is kept for item in gc.get_objects(generation=2))
    # ...yet a cycle that became garbage is still freed by a full pass.
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert gone() is None and kept.me is kept
