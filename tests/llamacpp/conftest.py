"""Real llama-cpp-python servers (0.3.36, CPU build, ``.ci/llamacpp.sh``), started together once per session.

Every test module here is in the xdist group "llamacpp" and carries the ``llamacpp`` marker: one worker runs
them all, so the session fixture below starts its servers once (the root conftest's ``llamacpp_launcher``
stops them at the end). Each server loads the bundled model converted to GGUF by the sdist's own
``convert_hf_to_gguf.py`` at install time (f32 and f16 files beside the venv); a start takes seconds.

- ``default``: the f32 file as ``python -m llama_cpp.server --model X.gguf --embedding true`` serves it (n_ctx
  512, pooling from the file, named by its path);
- ``faithful``: the f32 file at the contract's max length (n_ctx, n_batch and n_ubatch 256), the pooling from
  the file (mean, as the model's 1_Pooling says), served as ``all-MiniLM-L6-v2``. The server never normalizes,
  so the faithful contract is the model's with ``--no-normalize`` (see docs/engines.md);
- ``f16``: the f16 file, otherwise faithful, behind an API key (the canary's auth check meets its auth);
- ``nosep``: a copy of the f32 file whose tokenizer metadata says not to add the closing token
  (``tokenizer.ggml.add_eos_token`` false, set with the sdist's gguf-py): llama.cpp ignores it for BERT;
- ``cls``: a copy of the f32 file whose ``bert.pooling_type`` says CLS (2): the server has no pooling setting,
  it pools as the file says;
- ``short``: the f32 file with ``--n_ctx 128`` (below the contract's 256).
"""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVED_NAME = "all-MiniLM-L6-v2"
KEY_ENV = "EVALSUITE_LLAMACPP_TEST_KEY"
CONTRACT_MAX_LENGTH = 256  # the bundled model's sentence_bert_config max_seq_length
VENV = Path(__file__).resolve().parents[2] / ".llamacpp-venv"  # the root conftest's LLAMACPP engine
F32 = VENV / "models" / "minilm-f32.gguf"
F16 = VENV / "models" / "minilm-f16.gguf"
CONVERTER = VENV / "convert"


@dataclass(frozen=True)
class LlamaCppServers:
    default: str
    default_model: str  # the name it serves: the GGUF's path
    faithful: str
    f16: str
    key: str  # f16's API key
    nosep: str
    cls: str
    short: str


def at_contract_length(*extra: str) -> list[str]:
    n = str(CONTRACT_MAX_LENGTH)
    return ["--model_alias", SERVED_NAME, "--n_ctx", n, "--n_batch", n, "--n_ubatch", n, *extra]


def with_metadata(src: Path, dest: Path, key: str, value: str) -> Path:
    """A copy of ``src`` with one metadata value changed in place by the sdist's gguf-py (gguf_set_metadata.py,
    in the llama.cpp venv). ``tokenizer.ggml.add_eos_token`` 0: the closing [SEP] is not added (the converter
    writes add_eos_token true and add_sep_token false for this BERT: [SEP] is its EOS); ``bert.pooling_type``
    2: CLS pooling."""
    import shutil

    shutil.copyfile(src, dest)
    script = CONVERTER / "gguf-py" / "gguf" / "scripts" / "gguf_set_metadata.py"
    subprocess.run(
        [str(VENV / "bin" / "python"), str(script), "--force", str(dest), key, value],
        check=True,
        capture_output=True,
        env={"PYTHONPATH": str(CONVERTER / "gguf-py"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    return dest


@pytest.fixture(scope="session")
def llamacpp_servers(llamacpp_launcher, tmp_path_factory) -> LlamaCppServers:
    key = "sk-llamacpp-" + secrets.token_hex(12)
    if not F16.exists():
        llamacpp_launcher("ci", {})  # skips (or fails under CI) with the install command
    variants = tmp_path_factory.mktemp("llamacpp-gguf")
    nosep = with_metadata(F32, variants / "minilm-f32-nosep.gguf", "tokenizer.ggml.add_eos_token", "0")
    cls = with_metadata(F32, variants / "minilm-f32-cls.gguf", "bert.pooling_type", "2")
    servers = llamacpp_launcher(
        "ci",
        {
            "default": (F32, []),
            "faithful": (F32, at_contract_length()),
            "f16": (F16, at_contract_length("--api_key", key)),
            "nosep": (nosep, at_contract_length()),
            "cls": (cls, at_contract_length()),
            "short": (F32, ["--model_alias", SERVED_NAME, "--n_ctx", "128"]),
        },
    )
    return LlamaCppServers(
        default=servers["default"].url,
        default_model=str(F32),
        faithful=servers["faithful"].url,
        f16=servers["f16"].url,
        key=key,
        nosep=servers["nosep"].url,
        cls=servers["cls"].url,
        short=servers["short"].url,
    )


# -- a quantized file (issue 31): its own server, started once when a test asks for it --------------------------
Q4_0 = 2  # llama.h's LLAMA_FTYPE_MOSTLY_Q4_0 (7: Q8_0, 15: Q4_K_M)
_QUANTIZE = (
    "import ctypes, sys\n"
    "from llama_cpp import llama_cpp as C\n"
    "p = C.llama_model_quantize_default_params()\n"
    "p.ftype, p.nthread = int(sys.argv[3]), 1\n"
    "sys.exit(C.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))\n"
)


def quantized(src: Path, dest: Path, ftype: int) -> Path:
    """``src`` quantized to ``ftype`` by llama.cpp's own quantizer (``llama_model_quantize``, what ``llama-quantize``
    runs), through the venv's llama-cpp-python: under a second for this model."""
    subprocess.run(
        [str(VENV / "bin" / "python"), "-c", _QUANTIZE, str(src), str(dest), str(ftype)],
        check=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    return dest


@pytest.fixture(scope="session")
def llamacpp_q4_0(llamacpp_launcher, tmp_path_factory) -> str:
    """The URL of a faithful server (contract length, served as ``all-MiniLM-L6-v2``) of the f32 file quantized
    to q4_0."""
    if not F16.exists():
        llamacpp_launcher("precision", {})  # skips (or fails under CI) with the install command
    q4 = quantized(F32, tmp_path_factory.mktemp("llamacpp-q4_0") / "minilm-q4_0.gguf", Q4_0)
    return llamacpp_launcher("precision", {"q4_0": (q4, at_contract_length())})["q4_0"].url
