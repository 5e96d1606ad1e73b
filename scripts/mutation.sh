#!/usr/bin/env bash
# The mutation runner is scripts/mutation.py (docs/testing.md, "Mutation testing"): every wing,
# each mutant tested by the tests that run its code. This name is kept for habit's sake.
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "$0")/mutation.py" "$@"
