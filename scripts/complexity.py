"""A report of the code's shape, the way CI prints it: each function's cyclomatic complexity
(radon's ranks: A 1-5, B 6-10, C 11-20, D 21-30, E 31-40, F 41+) where it is C or worse, and
each module over its line limit. It exits 1 when a rule is broken:

  - no function in tuners/ ranks D or worse;
  - no function of the tuner's renderers (the summary, the export file, the page, the
    progress lines) ranks C or worse;
  - no module is over MAX_LINES lines, the data tables (kb/, tuners/knobs.py) aside.

    python scripts/complexity.py            the report; exit 0 when every rule holds
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 450
DATA_TABLES = ("doctor/kb/", "tuners/knobs.py")
RENDERERS = ("tuners/export.py", "tuners/html.py", "doctor/cli/tune_progress.py")
SOURCES = ("doctor", "checks", "tuners")


@dataclass(frozen=True)
class Block:
    path: str
    line: int
    name: str
    complexity: int

    @property
    def rank(self) -> str:
        return str(cc_rank(self.complexity))


def modules() -> Iterator[Path]:
    for folder in SOURCES:
        yield from sorted((ROOT / folder).rglob("*.py"))


def blocks(path: Path) -> list[Block]:
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for b in cc_visit(path.read_text(encoding="utf-8")):
        if getattr(b, "methods", None) is not None:  # a class: its methods come on their own
            continue
        name = f"{b.classname}.{b.name}" if getattr(b, "classname", None) else b.name
        out.append(Block(rel, b.lineno, name, b.complexity))
    return out


def problems() -> tuple[list[str], list[str]]:
    """(the report's lines, the broken rules)."""
    report: list[str] = []
    broken: list[str] = []
    for path in modules():
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            report.append(f"{rel}: {lines} lines")
            if not rel.startswith(DATA_TABLES):
                broken.append(f"{rel} has {lines} lines (over {MAX_LINES})")
        for b in blocks(path):
            if b.rank < "C":
                continue
            report.append(f"{b.path}:{b.line} {b.name} {b.rank} ({b.complexity})")
            if rel.startswith("tuners/") and b.rank >= "D":
                broken.append(f"{b.path}:{b.line} {b.name} ranks {b.rank} ({b.complexity})")
            elif rel in RENDERERS:
                broken.append(f"{b.path}:{b.line} {b.name}, a renderer, ranks {b.rank} "
                              f"({b.complexity})")
    return report, broken


def main() -> int:
    report, broken = problems()
    print("\n".join(report) or "nothing ranks C or worse, no module is over its limit")
    if broken:
        print("\nrules broken:\n  " + "\n  ".join(broken))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
