#!/usr/bin/env bash
# The GPU check's bundle: everything the lent GPU machine lacks, under 60 MiB, in one git-ignored folder.
#
#   bash bench/gpu_bundle.sh [--python 3.12] [--out bench/gpu_bundle] [--model DIR] [--xz-preset 6]
#
# Run here, where the package registry is reachable. It fetches the pinned wheels of bench/gpu_bundle.txt
# for that Python (cpXY manylinux x86_64, or pure Python; --no-deps: the list names each one imported),
# builds evalsuite's own wheel, and packs them with the model (default: the bundled all-MiniLM-L6-v2, its
# weights as float16) into OUT/wheels.tar.xz, OUT/model/ and OUT/manifest.json (bench/gpu_bundle.py). It ends by
# printing the one device `run` call that uses it: carry OUT, run bench/gpu_check.py --bundle OUT.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
VERSION=3.12
OUT=bench/gpu_bundle
MODEL=""
PRESET=6
while [[ $# -gt 0 ]]; do
  case "$1" in
    --python) VERSION="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --xz-preset) PRESET="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "gpu_bundle.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$VERSION" =~ ^3\.[0-9]+$ ]] || { echo "gpu_bundle.sh: --python $VERSION is not like 3.12" >&2; exit 2; }
if [[ -z "$MODEL" ]]; then
  MODEL="$("$PY" -c 'from evalsuite.model.resolve import bundled_model_dir; print(bundled_model_dir())')"
fi
STAGE="$(mktemp -d "${TMPDIR:-/tmp}/evalsuite-gpu-bundle-XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
mapfile -t PINS < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' bench/gpu_bundle.txt)
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  PLATFORMS+=(--platform "$p")
done
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$VERSION" --implementation cp "${PLATFORMS[@]}" -d "$STAGE/wheels" "${PINS[@]}"
# evalsuite's wheel from a clean copy of its sources (a build/ folder left in the checkout could add stale modules)
mkdir -p "$STAGE/src"
cp pyproject.toml README.md "$STAGE/src/"
tar -C "$ROOT" --exclude=__pycache__ -cf - evalsuite | tar -C "$STAGE/src" -xf -
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$STAGE/wheels" "$STAGE/src" \
  >/dev/null
"$PY" bench/gpu_bundle.py pack --stage "$STAGE" --out "$OUT" --model "$MODEL" --python "$VERSION" \
  --xz-preset "$PRESET"
