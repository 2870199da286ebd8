#!/usr/bin/env bash
# The FlagEmbedding oracle's venv (the BGE-M3 parity test: tests/retrieval/test_bgem3_flagembedding.py).
#
#   .ci/flagembedding.sh install [VENV_DIR]
#       Create VENV_DIR (default: <repo>/.flagembedding-venv): transformers 4.56 (FlagEmbedding 1.4.2 imports
#       a module transformers 5 removed) with its own small dependencies, FlagEmbedding and the three packages
#       its import reaches (datasets, peft, accelerate) without theirs; everything else (torch, pyarrow, pandas,
#       ...) comes from the main .venv, read after the venv's own packages through a .pth file written last.
#       About a minute, no torch download. Idempotent: does nothing if the venv imports BGEM3FlagModel.
#
#   .ci/flagembedding.sh python [VENV_DIR]
#       Print the venv's python.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEFAULT_VENV="$REPO_ROOT/.flagembedding-venv"
MAIN_VENV="$REPO_ROOT/.venv"
TRANSFORMERS_SPEC="transformers==4.56.2"
NO_DEPS_SPECS=("FlagEmbedding==1.4.2" "datasets==3.6.0" "peft==0.21.2" "accelerate==1.16.0")

pip_q() {
    "$@" --quiet --disable-pip-version-check 2>&1 \
        | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

venv_ok() {
    [ -x "$1/bin/python" ] || return 1
    "$1/bin/python" -c 'import transformers; assert transformers.__version__.startswith("4.56"); from FlagEmbedding import BGEM3FlagModel' >/dev/null 2>&1
}

cmd_install() {
    local venv="${1:-$DEFAULT_VENV}"
    if venv_ok "$venv"; then
        echo "flagembedding venv ok: $venv"
        return 0
    fi
    local t0=$SECONDS
    [ -x "$MAIN_VENV/bin/python" ] || { echo "the main venv $MAIN_VENV is missing: run scripts/bootstrap.sh first" >&2; return 1; }
    [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
    local site main_site
    site="$("$venv/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')"
    rm -f "$site/zz_evalsuite_main_venv.pth"  # pip must see only the venv's own packages while it installs
    pip_q "$venv/bin/python" -m pip install "$TRANSFORMERS_SPEC"
    pip_q "$venv/bin/python" -m pip install --no-deps "${NO_DEPS_SPECS[@]}"
    main_site="$("$MAIN_VENV/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')"
    echo "$main_site" >"$site/zz_evalsuite_main_venv.pth"
    if ! venv_ok "$venv"; then
        echo "flagembedding venv at $venv does not import BGEM3FlagModel after install:" >&2
        "$venv/bin/python" -c 'from FlagEmbedding import BGEM3FlagModel' >&2 || true
        return 1
    fi
    echo "flagembedding venv ready in $((SECONDS - t0))s: $venv"
}

case "${1:-}" in
    install) shift; cmd_install "$@" ;;
    python) echo "${2:-$DEFAULT_VENV}/bin/python" ;;
    *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
