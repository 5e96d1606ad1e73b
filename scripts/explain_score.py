"""How right `rocmdoctor explain` is on the pasted error texts of tests/fixtures/real/errors/
(the `# expect:` line of each header is the answer its thread reached, as an entry key and a
piece of the fix).

    python scripts/explain_score.py                  # every fixture, each with the machine it names
    python scripts/explain_score.py --split test     # the held-out fifth of the newest collection
    python scripts/explain_score.py --split novel    # texts from families nobody collected for
    python scripts/explain_score.py --split train    # the rest of the newest collection
    python scripts/explain_score.py --split fresh    # collected after the matchers: measured once
    python scripts/explain_score.py --split test-3   # the held-out fifth of the third collection
    python scripts/explain_score.py --split train-3  # the rest of the third collection
    python scripts/explain_score.py --split test-4   # the held-out fifth of the fourth collection
    python scripts/explain_score.py --split train-4  # the rest of the fourth collection
    python scripts/explain_score.py --split fresh-5  # a fifth collection, measured once whole
    python scripts/explain_score.py --split fresh-6  # a sixth collection, measured once whole
    python scripts/explain_score.py --split fresh-7  # a seventh collection, measured once whole
    python scripts/explain_score.py --split fresh-8  # an eighth collection, measured once whole
    python scripts/explain_score.py --split fresh-9  # a ninth collection, measured once whole
    python scripts/explain_score.py --split fresh-10 # a tenth collection, measured once whole
    python scripts/explain_score.py --split fresh-11 # an eleventh collection, measured once whole
    python scripts/explain_score.py --split fresh-12 # a twelfth collection, measured once whole
    python scripts/explain_score.py --split fresh-13 # a thirteenth collection, measured once whole
    python scripts/explain_score.py --heldout        # the older held-out texts (`# heldout:`)
    python scripts/explain_score.py --no-host        # the text alone, no machine facts
    python scripts/explain_score.py -v               # list every text not answered right

Each text is one of: right (the expected entries, in order, and the first carries the expected
fix; for `expect: unknown` the honest not-known answer, for `expect: none` no GPU advice),
right cause but another fix, no answer (not known, no cause guessed), wrong but only
`possible`, or confidently wrong (an entry that was not expected, answered `likely`). Recall
and precision count entries as before.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, Diagnosis, diagnose  # noqa: E402
from tests.explain_replay import Case, cases, replay  # noqa: E402
from tests.helpers import fixture_header, fixture_text  # noqa: E402

# Splits measured, never tuned on (besides the older `# heldout:` texts).
HELD_OUT = ("test", "novel", "fresh", "test-3", "test-4", "fresh-5", "fresh-6", "fresh-7",
            "fresh-8", "fresh-9", "fresh-10", "fresh-11", "fresh-12", "fresh-13")
OUTCOMES = ("right", "other fix", "no answer", "wrong, possible", "confidently wrong")


def split_of(c: Case) -> str:
    header = fixture_header("errors/" + c.name)
    for line in header.splitlines():
        if line.startswith("# split:"):
            return line.partition(":")[2].strip()
    return ""


def heldout(c: Case) -> bool:
    return "\n# heldout:" in fixture_header("errors/" + c.name)


def outcome(c: Case, result: Diagnosis) -> str:
    answers = [e.key for e in result.explanations]
    unexpected = [e for e in result.explanations if e.key not in c.expect]
    if any(e.confidence == "likely" for e in unexpected):
        return "confidently wrong"
    if unexpected:
        return "wrong, possible"
    if c.expect == ("none",):
        return "right" if result.verdict == NOT_GPU else "no answer"
    if c.expect == ("unknown",):
        return "right" if result.verdict == UNKNOWN_GPU else "no answer"
    if not answers:
        return "no answer"
    if answers != list(c.expect):
        return "wrong, possible"
    first = result.explanations[0]
    return "right" if c.fix.lower() in "\n".join((first.fix.text, *first.fix.commands,
                                          *first.notes)).lower() else "other fix"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("train", "train-3", "train-4", *HELD_OUT),
                        help="only the texts of one split of the newest collection")
    parser.add_argument("--heldout", action="store_true", help="only the older held-out texts")
    parser.add_argument("--in-sample", action="store_true", help="only the texts the "
                        "catalogue was built with (no held-out split)")
    parser.add_argument("--no-host", action="store_true", help="replay the text alone")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every text not right")
    args = parser.parse_args()
    chosen = [c for c in cases()
              if (args.split is None or split_of(c) == args.split)
              and (not args.heldout or heldout(c))
              and (not args.in_sample or (not heldout(c)
                                          and split_of(c) not in HELD_OUT))]
    counts = dict.fromkeys(OUTCOMES, 0)
    tp = fn = fp = 0
    misses = []
    for c in chosen:
        result = diagnose(fixture_text("errors/" + c.name)) if args.no_host else replay(c)
        got = outcome(c, result)
        counts[got] += 1
        answers = {e.key for e in result.explanations}
        expected = set(c.expect) - {"none", "unknown"}
        tp += len(expected & answers)
        fn += len(expected - answers)
        fp += len(answers - expected)
        if got != "right":
            said = [f"{e.key} ({e.confidence})" for e in result.explanations]
            misses.append(f"{got}: {c.name}: {said or result.verdict}, expected {list(c.expect)}")
    n = len(chosen)
    recall = tp / (tp + fn) if tp + fn else 1.0
    precision = tp / (tp + fp) if tp + fp else 1.0
    print(f"texts: {n}{' - text alone' if args.no_host else ''}")
    for name in OUTCOMES:
        share = f"{counts[name] / n:.1%}" if n else "-"
        print(f"{name + ':':<19}{counts[name]:>4}  ({share})")
    print(f"recall:            {recall:.1%}  ({tp} of {tp + fn} expected entries)")
    print(f"precision:         {precision:.1%}  ({tp} of {tp + fp} answers)")
    if args.verbose:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
