"""The BPE encodings contextd ships, and how tiktoken defines them.

The `.tiktoken` files next to this module are byte-identical to OpenAI's (made by
`contextd/tokens/convert_npm_encoding.py`). Their patterns, special tokens and hashes are copied
from `tiktoken_ext/openai_public.py`, so an encoding built here encodes exactly as
`tiktoken.get_encoding` would, without ever downloading.
"""

from __future__ import annotations

import hashlib
from binascii import a2b_base64
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tiktoken

ENCODINGS_DIR = Path(__file__).parent

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class EncodingSpec:
    name: str
    expected_sha256: str
    pat_str: str
    special_tokens: dict[str, int]

    @property
    def path(self) -> Path:
        return ENCODINGS_DIR / f"{self.name}.tiktoken"


SPECS: dict[str, EncodingSpec] = {
    spec.name: spec
    for spec in (
        EncodingSpec(
            name="cl100k_base",
            expected_sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
            pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
            special_tokens={
                ENDOFTEXT: 100257,
                FIM_PREFIX: 100258,
                FIM_MIDDLE: 100259,
                FIM_SUFFIX: 100260,
                ENDOFPROMPT: 100276,
            },
        ),
        EncodingSpec(
            name="o200k_base",
            expected_sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
            pat_str="|".join(
                [
                    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                    r"""\p{N}{1,3}""",
                    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                    r"""\s*[\r\n]+""",
                    r"""\s+(?!\S)""",
                    r"""\s+""",
                ]
            ),
            special_tokens={ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
        ),
    )
}

EXPECTED_SHA256 = {name: spec.expected_sha256 for name, spec in SPECS.items()}


def read_ranks(spec: EncodingSpec) -> dict[bytes, int]:
    """The mergeable ranks of a shipped file, refused unless its sha256 is tiktoken's.

    Parsed here rather than with `tiktoken.load.load_tiktoken_bpe`, which also copies every
    file it reads into tiktoken's download cache (and fails when that cache is read-only).
    """
    content = spec.path.read_bytes()
    actual = hashlib.sha256(content).hexdigest()
    if actual != spec.expected_sha256:
        raise ValueError(f"{spec.path} has sha256 {actual}, expected {spec.expected_sha256}")
    # binascii directly: base64.b64decode's Python wrapper took 70 of the 175 ms this parse took.
    return {a2b_base64(token): int(rank) for token, rank in (line.split() for line in content.splitlines())}


_cache_directory: Path | None = None


def cache_ranks_in(directory: Path) -> None:
    """Keep each encoding's parsed ranks in `directory` (the daemon's data directory, its
    user's alone) for the processes after this one (see cache.py); without it, nothing is kept."""
    global _cache_directory
    _cache_directory = directory


def ranks_of(spec: EncodingSpec) -> dict[bytes, int]:
    """The ranks of a shipped encoding: from the cache when one is kept and holds them, else
    parsed (and then kept)."""
    if _cache_directory is None:
        return read_ranks(spec)
    from contextd.tokens.encodings.cache import cache_key, read_cached_ranks, write_cached_ranks

    key = cache_key(spec.expected_sha256)
    ranks = read_cached_ranks(_cache_directory, spec.name, key)
    if ranks is None:
        ranks = read_ranks(spec)
        write_cached_ranks(_cache_directory, spec.name, key, ranks)
    return ranks


@cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """The shipped encoding `name`, built once per process, never downloaded."""
    spec = SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown encoding {name!r}; shipped: {', '.join(sorted(SPECS))}")
    return tiktoken.Encoding(
        name=spec.name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks_of(spec),
        special_tokens=spec.special_tokens,
    )
