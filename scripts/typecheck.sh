#!/usr/bin/env bash
# mypy over the installed package layout: doctor/ is rocmdoctor, checks/ and tuners/ its
# subpackages (setuptools package-dir), mirrored with symlinks so imports resolve.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/rocmdoctor"
for entry in "$root"/doctor/*; do ln -s "$entry" "$tree/rocmdoctor/"; done
ln -s "$root/checks" "$tree/rocmdoctor/checks"
ln -s "$root/tuners" "$tree/rocmdoctor/tuners"
cd "$tree"
python3 -m mypy --config-file "$root/pyproject.toml" -p rocmdoctor "$@"
