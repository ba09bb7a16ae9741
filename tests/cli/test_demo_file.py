"""The session `contextd demo` replays is shipped: its messages are checked here, once, not
by every demo run (the daemon checks each one it is sent anyway)."""

from __future__ import annotations

from contextd_client.demo import demo_messages


def test_every_message_of_the_shipped_demo_session_is_a_valid_message():
    checked = demo_messages(check=True)
    assert len(checked.messages) > 100
    assert checked.messages == demo_messages().messages
