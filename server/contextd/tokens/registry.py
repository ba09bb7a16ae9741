"""What each model can hold: context window, output limit and the encoding to count with.

A model id resolves to the registry entry with the same id, else to the entry with the
longest id that prefixes it at a `-`, `@` or `:` boundary, so dated and versioned ids
(`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `claude-3-5-sonnet-v2@20241022`) find
their family while `gpt-4.1` never falls back to `gpt-4`. User overrides resolve the same way
and win field by field. A model nobody knows gets `UNKNOWN_MODEL`'s limits, never an error.

Encodings: OpenAI's models use their real encoding. Anthropic and Google publish no
tokenizer, so Claude and Gemini are counted with `o200k_base` as an approximation: it is the
modern general-purpose BPE closest to theirs, and the provider-reported usage corrects the count
after every answer anyway.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from contextd.model import ModelOverride


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output_tokens: int
    encoding: str


def _family(
    encoding: str, context_window: int, max_output_tokens: int, *ids: str
) -> dict[str, ModelInfo]:
    return {
        model_id: ModelInfo(model_id, context_window, max_output_tokens, encoding)
        for model_id in ids
    }


O200K = "o200k_base"
CL100K = "cl100k_base"
APPROXIMATE = O200K  # Claude and Gemini: no public tokenizer, see the module docstring.

KNOWN_MODELS: Mapping[str, ModelInfo] = {
    # Anthropic
    **_family(APPROXIMATE, 200_000, 4_096, "claude-3-haiku", "claude-3-sonnet", "claude-3-opus"),
    **_family(APPROXIMATE, 200_000, 8_192, "claude-3-5-haiku", "claude-3-5-sonnet"),
    **_family(APPROXIMATE, 200_000, 64_000, "claude-3-7-sonnet", "claude-sonnet-4"),
    **_family(APPROXIMATE, 200_000, 32_000, "claude-opus-4", "claude-opus-4-1"),
    **_family(APPROXIMATE, 200_000, 64_000, "claude-sonnet-4-5", "claude-haiku-4-5"),
    **_family(APPROXIMATE, 200_000, 64_000, "claude-opus-4-5"),
    # OpenAI
    **_family(CL100K, 8_192, 8_192, "gpt-4", "gpt-4-0613", "gpt-4-0314"),
    **_family(CL100K, 32_768, 8_192, "gpt-4-32k"),
    **_family(
        CL100K, 128_000, 4_096,
        "gpt-4-turbo", "gpt-4-turbo-preview", "gpt-4-1106-preview", "gpt-4-0125-preview",
        "gpt-4-vision-preview",
    ),
    **_family(CL100K, 16_385, 4_096, "gpt-3.5-turbo", "gpt-3.5-turbo-16k"),
    **_family(O200K, 128_000, 16_384, "gpt-4o", "gpt-4o-mini", "chatgpt-4o-latest"),
    **_family(O200K, 128_000, 16_384, "gpt-4.5-preview"),
    **_family(O200K, 1_047_576, 32_768, "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"),
    **_family(
        O200K, 400_000, 128_000,
        "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-codex", "gpt-5.1", "gpt-5.1-codex",
    ),
    **_family(O200K, 400_000, 272_000, "gpt-5-pro"),
    **_family(O200K, 128_000, 16_384, "gpt-5-chat-latest", "gpt-5.1-chat-latest"),
    **_family(O200K, 128_000, 32_768, "o1-preview"),
    **_family(O200K, 128_000, 65_536, "o1-mini"),
    **_family(O200K, 200_000, 100_000, "o1", "o1-pro", "o3", "o3-mini", "o3-pro", "o4-mini"),
    # Google
    **_family(APPROXIMATE, 2_097_152, 8_192, "gemini-1.5-pro", "gemini-2.0-pro"),
    **_family(
        APPROXIMATE, 1_048_576, 8_192,
        "gemini-1.5-flash", "gemini-1.5-flash-8b", "gemini-2.0-flash", "gemini-2.0-flash-lite",
    ),
    **_family(
        APPROXIMATE, 1_048_576, 65_536,
        "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro",
    ),
}

UNKNOWN_MODEL = ModelInfo(
    "unknown", context_window=128_000, max_output_tokens=8_192, encoding=O200K
)
"""Limits for a model nobody knows: a window most current models exceed, so thresholds
derived from it compact early rather than overflow."""

_BOUNDARY = "-@:"
_ROUTING_PREFIX = re.compile(r"^(?:.*/)?(?:(?:[a-z]{2}\.)?anthropic\.)?")
"""Router and cloud prefixes in front of a model's own id: `openrouter/anthropic/...`,
`us.anthropic.claude-...` (Bedrock)."""

T = TypeVar("T")


def best_match(model_id: str, table: Mapping[str, T]) -> T | None:
    """The value for `model_id` itself, else for its longest prefix ending at a boundary."""
    if model_id in table:
        return table[model_id]
    for end in range(len(model_id) - 1, 0, -1):
        if model_id[end] in _BOUNDARY and model_id[:end] in table:
            return table[model_id[:end]]
    return None


def resolve_model(model_id: str, overrides: Mapping[str, ModelOverride]) -> ModelInfo:
    """The limits and encoding of `model_id`: registry entry (or `UNKNOWN_MODEL`), then the
    user's override for it applied field by field."""
    override = best_match(model_id, overrides)
    known = best_match(model_id, KNOWN_MODELS) or best_match(
        _ROUTING_PREFIX.sub("", model_id.lower()), KNOWN_MODELS
    )
    info = replace(known or UNKNOWN_MODEL, id=model_id)
    if override is None:
        return info
    return replace(
        info,
        context_window=override.contextWindow or info.context_window,
        max_output_tokens=override.maxOutputTokens or info.max_output_tokens,
        encoding=override.encoding or info.encoding,
    )
