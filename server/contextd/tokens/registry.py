"""What each model can hold: context window, output limit and the encoding to count with.

A model id resolves to the registry entry with the same id, else to the entry with the
longest id that prefixes it at a `-`, `@` or `:` boundary, so dated and versioned ids
(`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `claude-3-5-sonnet-v2@20241022`) find
their family while `gpt-4.1` never falls back to `gpt-4`. User overrides resolve the same way
and win field by field. A model nobody knows gets `UNKNOWN_MODEL`'s limits, never an error.

Encodings: OpenAI's models use their real encoding, so their counts are exact. Anthropic and
Google publish no tokenizer, so Claude, Gemini and every unknown model are counted with
`o200k_base` times a calibration factor (`contextd.tokens.calibration`): it starts from the
family's `calibration_prior` and learns from the session's own usage reports. Models that
share a tokenizer share a `tokenizer` name, under which what a session learned is kept.

GPT-5's "400,000 token context" counts the output too: a prompt may hold 272,000 tokens, the
figure its `context_window` gives here (Codex CLI shows 95% of it, 258,400, as the window).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TypeVar

from contextd.model import ModelOverride
from contextd.tokens.images import ImageRule


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output_tokens: int
    encoding: str
    tokenizer: str
    """Models with the same name here split text the same way: calibration is kept per name."""
    calibration_prior: float | None
    """The counted-to-reported ratio to start from; None where `encoding` is the model's own
    (the count is exact and never calibrated)."""

    @property
    def exact(self) -> bool:
        return self.calibration_prior is None

    @property
    def image_rule(self) -> ImageRule:
        """OpenAI's models (the ones counted exactly: theirs is the only public encoding) count
        images by OpenAI's tiles; Claude, Gemini and unknown models by Anthropic's pixels."""
        return ImageRule.OPENAI if self.exact else ImageRule.ANTHROPIC

    @property
    def image_scale(self) -> float:
        """What an image's cost (in the provider's tokens) is divided by when counted: the
        factor calibration starts from, so the calibrated figure shows the image at its cost.
        The learned factor drifts from it by what the text teaches, and the image with it
        (Claude Code's: 1.18-1.30 against a prior of 1.25, so within ~5%)."""
        return self.calibration_prior or 1.0

    @property
    def counting(self) -> str:
        """What an entry's count depends on besides the entry: the encoding and the images'
        rule and scale."""
        return f"{self.encoding}, {self.image_rule.value} images / {self.image_scale}"


@dataclass(frozen=True)
class _Tokenizer:
    encoding: str
    name: str
    calibration_prior: float | None


O200K = "o200k_base"
CL100K = "cl100k_base"
OPENAI_O200K = _Tokenizer(O200K, O200K, None)
OPENAI_CL100K = _Tokenizer(CL100K, CL100K, None)
CLAUDE_3 = _Tokenizer(O200K, "claude-3", 1.18)
"""Claude 3.x: published comparisons put its counts about 1.18x tiktoken's."""
CLAUDE_4 = _Tokenizer(O200K, "claude-4", 1.25)
"""Claude 4.x: on pi's real sessions Claude reported prompts 1.23-1.28x their o200k count; the
Claude Code transcripts of tests/fixtures/real grew 1.18-1.30x as fast as their o200k count."""
GEMINI = _Tokenizer(O200K, "gemini", 1.0)
"""Gemini: no measurement to start from; the session's usage reports teach the factor."""
UNKNOWN_PRIOR = 1.0
"""Unknown models (local models, routers' own ids): neutral until the session's usage speaks."""


def _family(
    tokenizer: _Tokenizer, context_window: int, max_output_tokens: int, *ids: str
) -> dict[str, ModelInfo]:
    return {
        model_id: ModelInfo(
            model_id,
            context_window,
            max_output_tokens,
            tokenizer.encoding,
            tokenizer.name,
            tokenizer.calibration_prior,
        )
        for model_id in ids
    }


KNOWN_MODELS: Mapping[str, ModelInfo] = {
    # Anthropic
    **_family(CLAUDE_3, 200_000, 4_096, "claude-3-haiku", "claude-3-sonnet", "claude-3-opus"),
    **_family(CLAUDE_3, 200_000, 8_192, "claude-3-5-haiku", "claude-3-5-sonnet"),
    **_family(CLAUDE_3, 200_000, 64_000, "claude-3-7-sonnet"),
    **_family(CLAUDE_4, 200_000, 64_000, "claude-sonnet-4", "claude-sonnet-4-5", "claude-sonnet-4-6"),
    **_family(CLAUDE_4, 200_000, 32_000, "claude-opus-4", "claude-opus-4-1"),
    **_family(CLAUDE_4, 200_000, 64_000, "claude-haiku-4-5", "claude-opus-4-5"),
    **_family(CLAUDE_4, 200_000, 128_000, "claude-opus-4-6"),
    # OpenAI
    **_family(OPENAI_CL100K, 8_192, 8_192, "gpt-4", "gpt-4-0613", "gpt-4-0314"),
    **_family(OPENAI_CL100K, 32_768, 8_192, "gpt-4-32k"),
    **_family(
        OPENAI_CL100K, 128_000, 4_096,
        "gpt-4-turbo", "gpt-4-turbo-preview", "gpt-4-1106-preview", "gpt-4-0125-preview",
        "gpt-4-vision-preview",
    ),
    **_family(OPENAI_CL100K, 16_385, 4_096, "gpt-3.5-turbo", "gpt-3.5-turbo-16k"),
    **_family(OPENAI_O200K, 128_000, 16_384, "gpt-4o", "gpt-4o-mini", "chatgpt-4o-latest"),
    **_family(OPENAI_O200K, 128_000, 16_384, "gpt-4.5-preview"),
    **_family(OPENAI_O200K, 1_047_576, 32_768, "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"),
    **_family(
        OPENAI_O200K, 272_000, 128_000,
        "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-codex", "gpt-5.1", "gpt-5.1-codex",
        "gpt-5.1-codex-mini", "gpt-5.1-codex-max", "gpt-5.2", "gpt-5.2-codex",
    ),
    **_family(OPENAI_O200K, 400_000, 272_000, "gpt-5-pro"),
    **_family(
        OPENAI_O200K, 128_000, 16_384,
        "gpt-5-chat-latest", "gpt-5.1-chat-latest", "gpt-5.2-chat-latest",
    ),
    **_family(OPENAI_O200K, 128_000, 32_768, "o1-preview"),
    **_family(OPENAI_O200K, 128_000, 65_536, "o1-mini"),
    **_family(OPENAI_O200K, 200_000, 100_000, "o1", "o1-pro", "o3", "o3-mini", "o3-pro", "o4-mini"),
    # Google
    **_family(GEMINI, 2_097_152, 8_192, "gemini-1.5-pro", "gemini-2.0-pro"),
    **_family(
        GEMINI, 1_048_576, 8_192,
        "gemini-1.5-flash", "gemini-1.5-flash-8b", "gemini-2.0-flash", "gemini-2.0-flash-lite",
    ),
    **_family(
        GEMINI, 1_048_576, 65_536,
        "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro",
        "gemini-3-flash",
    ),
}

UNKNOWN_MODEL = ModelInfo(
    "unknown",
    context_window=128_000,
    max_output_tokens=8_192,
    encoding=O200K,
    tokenizer="unknown",
    calibration_prior=UNKNOWN_PRIOR,
)
"""Limits for a model nobody knows: a window most current models exceed, so thresholds
derived from it compact early rather than overflow."""

_BOUNDARY = "-@:"
_ROUTING_PREFIX = re.compile(r"^(?:.*/)?(?:(?:[a-z]{2}\.)?anthropic\.)?")
"""Router and cloud prefixes in front of a model's own id: `openrouter/anthropic/...`,
`us.anthropic.claude-...` (Bedrock)."""

T = TypeVar("T")


def without_routing_prefix(model_id: str) -> str:
    """The model's own id behind a router's or cloud's prefix (`us.anthropic.claude-...`)."""
    return _ROUTING_PREFIX.sub("", model_id.lower())


def best_match(model_id: str, table: Mapping[str, T]) -> T | None:
    """The value for `model_id` itself, else for its longest prefix ending at a boundary."""
    if not table:  # most users override no model: asked for every figure of every mirror
        return None
    if model_id in table:
        return table[model_id]
    for end in range(len(model_id) - 1, 0, -1):
        if model_id[end] in _BOUNDARY and model_id[:end] in table:
            return table[model_id[:end]]
    return None


@lru_cache(maxsize=1024)
def _known_model(model_id: str) -> ModelInfo | None:
    """The built-in entry for `model_id`, remembered: `KNOWN_MODELS` never changes (the
    user's overrides, which do, are looked up afresh by every `resolve_model`)."""
    return best_match(model_id, KNOWN_MODELS) or best_match(without_routing_prefix(model_id), KNOWN_MODELS)


def resolve_model(
    model_id: str, overrides: Mapping[str, ModelOverride], recorded_window: int | None = None
) -> ModelInfo:
    """The limits and encoding of `model_id`: registry entry (or `UNKNOWN_MODEL`), then the
    window the session's agent recorded for it (`recorded_window`, from a transcript), then
    the user's override applied field by field."""
    override = best_match(model_id, overrides)
    known = _known_model(model_id)
    info = replace(known or UNKNOWN_MODEL, id=model_id)
    if known is None:
        # Unknown models have nothing in common but ignorance: each learns on its own.
        info = replace(info, tokenizer=f"unknown:{model_id}")
    if recorded_window:
        info = replace(info, context_window=recorded_window)
    if override is None:
        return info
    return replace(
        info,
        context_window=override.contextWindow or info.context_window,
        max_output_tokens=override.maxOutputTokens or info.max_output_tokens,
        encoding=override.encoding or info.encoding,
    )
