"""Rebuild a `.tiktoken` rank file from the npm `tiktoken` package, by hand, never at run time.

The daemon ships `encodings/o200k_base.tiktoken` and `encodings/cl100k_base.tiktoken` so that it
never downloads anything. Those files were made with this script from the npm package (the npm
registry is reachable where the OpenAI blob store may not be):

    cd "$(mktemp -d)" && npm pack tiktoken@1.0.22 && tar xzf tiktoken-1.0.22.tgz
    python -m contextd.tokens.convert_npm_encoding package/encoders/o200k_base.json \\
        server/contextd/tokens/encodings/o200k_base.tiktoken

The npm package stores each encoding as JSON whose `bpe_ranks` is one compact string: lines
(separated by newlines) of the form `! <first rank> <base64 token> <base64 token> ...`, where the
tokens of a line have consecutive ranks starting at `<first rank>`. A `.tiktoken` file holds the
same pairs one per line: `<base64 token> <rank>`. The script refuses to write a file whose sha256
differs from the hash tiktoken expects (`tiktoken_ext/openai_public.py`), so a shipped file is
byte-identical to OpenAI's.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from contextd.tokens.encodings import EXPECTED_SHA256


def ranked_tokens(bpe_ranks: str) -> Iterator[tuple[str, int]]:
    """The (base64 token, rank) pairs of npm's compact `bpe_ranks` string, in file order."""
    for line in bpe_ranks.splitlines():
        marker, first_rank, *tokens = line.split(" ")
        if marker != "!":
            raise ValueError(f"a bpe_ranks line must start with '! <rank>', got {line[:40]!r}")
        for offset, token in enumerate(tokens):
            yield token, int(first_rank) + offset


def to_tiktoken(bpe_ranks: str) -> bytes:
    return "".join(f"{token} {rank}\n" for token, rank in ranked_tokens(bpe_ranks)).encode("ascii")


def convert(npm_json: Path, target: Path) -> None:
    name = target.name.removesuffix(".tiktoken")
    expected = EXPECTED_SHA256[name]
    content = to_tiktoken(json.loads(npm_json.read_text(encoding="utf-8"))["bpe_ranks"])
    actual = hashlib.sha256(content).hexdigest()
    if actual != expected:
        raise SystemExit(f"{name}: sha256 {actual} is not tiktoken's expected {expected}")
    target.write_bytes(content)
    print(f"{target}: {len(content)} bytes, sha256 {actual} (matches tiktoken)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: convert_npm_encoding.py <npm encoders/NAME.json> <NAME.tiktoken>")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
