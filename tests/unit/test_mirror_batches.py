"""A mirror's model, window and figure do not depend on how its transcript's entries arrive:
in one batch, in any cut of batches, or loaded back from its file."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextd.importers import IMPORTERS
from contextd.model import MirrorSource, Settings
from contextd.session import LiveSession, SessionManager, SilentEvents
from contextd.store import Store
from tests.corpus import read_text

TRANSCRIPT = "pi-coffee-model-switches.jsonl.gz"
"""pi switches models many times in this one (15 model_change entries)."""
ENTRIES = IMPORTERS["pi"](read_text(TRANSCRIPT).splitlines()).entries


def mirrored(data_dir: Path, cuts: list[int]) -> tuple[SessionManager, LiveSession]:
    sessions = SessionManager(Store(data_dir), Settings(), SilentEvents())
    session = sessions.create_mirror("pi-mirror", "/ws", MirrorSource(agent="pi", path="/t.jsonl"))
    bounds = [0, *sorted(set(cuts)), len(ENTRIES)]
    for start, end in zip(bounds, bounds[1:]):
        session.mirror(ENTRIES[start:end], None, None)
    return sessions, session


def seen(session: LiveSession) -> tuple[object, ...]:
    return session.model_id, session.model_info, session.tokens, session.calibration, session.leaf_id


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=1, max_value=len(ENTRIES) - 1), max_size=6))
def test_batches_of_any_size_give_the_mirror_the_same_model_window_and_figure(tmp_path_factory, cuts):
    whole_sessions, whole = mirrored(tmp_path_factory.mktemp("whole"), [])
    cut_sessions, cut = mirrored(tmp_path_factory.mktemp("cut"), cuts)
    assert seen(cut) == seen(whole)
    cut_sessions.close_all()
    reloaded = SessionManager(cut_sessions.store, Settings(), SilentEvents()).get("pi-mirror")
    assert seen(reloaded) == seen(whole)
    whole_sessions.close_all()
