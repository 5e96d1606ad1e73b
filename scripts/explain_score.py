"""Recall and precision of `rocmdoctor explain` over the pasted error texts in
tests/fixtures/real/errors/ (the `# expect:` line of each header is the answer that counts).

    python scripts/explain_score.py              # every fixture, each with the machine it names
    python scripts/explain_score.py --heldout    # only the texts collected after the catalogue
    python scripts/explain_score.py --no-host    # the text alone, no machine facts
    python scripts/explain_score.py -v           # list every miss

Recall: expected entries answered / expected entries. Precision: answers that were expected /
all answers (an answer to an unrelated text counts against it). A fixture whose text carries
no message (`expect: unknown`) counts as right when explain says it is an unknown GPU error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose  # noqa: E402
from tests.explain_replay import Case, cases, replay  # noqa: E402
from tests.helpers import fixture_header, fixture_text  # noqa: E402


def heldout(c: Case) -> bool:
    return "\n# heldout:" in fixture_header("errors/" + c.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heldout", action="store_true", help="only the held-out texts")
    parser.add_argument("--in-sample", action="store_true", help="only the texts the "
                        "catalogue was built with")
    parser.add_argument("--no-host", action="store_true", help="replay the text alone")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every miss")
    args = parser.parse_args()
    chosen = [c for c in cases()
              if (not args.heldout or heldout(c)) and (not args.in_sample or not heldout(c))]
    tp = fn = fp = exact = fix_ok = fix_asked = 0
    unknown_ok = unknown_n = unrelated_ok = unrelated_n = 0
    misses = []
    for c in chosen:
        result = diagnose(fixture_text("errors/" + c.name)) if args.no_host else replay(c)
        answers = [e.key for e in result.explanations]
        if c.expect == ("none",):
            unrelated_n += 1
            unrelated_ok += result.verdict == NOT_GPU and not answers
            fp += len(answers)
            if answers:
                misses.append(f"{c.name}: GPU advice {answers} for an unrelated text")
            continue
        if c.expect == ("unknown",):
            unknown_n += 1
            unknown_ok += result.verdict == UNKNOWN_GPU
            fp += len(answers)
            if result.verdict != UNKNOWN_GPU:
                misses.append(f"{c.name}: {result.verdict} {answers}, expected unknown")
            continue
        expected = set(c.expect)
        tp += len(expected & set(answers))
        fn += len(expected - set(answers))
        fp += len(set(answers) - expected)
        exact += answers == list(c.expect)
        if answers and answers[0] == c.expect[0]:
            fix_asked += 1
            first = result.explanations[0]
            fix_ok += c.fix in "\n".join((first.fix.text, *first.fix.commands, *first.notes))
        if answers != list(c.expect):
            misses.append(f"{c.name}: {answers or result.verdict}, expected {list(c.expect)}")
    known = len(chosen) - unknown_n - unrelated_n
    recall = tp / (tp + fn) if tp + fn else 1.0
    precision = tp / (tp + fp) if tp + fp else 1.0
    print(f"texts: {len(chosen)} ({known} with a known message, {unknown_n} without one, "
          f"{unrelated_n} unrelated){' - text alone' if args.no_host else ''}")
    print(f"recall:    {recall:.1%}  ({tp} of {tp + fn} expected entries)")
    print(f"precision: {precision:.1%}  ({tp} of {tp + fp} answers)")
    print(f"exact:     {exact} of {known} texts answered with exactly the expected entries")
    print(f"fix:       {fix_ok} of {fix_asked} first answers carry the expected fix")
    print(f"unknown:   {unknown_ok} of {unknown_n} said to be an unknown GPU error")
    print(f"unrelated: {unrelated_ok} of {unrelated_n} got no GPU advice")
    if args.verbose:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
