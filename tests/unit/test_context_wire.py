"""contextd/session/context's result is made from what formats.render_context renders without
validating it again (`ContextResult.rendered`) and its messages go out as they are: on every
real transcript, in every format, with and without a system prompt, the reply's bytes equal
those of the validated result."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from contextd.formats import Format, render_context
from contextd.importers.save import save
from contextd.model import Settings
from contextd.results import ContextResult
from contextd.rpc.messages import encode, reply
from contextd.session import SessionManager, SilentEvents
from contextd.store import Store

from tests.corpus import NAMES
from tests.importers.support import imported


@pytest.mark.parametrize("name", NAMES)
def test_the_context_reply_equals_the_validated_results(name: str, tmp_path: Path) -> None:
    session_id, _ = save(imported(name), tmp_path, workspace=str(tmp_path), name=name)
    sessions = SessionManager(Store(tmp_path), Settings(), SilentEvents())
    try:
        session = sessions.get(session_id)
        for fmt in get_args(Format):
            for system in (session.instructions_text(), "Answer in French."):
                rendered = render_context(
                    session.context_messages(), system, fmt, session.opening_compaction(), session.model_id
                )
                validated = ContextResult(messages=rendered["messages"], system=rendered.get("system"), tokens=session.tokens)
                trusted = ContextResult.rendered(rendered["messages"], rendered.get("system"), session.tokens)
                assert encode(reply(1, trusted)) == encode(reply(1, validated)), (fmt, system)
    finally:
        sessions.close_all()
