"""The status marks every renderer shares: the terminal's and the Markdown's."""

from __future__ import annotations

from rocmdoctor.model import Status

# The terminal's mark and its colour.
MARKS = {
    Status.PASS: ("[✓]", "green"),
    Status.WARN: ("[!]", "yellow"),
    Status.FAIL: ("[✗]", "red"),
    Status.SKIP: ("[-]", "dim"),
    Status.ERROR: ("[E]", "magenta"),
}
# GitHub Markdown (the report, the fleet table).
MARK = {Status.PASS: "✅", Status.WARN: "⚠️", Status.FAIL: "❌", Status.SKIP: "➖",
        Status.ERROR: "💥"}
