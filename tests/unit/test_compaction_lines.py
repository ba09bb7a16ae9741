"""The lines `contextd watch` prints for a compaction's end: a skip reads as a note, not a failure."""

from __future__ import annotations

from contextd_client.render import compaction_finished


def test_a_skipped_threshold_compaction_is_a_note_with_its_reason() -> None:
    line = compaction_finished(
        {"outcome": "skipped", "reason": "threshold", "error": "nothing to compact: the history fits in the recent tokens"}
    )
    assert line == "· compaction skipped (threshold): nothing to compact: the history fits in the recent tokens"


def test_a_failed_compaction_is_marked_as_failed_and_says_it_will_retry() -> None:
    line = compaction_finished({"outcome": "failed", "reason": "overflow", "error": "provider refused", "willRetry": True})
    assert line == "✗ compaction failed (overflow): provider refused, will retry"
