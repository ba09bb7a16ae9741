"""Token counting with the shipped encodings, offline, and the model registry."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public
from hypothesis import given, settings
from hypothesis import strategies as st

import contextd.tokens.encodings as encodings
from contextd.compaction.context import (
    BRANCH_SUMMARY_PREAMBLE,
    COMPACTION_PREAMBLE,
    HANDOFF_PREAMBLE,
    HISTORY_TOOLS_LINE,
)
from contextd.model import (
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    HandoffEntry,
    ImageContent,
    LabelEntry,
    MessageEntry,
    ModelOverride,
    PruneEntry,
    SummarizerInfo,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from contextd.tokens.counting import CHUNK_CHARS, split_for_counting
from contextd.tokens import (
    IMAGE_TOKENS,
    KNOWN_MODELS,
    MESSAGE_OVERHEAD_TOKENS,
    UNKNOWN_MODEL,
    ModelInfo,
    count_entry,
    count_message,
    count_text,
    get_encoding,
    resolve_model,
)

SHIPPED = ["o200k_base", "cl100k_base"]


def tiktoken_definition(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, str]:
    """tiktoken's own constructor output for `name` and the hash it demands, read without
    downloading: its rank loader is swapped for one that records the expected hash."""
    demanded: list[str] = []

    def record_hash(url: str, expected_hash: str) -> dict[bytes, int]:
        demanded.append(expected_hash)
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", record_hash)
    definition = openai_public.ENCODING_CONSTRUCTORS[name]()
    return definition, demanded[0]


# --- the shipped files -------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_file_hashes_to_what_tiktoken_expects(name, monkeypatch):
    _, expected_hash = tiktoken_definition(name, monkeypatch)
    content = (encodings.ENCODINGS_DIR / f"{name}.tiktoken").read_bytes()
    assert hashlib.sha256(content).hexdigest() == expected_hash


@pytest.mark.parametrize("name", SHIPPED)
def test_encoding_is_defined_exactly_as_tiktoken_defines_it(name, monkeypatch):
    definition, _ = tiktoken_definition(name, monkeypatch)
    encoding = get_encoding(name)
    assert encoding.name == definition["name"]
    assert encoding._pat_str == definition["pat_str"]
    assert encoding._special_tokens == definition["special_tokens"]


@pytest.mark.parametrize("name", SHIPPED)
def test_ranks_read_like_tiktokens_own_loader(name, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's switch for "do not cache"
    spec = encodings.SPECS[name]
    assert encodings.read_ranks(spec) == tiktoken.load.load_tiktoken_bpe(
        str(spec.path), expected_hash=spec.expected_sha256
    )


def test_tampered_file_is_refused(tmp_path, monkeypatch):
    original = (encodings.ENCODINGS_DIR / "cl100k_base.tiktoken").read_bytes()
    (tmp_path / "cl100k_base.tiktoken").write_bytes(original.replace(b" 1000\n", b" 1001\n", 1))
    monkeypatch.setattr(encodings, "ENCODINGS_DIR", tmp_path)
    with pytest.raises(ValueError, match="sha256"):
        encodings.read_ranks(encodings.SPECS["cl100k_base"])


@pytest.mark.parametrize(
    ("name", "token_ids"),
    [("o200k_base", [24912, 2375]), ("cl100k_base", [15339, 1917])],
)
def test_known_text_gives_tiktokens_known_token_ids(name, token_ids):
    encoding = get_encoding(name)
    assert encoding.encode("hello world") == token_ids
    assert encoding.decode(token_ids) == "hello world"
    assert count_text("hello world", name) == 2


def test_encoding_is_built_once_per_process():
    assert get_encoding("o200k_base") is get_encoding("o200k_base")


def test_unknown_encoding_is_an_error_naming_the_shipped_ones():
    with pytest.raises(ValueError, match="cl100k_base, o200k_base"):
        get_encoding("p50k_base")


def test_counting_never_touches_the_network(tmp_path):
    """In a process where every socket fails and tiktoken's cache is empty, counting works;
    tiktoken.get_encoding, which would download, fails there (so the sandbox really bites)."""
    script = textwrap.dedent(
        """
        import os, socket

        def no_network(*args, **kwargs):
            raise OSError("network disabled by test")

        socket.socket = no_network
        socket.create_connection = no_network
        socket.getaddrinfo = no_network

        from contextd.model import UserMessage
        from contextd.tokens import count_message, count_text

        print(count_text("hello world", "o200k_base"), count_text("hello world", "cl100k_base"))
        print(count_message(UserMessage(content="hello world"), "o200k_base"))
        print(os.listdir(os.environ["TIKTOKEN_CACHE_DIR"]))
        import tiktoken
        try:
            tiktoken.get_encoding("o200k_base")
            print("downloaded")
        except Exception:
            print("download blocked")
        """
    )
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache)}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    counted_message = str(2 + MESSAGE_OVERHEAD_TOKENS)
    assert run.stdout.splitlines() == ["2 2", counted_message, "[]", "download blocked"]


# --- counting text -----------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_special_tokens_count_as_plain_text(name):
    text = "before <|endoftext|> after <|endofprompt|>"
    with pytest.raises(ValueError):
        get_encoding(name).encode(text)  # tiktoken's default refuses them
    assert count_text(text, name) == len(get_encoding(name).encode(text, disallowed_special=()))
    assert count_text("<|endoftext|>", name) > 1


def test_empty_text_is_zero_tokens():
    assert count_text("", "o200k_base") == 0


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), name=st.sampled_from(SHIPPED))
def test_count_text_equals_tiktoken_on_any_text(text, name):
    encoding = get_encoding(name)
    assert count_text(text, name) == len(encoding.encode(text, disallowed_special=()))


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_long_text_is_counted_exactly_across_chunks(name, newline):
    sources = sorted((REPO / "server" / "contextd").rglob("*.py"))
    text = "\n".join(path.read_text(encoding="utf-8") for path in sources)
    text = (text * (3 * CHUNK_CHARS // len(text) + 1)).replace("\n", newline)
    assert len(text) > 3 * CHUNK_CHARS
    assert count_text(text, name) == len(get_encoding(name).encode_ordinary(text))


LINE_END = st.sampled_from("aZé7Ж٣s")
LINE_BREAK = st.sampled_from(["\n", "\r\n", "\n\n", "\n  ", "\n\t}"])


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.tuples(st.text(max_size=20), LINE_END, LINE_BREAK), min_size=1),
    name=st.sampled_from(SHIPPED),
)
def test_cuts_after_a_letter_or_digit_before_a_line_break_are_exact(lines, name):
    text = "".join(body + end + brk for body, end, brk in lines)
    encoding = get_encoding(name)
    pieces = list(split_for_counting(text, 32))
    assert sum(len(encoding.encode_ordinary(piece)) for piece in pieces) == len(
        encoding.encode_ordinary(text)
    )


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=500), size=st.integers(min_value=1, max_value=64))
def test_split_for_counting_keeps_every_character_within_the_size(text, size):
    pieces = list(split_for_counting(text, size))
    assert "".join(pieces) == text
    assert all(len(piece) <= size for piece in pieces)


def test_huge_whitespace_run_is_counted_instead_of_crashing():
    # tiktoken alone panics on this (a BaseException that would take the daemon down)
    assert count_text(" " * 2_000_000, "o200k_base") == 2_000_000 // 128


# --- counting messages -------------------------------------------------------

ENC = "o200k_base"


def tokens(text: str) -> int:
    return len(get_encoding(ENC).encode(text, disallowed_special=()))


def test_user_message_with_string_content():
    assert count_message(UserMessage(content="hello world"), ENC) == MESSAGE_OVERHEAD_TOKENS + 2


def test_user_message_with_text_and_image_blocks():
    message = UserMessage(
        content=[
            TextContent(text="What is in this picture?"),
            ImageContent(data="iVBORw0KGgo=" * 1000, mimeType="image/png"),
        ]
    )
    expected = MESSAGE_OVERHEAD_TOKENS + tokens("What is in this picture?") + IMAGE_TOKENS
    assert count_message(message, ENC) == expected


def test_image_costs_the_same_whatever_its_encoded_size():
    small = UserMessage(content=[ImageContent(data="AAAA", mimeType="image/png")])
    large = UserMessage(content=[ImageContent(data="AAAA" * 100_000, mimeType="image/png")])
    expected = MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS
    assert count_message(small, ENC) == count_message(large, ENC) == expected


def test_assistant_message_counts_text_thinking_and_tool_calls():
    arguments = {"path": "src/main.py", "limit": 200, "note": "naïve ünïcode"}
    message = AssistantMessage(
        content=[
            ThinkingContent(thinking="I should read the file first.", signature="sig" * 50),
            TextContent(text="Let me look at it."),
            ToolCall(id="call_1", name="read_file", arguments=arguments),
        ]
    )
    expected = (
        MESSAGE_OVERHEAD_TOKENS
        + tokens("I should read the file first.")
        + tokens("Let me look at it.")
        + tokens("read_file")
        + tokens(json.dumps(arguments, ensure_ascii=False))
    )
    assert count_message(message, ENC) == expected


def test_signature_and_usage_are_not_context():
    plain = AssistantMessage(content=[ThinkingContent(thinking="hmm")])
    signed = AssistantMessage(content=[ThinkingContent(thinking="hmm", signature="x" * 500)])
    assert count_message(plain, ENC) == count_message(signed, ENC)


def test_empty_assistant_message_is_just_its_framing():
    assert count_message(AssistantMessage(), ENC) == MESSAGE_OVERHEAD_TOKENS


def test_tool_result_with_string_and_with_blocks():
    output = "def main():\n    return 0\n"
    as_string = ToolResultMessage(toolCallId="call_1", toolName="read_file", content=output)
    as_blocks = ToolResultMessage(
        toolCallId="call_1",
        toolName="read_file",
        content=[TextContent(text=output), ImageContent(data="AAAA", mimeType="image/png")],
    )
    assert count_message(as_string, ENC) == MESSAGE_OVERHEAD_TOKENS + tokens(output)
    assert count_message(as_blocks, ENC) == MESSAGE_OVERHEAD_TOKENS + tokens(output) + IMAGE_TOKENS


def test_encoding_choice_changes_the_count():
    text = "これは日本語のテキストです。" * 20
    message = UserMessage(content=text)
    assert count_message(message, "o200k_base") != count_message(message, "cl100k_base")


# --- counting entries --------------------------------------------------------


def test_message_entry_counts_its_message():
    message = UserMessage(content="please refactor the parser")
    entry = MessageEntry(id="a", parentId=None, message=message)
    assert count_entry(entry, ENC) == count_message(message, ENC)


def test_compaction_counts_as_the_user_message_it_becomes():
    entry = CompactionEntry(
        id="c",
        parentId="b",
        summary="We refactored the parser.",
        firstKeptEntryId="b",
        tokensBefore=100_000,
        tokensAfter=20_000,
        reason="threshold",
        summarizer=SummarizerInfo(provider="offline"),
    )
    expected = MESSAGE_OVERHEAD_TOKENS + tokens(COMPACTION_PREAMBLE + "We refactored the parser." + HISTORY_TOOLS_LINE)
    assert count_entry(entry, ENC) == expected


def test_handoff_and_branch_summary_count_their_text():
    handoff = HandoffEntry(id="h", parentId=None, document="Goal: ship it.", fromSession="s1")
    branch = BranchSummaryEntry(
        id="s", parentId="a", fromId="x", summary="Tried regexes; too slow."
    )
    handoff_text = HANDOFF_PREAMBLE + "Goal: ship it."
    branch_text = BRANCH_SUMMARY_PREAMBLE + "Tried regexes; too slow."
    assert count_entry(handoff, ENC) == MESSAGE_OVERHEAD_TOKENS + tokens(handoff_text)
    assert count_entry(branch, ENC) == MESSAGE_OVERHEAD_TOKENS + tokens(branch_text)


def test_entries_that_add_no_message_count_zero():
    assert count_entry(LabelEntry(id="l", parentId="a", targetId="a", label="ok"), ENC) == 0
    assert count_entry(PruneEntry(id="p", parentId="a", entryIds=["a"], tokensSaved=5), ENC) == 0


# --- the model registry ------------------------------------------------------


def limits(info: ModelInfo) -> tuple[int, int, str]:
    return (info.context_window, info.max_output_tokens, info.encoding)


def test_exact_ids_resolve_to_their_limits():
    assert resolve_model("claude-sonnet-4-5", {}).context_window == 200_000
    assert resolve_model("claude-sonnet-4-5", {}).max_output_tokens == 64_000
    assert resolve_model("gpt-4.1", {}).context_window == 1_047_576
    assert resolve_model("gemini-2.5-pro", {}).max_output_tokens == 65_536


def test_dated_and_versioned_ids_resolve_to_their_family():
    dated = resolve_model("claude-sonnet-4-5-20250929", {})
    assert dated.id == "claude-sonnet-4-5-20250929"
    assert (dated.context_window, dated.max_output_tokens) == (200_000, 64_000)
    assert resolve_model("gpt-4o-mini-2024-07-18", {}).max_output_tokens == 16_384
    assert resolve_model("claude-opus-4-1-20250805", {}).max_output_tokens == 32_000
    assert resolve_model("claude-3-5-sonnet-v2@20241022", {}).max_output_tokens == 8_192
    assert resolve_model("gemini-2.5-flash-preview-05-20", {}).context_window == 1_048_576


def test_longest_prefix_wins_and_only_at_a_boundary():
    assert resolve_model("gpt-4-0613", {}).context_window == 8_192
    assert resolve_model("gpt-4-turbo-2024-04-09", {}).context_window == 128_000
    assert resolve_model("gpt-4.1-nano-2025-04-14", {}).context_window == 1_047_576
    assert resolve_model("gpt-40", {}).context_window == UNKNOWN_MODEL.context_window


def test_router_and_cloud_prefixes_are_seen_through():
    assert resolve_model("openrouter/openai/gpt-5", {}).context_window == 272_000
    bedrock = resolve_model("us.anthropic.claude-sonnet-4-20250514-v1:0", {})
    assert bedrock.max_output_tokens == 64_000


def test_encodings_follow_the_model_family():
    assert resolve_model("gpt-4", {}).encoding == "cl100k_base"
    assert resolve_model("gpt-3.5-turbo-0125", {}).encoding == "cl100k_base"
    assert resolve_model("gpt-4o", {}).encoding == "o200k_base"
    assert resolve_model("o3-mini", {}).encoding == "o200k_base"
    assert resolve_model("claude-haiku-4-5", {}).encoding == "o200k_base"
    assert resolve_model("gemini-2.0-flash", {}).encoding == "o200k_base"


def test_current_models_resolve_to_their_own_limits():
    """Ids seen in real 2025-2026 transcripts; `gpt-5.2-codex` used to fall to the 128,000
    default while its Codex rollout said 258,400 (95% of its 272,000 prompt limit)."""
    for codex in ("gpt-5.2-codex", "gpt-5.1-codex-max", "gpt-5-codex", "gpt-5.2"):
        assert resolve_model(codex, {}).context_window == 272_000
    assert resolve_model("claude-opus-4-1-20250805", {}).context_window == 200_000
    assert resolve_model("claude-sonnet-4-5-20250929", {}).tokenizer == "claude-4"
    assert resolve_model("claude-opus-4-6", {}).max_output_tokens == 128_000
    assert resolve_model("claude-haiku-4-5-20251001", {}).max_output_tokens == 64_000
    assert resolve_model("gemini-3-pro-preview", {}).context_window == 1_048_576
    assert resolve_model("gemini-3-flash", {}).tokenizer == "gemini"


def test_only_openai_models_are_counted_exactly():
    assert resolve_model("gpt-4o", {}).exact
    assert resolve_model("gpt-3.5-turbo", {}).exact
    assert resolve_model("gpt-5.2-codex", {}).exact
    for approximate in ("claude-sonnet-4-5", "claude-3-5-haiku", "gemini-2.5-pro", "glm-4.7"):
        assert not resolve_model(approximate, {}).exact
    assert resolve_model("claude-sonnet-4-5", {}).calibration_prior == 1.25
    assert resolve_model("claude-3-5-sonnet", {}).calibration_prior == 1.18


def test_unknown_models_each_learn_their_own_calibration():
    assert resolve_model("glm-4.7", {}).tokenizer != resolve_model("deepseek-v4", {}).tokenizer


def test_every_registered_encoding_is_shipped():
    for info in KNOWN_MODELS.values():
        assert count_text("x", info.encoding) == 1


def test_unknown_model_gets_the_documented_default():
    info = resolve_model("my-local-llama", {})
    assert info.id == "my-local-llama"
    assert limits(info) == (128_000, 8_192, "o200k_base")


def test_override_replaces_only_the_fields_it_sets():
    overrides = {"claude-sonnet-4-5": ModelOverride(contextWindow=1_000_000)}
    info = resolve_model("claude-sonnet-4-5", overrides)
    assert limits(info) == (1_000_000, 64_000, "o200k_base")


def test_override_for_a_family_applies_to_its_dated_ids():
    overrides = {"claude-sonnet-4-5": ModelOverride(contextWindow=1_000_000)}
    assert resolve_model("claude-sonnet-4-5-20250929", overrides).context_window == 1_000_000
    assert resolve_model("claude-sonnet-4", overrides).context_window == 200_000


def test_override_can_define_a_model_the_registry_does_not_know():
    overrides = {
        "qwen3-coder": ModelOverride(
            contextWindow=262_144, maxOutputTokens=65_536, encoding="cl100k_base"
        )
    }
    info = resolve_model("qwen3-coder", overrides)
    assert limits(info) == (262_144, 65_536, "cl100k_base")
