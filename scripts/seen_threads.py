#!/usr/bin/env python3
"""Every public thread this project already knows, one per line, for collecting fresh pastes:
each GitHub issue, pull request or discussion cited anywhere in the fixtures, the catalogue,
the checks or the docs (a source header, an entry's source, a comment), in both spellings of
a renamed repository.

    python scripts/seen_threads.py > /tmp/seen.txt

A new collection skips every thread listed; the eighth collection took three threads the
catalogue already cited, because its list held only the fixtures' own `# source:` lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLACES = ("tests/fixtures", "doctor", "checks", "tuners", "docs")
THREAD = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)/(issues|pull|discussions)/(\d+)")
# The same issue under two names: ROCm/ROCm's old issues are cited both so and as
# ROCm/legacy-rocm-build (ROCm issue 2153, the eighth collection's aperture violation)
RENAMED = {"rocm/rocm": "ROCm/legacy-rocm-build", "rocm/legacy-rocm-build": "ROCm/ROCm"}


def threads(root: Path = ROOT) -> set[str]:
    found: set[str] = set()
    for place in PLACES:
        for path in (root / place).rglob("*"):
            if not path.is_file() or path.suffix in (".gz", ".png", ".pyc"):
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for owner, repo, kind, number in THREAD.findall(text):
                name = f"{owner}/{repo}"
                for spelled in (name, RENAMED.get(name.lower())):
                    if spelled:
                        found.add(f"https://github.com/{spelled}/{kind}/{number}")
    return found


def main() -> int:
    sys.stdout.write("".join(f"{t}\n" for t in sorted(threads())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
