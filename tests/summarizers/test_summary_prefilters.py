"""The quick checks that spare the offline summarizer a slow search give what the search gives."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contextd.summarizers.extract import _PROBE, probe_answers
from contextd.summarizers.outcomes import may_hold_noise
from contextd.summarizers.user_messages import picked_options

CASE_BLIND_NOISE = re.compile(r"debugger|nodejs\.org", re.IGNORECASE)
"""The search may_hold_noise stands for."""

NOISE_LETTERS = st.sampled_from(list("debugrnojs.DEBUGRNOJS") + ["ſ", "İ", "K", "ß", "Σ", " ", "\n"])


@settings(max_examples=500, deadline=None)
@given(
    text=st.lists(st.sampled_from(["debugger", "DeBuGgEr", "nodejs.org", "NODEJſ.ORG", "nodeJS.Org"]) | NOISE_LETTERS
                  | st.text(max_size=3), max_size=12).map("".join)
)
def test_text_a_case_blind_search_finds_noise_in_may_hold_noise(text: str):
    if CASE_BLIND_NOISE.search(text):
        assert may_hold_noise(text)


def test_text_without_the_words_holds_no_noise():
    assert not may_hold_noise("Tests passed: 12\nnode server.js listening on :3000")
    assert may_hold_noise("Debugger attached.\n")


PROBE_PIECES = st.sampled_from(["HTTP", "CSS", "api v2", ":", ": ", ":\t", "200", "404", "000", "2000", "\n", " ", "x"])


@settings(max_examples=500, deadline=None)
@given(text=st.lists(PROBE_PIECES | st.text(max_size=4), max_size=16).map("".join))
def test_probe_answers_are_every_probe_line(text: str):
    assert probe_answers(text) == _PROBE.findall(text)


TRANSLATED_PICK = re.compile(
    r"^(?:(?:let'?s |i'?ll |we'?ll )?(?:go with |do |take |use |pick )?(?:option |choice |number )?"
    r"([0-9]|[a-d])|([0-9])\s*(?:and|&|,)\s*([0-9]))[.!)]?$",
    re.IGNORECASE,
)
"""The pick as it was read: after every fullwidth or Arabic-Indic digit of the reply was
translated to its ASCII digit."""
WIDE_DIGITS = str.maketrans("０１２３４５６７８９٠١٢٣٤٥٦٧٨٩", "01234567890123456789")
PICK_PIECES = st.sampled_from(
    ["2", "B", "b", "e", "٢", "３", "option ", "Go with ", "let's ", " and ", "&", ",", ".", ")", " ", "\n", "\u3000"]
)


@settings(max_examples=500, deadline=None)
@given(said=st.lists(PICK_PIECES | st.text(max_size=2), max_size=8).map("".join))
def test_a_reply_picks_what_it_picked_with_its_digits_translated_first(said: str):
    match = TRANSLATED_PICK.match(said.strip().translate(WIDE_DIGITS))
    assert picked_options(said) == ([group.upper() for group in match.groups() if group] if match else [])


def test_wide_digits_pick_their_options():
    assert picked_options("٢") == ["2"]
    assert picked_options("option ３ and") == []
    assert picked_options("１ and ２") == ["1", "2"]
