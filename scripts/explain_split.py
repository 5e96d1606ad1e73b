"""Set aside the held-out texts of a new collection of pasted errors, before any matcher is
written for them.

The fixtures of tests/fixtures/real/errors/ whose header says `# split: pending` are the new
collection. One in five of them, drawn with a fixed seed from their sorted names, becomes
`# split: test` (never tuned on: scripts/explain_score.py --split test measures them); the
rest become `# split: train`. `# split: novel` texts (families nobody collected for) are left
as they are.

    python scripts/explain_split.py            # draw, and rewrite the pending headers
    python scripts/explain_split.py --check    # the train/test headers are the seed's draw

`--check` draws again from the names that now say train or test and fails when the result is
not the test set the headers name, so the split cannot move after the fact.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ERRORS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real" / "errors"
SEED = 1729
SHARE = 5  # one in SHARE is held out


def split_of(path: Path) -> str:
    header = path.read_text(encoding="utf-8").split("\n#---\n", 1)[0]
    for line in header.splitlines():
        if line.startswith("# split:"):
            return line.partition(":")[2].strip()
    return ""


def draw(names: list[str]) -> set[str]:
    """The held-out names: one in SHARE of `names`, by the fixed seed."""
    ordered = sorted(names)
    return set(random.Random(SEED).sample(ordered, k=round(len(ordered) / SHARE)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify the headers, change nothing")
    args = parser.parse_args()
    files = sorted(ERRORS.glob("*.txt"))
    if args.check:
        split = {p.name: split_of(p) for p in files}
        names = [n for n, s in split.items() if s in ("train", "test")]
        test = {n for n, s in split.items() if s == "test"}
        if draw(names) != test:
            print("the test split is not the seed's draw", file=sys.stderr)
            return 1
        print(f"{len(test)} held out of {len(names)} (seed {SEED})")
        return 0
    pending = [p for p in files if split_of(p) == "pending"]
    test = draw([p.name for p in pending])
    for path in pending:
        which = "test" if path.name in test else "train"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("\n# split: pending\n", f"\n# split: {which}\n", 1),
                        encoding="utf-8")
    print(f"{len(test)} of {len(pending)} held out (seed {SEED})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
