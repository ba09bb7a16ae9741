"""A growing transcript's bytes, fed to its importer one complete line at a time.

Agents append to their transcripts as they work, so a read may end in the middle of a line:
that part is not consumed, and is read again, whole, once its newline has been written.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        lines = data.split(b"\n")  # its last part is the partial line (or b""): not fed
        for line in lines[: len(lines) - 1]:  # no copy of `data` cut short first
            self.lines += 1
            self.importer.feed(self.lines, line)  # bytes: the importer's reader takes UTF-8
        self.offset += end
        return end
