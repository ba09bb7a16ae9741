"""`MessageEntry.of_checked`, how importers make every message entry without validating
their values again, makes what `MessageEntry(...)` makes, and refuses what it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from contextd.importers.common import to_message
from contextd.model import MessageEntry

MESSAGES = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "model": "m", "stopReason": "stop"},
]


@given(st.text(), st.none() | st.text(), st.text(), st.sampled_from(MESSAGES))
def test_an_entry_of_checked_values_is_the_one_validation_makes(entry_id, parent_id, timestamp, data):
    message = to_message(data)
    made = MessageEntry.of_checked(entry_id, parent_id, timestamp, message)
    validated = MessageEntry(id=entry_id, parentId=parent_id, timestamp=timestamp, message=message)
    assert made == validated
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_copy(update={"parentId": "other"}) == validated.model_copy(update={"parentId": "other"})


@pytest.mark.parametrize(
    "values", [(7, None, "2026-01-01"), ("a", 7, "2026-01-01"), ("a", None, 1_700_000_000), ("a", None, None)]
)
def test_a_value_that_is_no_string_is_refused_as_validation_refuses_it(values: tuple[Any, Any, Any]):
    message = to_message(MESSAGES[0])
    entry_id, parent_id, timestamp = values
    with pytest.raises(ValidationError):
        MessageEntry(id=entry_id, parentId=parent_id, timestamp=timestamp, message=message)
    with pytest.raises(ValidationError):
        MessageEntry.of_checked(entry_id, parent_id, timestamp, message)
