"""Set aside the held-out texts of a new collection of pasted errors, before any matcher is
written for them.

The fixtures of tests/fixtures/real/errors/ whose header says `# split: pending` (or
`# split: pending-N`, for the N-th collection) are a new collection. One in five of them,
drawn with a fixed seed from their sorted names, becomes `# split: test` (`test-N`; never
tuned on: scripts/explain_score.py --split test measures them); the rest become
`# split: train` (`train-N`). `# split: novel` and `fresh` texts are left as they are.

    python scripts/explain_split.py            # draw, and rewrite the pending headers
    python scripts/explain_split.py --check    # each collection's train/test is the seed's draw

`--check` draws again, collection by collection, from the names that now say train or test
and fails when the result is not the test set the headers name, so a split cannot move after
the fact.
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


def collection(split: str) -> tuple[str, str]:
    """("train" | "test" | "pending" | other, the collection's suffix: "" or "-N")."""
    base, dash, number = split.partition("-")
    return base, dash + number


def check(files: list[Path]) -> int:
    split = {p.name: collection(split_of(p)) for p in files}
    suffixes = sorted({suffix for base, suffix in split.values() if base in ("train", "test")})
    for suffix in suffixes:
        names = [n for n, (b, s) in split.items() if s == suffix and b in ("train", "test")]
        test = {n for n, (b, s) in split.items() if s == suffix and b == "test"}
        if draw(names) != test:
            print(f"the test{suffix} split is not the seed's draw", file=sys.stderr)
            return 1
        print(f"test{suffix}: {len(test)} held out of {len(names)} (seed {SEED})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify the headers, change nothing")
    args = parser.parse_args()
    files = sorted(ERRORS.glob("*.txt"))
    if args.check:
        return check(files)
    pending: dict[str, list[Path]] = {}
    for path in files:
        base, suffix = collection(split_of(path))
        if base == "pending":
            pending.setdefault(suffix, []).append(path)
    for suffix, paths in sorted(pending.items()):
        test = draw([p.name for p in paths])
        for path in paths:
            which = ("test" if path.name in test else "train") + suffix
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace(f"\n# split: pending{suffix}\n",
                                         f"\n# split: {which}\n", 1), encoding="utf-8")
        print(f"{len(test)} of {len(paths)} held out as test{suffix} (seed {SEED})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
