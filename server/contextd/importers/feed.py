"""A growing transcript's bytes, fed to its importer one complete line at a time.

Agents append to their transcripts as they work, so a read may end in the middle of a line:
that part is not consumed, and is read again, whole, once its newline has been written.
"""

from __future__ import annotations

from dataclasses import dataclass
from io import BytesIO

from contextd.importers.common import StreamingImporter


@dataclass
class LineFeed:
    importer: StreamingImporter
    offset: int = 0
    """Bytes of the file consumed: everything up to and including the last newline fed."""
    lines: int = 0

    def feed(self, data: bytes) -> int:
        """Feed the complete lines of `data`, the file's bytes from `offset` on; returns how
        many bytes were consumed (a partial last line is not)."""
        end = data.rfind(b"\n") + 1
        if end == 0:
            return 0
        # Each line with its newline (JSON's whitespace), found by memchr: bytes.split looks
        # at every byte in turn, three times as long on an agent's long lines.
        lines = BytesIO(data).readlines()
        if end < len(data):
            lines.pop()  # the partial last line: not fed
        for number, line in enumerate(lines, start=self.lines + 1):
            self.lines = number
            self.importer.feed(number, line)  # bytes: the importer's reader takes UTF-8
        self.offset += end
        return end
