"""Reading a pasted text of any size, streaming: a text up to KEEP_CHARS and KEEP_LINES is
read whole; a longer one (a 5 MB training log) is scanned line by line to its end, and what
explain reads of it is its first HEAD_LINES lines, its last TAIL_LINES lines, and every line
between them that looks like it could matter (an error, a warning, a GPU, driver or library
word, a traceback frame), with one line before and two after it. What was left out is
counted, so the answer can say so; each kept line keeps its number in the whole text.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Optional

KEEP_CHARS = 2_000_000
KEEP_LINES = 40_000
HEAD_LINES = 200
TAIL_LINES = 1_000
MIDDLE_CAP = 20_000  # lines kept from the middle at most
LINE_CHARS = 20_000  # a longer line is read up to here
BEFORE, AFTER = 1, 2

# A line worth reading in the middle of a long log: every catalogue message has one of these
# words (a test holds this: each fixture's matched line passes this filter).
SIGNAL = re.compile(
    r"error|fail|fault|denied|cannot|can't|could not|unable|not found|no such|warn|exception|"
    r"traceback|abort|segmentation|killed|timeout|timed out|invalid|unsupported|not supported|"
    r"not compiled|out of memory|\boom\b|assert|undefined|missing|hip|cuda|rocm|gfx|sm_\d|"
    r"hsa|kfd|amdgpu|nvrm|xid|nccl|rccl|miopen|rocblas|blas|triton|bitsandbytes|tensile|"
    r"capability|override|visible_devices|\bpcie|\baer\b|\bpsp\b|firmware|libtinfo|file \"|"
    r"dmesg|kernel:|driver|too old|no kernel image|code object|tinfo|module|export |atomic|"
    r"launch bounds|no socket interface|crash|\bhangs?\b|\bhung\b|freez|cpu-only",
    re.IGNORECASE)


@dataclass(frozen=True)
class Scan:
    """How a long text was read: its size, and what of it was left out."""

    chars: int
    lines: int
    kept: int  # lines explain read
    quiet: int  # lines left out that showed nothing worth reading
    capped: int  # lines that might have mattered, left out past MIDDLE_CAP
    clipped: int  # lines longer than LINE_CHARS, read only up to it

    def summary(self) -> str:
        parts = [f"read all {self.lines:,} lines ({self.chars:,} characters); "
                 f"{self.quiet:,} lines that name no error, warning, GPU or library were "
                 f"left out"]
        if self.capped:
            parts.append(f"and {self.capped:,} more from the middle, past the "
                         f"{MIDDLE_CAP:,} such lines kept")
        if self.clipped:
            parts.append(f"{self.clipped:,} lines over {LINE_CHARS:,} characters were read "
                         f"only that far")
        return "; ".join(parts)


@dataclass(frozen=True)
class Paste:
    text: str
    scan: Optional[Scan] = None  # None: the text was read whole
    numbers: Optional[tuple[int, ...]] = None  # the whole-text line number of each kept line

    def line_number(self, index: int) -> int:
        """The 1-based number in the whole text of the kept text's line `index` (1-based)."""
        if self.numbers is None or not 0 < index <= len(self.numbers):
            return index
        return self.numbers[index - 1]


def lines_of(chunks: Iterable[str]) -> Iterator[str]:
    """Lines from text chunks (a file read in pieces), without their line ends."""
    rest = ""
    for chunk in chunks:
        rest += chunk
        if "\n" not in rest and len(rest) < LINE_CHARS * 4:
            continue
        parts = rest.split("\n")
        rest = parts.pop()
        if len(rest) >= LINE_CHARS * 4:  # a line with no end in sight: cut it here
            parts.append(rest)
            rest = ""
        yield from (p[:-1] if p.endswith("\r") else p for p in parts)
    if rest:
        yield rest[:-1] if rest.endswith("\r") else rest


def read_text(text: str) -> Paste:
    if len(text) <= KEEP_CHARS and text.count("\n") < KEEP_LINES:
        return Paste(text)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return read_lines(iter(lines), len(text))


def read_chunks(chunks: Iterable[str]) -> Paste:
    """Read a stream to its end; keep it whole when it is small enough."""
    head: list[str] = []
    chars = 0
    lines = lines_of(chunks)
    for line in lines:
        head.append(line)
        chars += len(line) + 1
        if chars > KEEP_CHARS or len(head) >= KEEP_LINES:
            return read_lines(_chain(head, lines), None)
    return Paste("\n".join(head))


def _chain(first: list[str], rest: Iterator[str]) -> Iterator[str]:
    yield from first
    yield from rest


def read_lines(lines: Iterator[str], known_chars: Optional[int]) -> Paste:
    kept: list[tuple[int, str]] = []
    tail: deque[tuple[int, str]] = deque(maxlen=TAIL_LINES)
    before: deque[tuple[int, str]] = deque(maxlen=BEFORE)
    middle = quiet = capped = clipped = chars = 0
    after = 0
    number = 0
    for number, line in enumerate(lines, start=1):
        chars += len(line) + 1
        if len(line) > LINE_CHARS:
            clipped += 1
            line = line[:LINE_CHARS]
        if number <= HEAD_LINES:
            kept.append((number, line))
            continue
        if len(tail) == TAIL_LINES:
            # the oldest tail line leaves the tail: keep it only if it matters
            old = tail[0]
            if after > 0 or SIGNAL.search(old[1]):
                if middle < MIDDLE_CAP:
                    kept.extend(before)
                    middle += len(before)
                    before.clear()
                    kept.append(old)
                    middle += 1
                    after = AFTER if SIGNAL.search(old[1]) else after - 1
                else:
                    capped += 1
            else:
                if len(before) == BEFORE:
                    quiet += 1
                before.append(old)
        tail.append((number, line))
    quiet += len(before)
    kept.extend(tail)
    text = "\n".join(line for _, line in kept)
    scan = Scan(known_chars if known_chars is not None else chars, number, len(kept), quiet,
                capped, clipped)
    return Paste(text, scan, tuple(n for n, _ in kept))
