#!/usr/bin/env bash
# Makes `python3 -m rocmdoctor` work on a bare device machine: the wheels its image lacks
# (.carry/wheels: optuna and its needs, distro), then this checkout, editable. Nothing
# happens when it already imports (a machine kept warm from the last call).
python3 -c "import rocmdoctor" 2>/dev/null && exit 0
python3 -m pip install -q --no-deps --no-index .carry/wheels/*.whl 2>&1 | tail -2
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import rocmdoctor"
