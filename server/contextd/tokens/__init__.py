"""Token counting with the encodings shipped in the package, and the model registry.

Nothing here touches the network: the BPE files live in `contextd/tokens/encodings/`.
"""

from contextd.tokens.counting import (
    MESSAGE_OVERHEAD_TOKENS,
    count_entry,
    count_message,
    count_text,
)
from contextd.tokens.encodings import load_encoding as get_encoding
from contextd.tokens.images import IMAGE_TOKENS, ImageRule
from contextd.tokens.registry import KNOWN_MODELS, UNKNOWN_MODEL, ModelInfo, resolve_model

__all__ = [
    "IMAGE_TOKENS",
    "ImageRule",
    "KNOWN_MODELS",
    "MESSAGE_OVERHEAD_TOKENS",
    "ModelInfo",
    "UNKNOWN_MODEL",
    "count_entry",
    "count_message",
    "count_text",
    "get_encoding",
    "resolve_model",
]
