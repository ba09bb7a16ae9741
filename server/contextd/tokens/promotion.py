"""Context promotion: the larger model a session moves to instead of compacting.

On an overflow or a truncated answer, a session whose model a `compaction.promotion` rule
names moves to the rule's `to` model and the client retries, as long as that model's window
is larger than the current one. Every promotion grows the window, so a chain of rules
(A -> B -> C) ends, and on the largest model the session compacts as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from contextd.model import ModelOverride, PromotionRule
from contextd.tokens.registry import (
    ModelInfo,
    best_match,
    resolve_model,
    without_routing_prefix,
)


def names_model(pattern: str, model: ModelInfo) -> bool:
    """Whether a rule's `from` names `model`: its id, a prefix of its id at a `-`, `@` or `:`
    boundary (the registry's rule: `claude-sonnet-4-5` names `claude-sonnet-4-5-20250929`),
    the same behind a router's prefix, or its registry family (`claude-4`, `gemini`)."""
    table = {pattern: True}
    return (
        pattern == model.tokenizer
        or best_match(model.id, table) is not None
        or best_match(without_routing_prefix(model.id), table) is not None
    )


def promotion_target(
    current: ModelInfo, rules: Sequence[PromotionRule], overrides: Mapping[str, ModelOverride]
) -> ModelInfo | None:
    """The model of the first rule that names `current` and offers a larger window; None
    when no rule applies (then the session compacts)."""
    for rule in rules:
        if not names_model(rule.from_, current):
            continue
        target = resolve_model(rule.to, overrides)
        if target.context_window > current.context_window:
            return target
    return None
