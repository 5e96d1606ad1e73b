"""Every versioned format rocmdoctor writes, named once. Readers check these strings; a
format changes only by adding fields (../shared/contracts)."""

from __future__ import annotations

SNAPSHOT = "rocmdoctor-snapshot/1"
CHECK = "rocmdoctor.check/1"
REPORT = "rocmdoctor.report/1"
EXPLAIN = "rocmdoctor.explain/1"
FLEET = "rocmdoctor.fleet/1"
BENCH = "rocmdoctor.bench/1"
TUNE = "rocmdoctor.tune/1"
# Written by host/collectives_launch.py, a script that runs in the Python that trains without
# importing rocmdoctor: it keeps its own copy, and a test holds the two equal.
COLLECTIVES = "rocmdoctor.collectives/1"
# Written by host/deep_child.py (`check --deep`), run the same way: its own copy, held equal.
DEEP = "rocmdoctor.deep/1"
