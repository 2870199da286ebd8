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
- ``short``: the f32 file with ``--n_ctx 128`` (below the contract's 256);
- ``odd``: the f32 file with ``--n_ctx 200``: a cap no fixed list of lengths holds (issue 40's length ladder).

``llamacpp_decoders`` (below, a second launcher call, only for test_llamacpp_decoder.py) serves a tiny Qwen3 decoder
converted to GGUF in the session: faithful, without its EOS, and with mean pooling.
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
    odd: str


def at_contract_length(*extra: str) -> list[str]:
    n = str(CONTRACT_MAX_LENGTH)
    return ["--model_alias", SERVED_NAME, "--n_ctx", n, "--n_batch", n, "--n_ubatch", n, *extra]


def with_metadata(src: Path, dest: Path, key: str, value: bool | int) -> Path:
    """A copy of ``src`` with one metadata value changed in place by the sdist's gguf-py (gguf_set_metadata.py,
    in the llama.cpp venv), read back to prove it changed. ``tokenizer.ggml.add_eos_token`` false: the closing
    token is not to be added (the converter writes add_eos_token true and add_sep_token false for this BERT:
    [SEP] is its EOS); ``bert.pooling_type`` 2: CLS pooling. The script parses a BOOL value with
    ``numpy.bool_(text)``, so every non-empty text (``0``, ``false``) means true: false is the empty text."""
    import shutil

    shutil.copyfile(src, dest)
    script = CONVERTER / "gguf-py" / "gguf" / "scripts" / "gguf_set_metadata.py"
    text = ("1" if value else "") if isinstance(value, bool) else str(value)
    subprocess.run(
        [str(VENV / "bin" / "python"), str(script), "--force", str(dest), key, text],
        check=True,
        capture_output=True,
        env={"PYTHONPATH": str(CONVERTER / "gguf-py"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    got = gguf_metadata(dest)[key]
    assert got == value and type(got) is type(value), f"{dest}: {key} is {got!r} after setting {value!r}"
    return dest


def gguf_metadata(path: Path) -> dict[str, object]:
    """The scalar metadata of a GGUF file (arrays left out), read by the sdist's gguf_dump.py."""
    import json

    script = CONVERTER / "gguf-py" / "gguf" / "scripts" / "gguf_dump.py"
    dump = subprocess.run(
        [str(VENV / "bin" / "python"), str(script), "--json", "--no-tensors", str(path)],
        check=True,
        capture_output=True,
        env={"PYTHONPATH": str(CONVERTER / "gguf-py"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    fields = json.loads(dump.stdout)["metadata"]
    return {key: field["value"] for key, field in fields.items() if "value" in field}


@pytest.fixture(scope="session")
def llamacpp_servers(llamacpp_launcher, tmp_path_factory) -> LlamaCppServers:
    key = "sk-llamacpp-" + secrets.token_hex(12)
    if not F16.exists():
        llamacpp_launcher("ci", {})  # skips (or fails under CI) with the install command
    variants = tmp_path_factory.mktemp("llamacpp-gguf")
    nosep = with_metadata(F32, variants / "minilm-f32-nosep.gguf", "tokenizer.ggml.add_eos_token", False)
    cls = with_metadata(F32, variants / "minilm-f32-cls.gguf", "bert.pooling_type", 2)
    servers = llamacpp_launcher(
        "ci",
        {
            "default": (F32, []),
            "faithful": (F32, at_contract_length()),
            "f16": (F16, at_contract_length("--api_key", key)),
            "nosep": (nosep, at_contract_length()),
            "cls": (cls, at_contract_length()),
            "short": (F32, ["--model_alias", SERVED_NAME, "--n_ctx", "128"]),
            "odd": (F32, ["--model_alias", SERVED_NAME, "--n_ctx", "200"]),
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
        odd=servers["odd"].url,
    )


# -- a decoder (issue 30's tiny Qwen3) converted to GGUF: the closing-token loss BPE vocabularies do show ----------
DECODER_NAME = "tiny-qwen3"
CONVERT_BPE = Path(__file__).resolve().parent / "convert_bpe.py"


@dataclass(frozen=True)
class LlamaCppDecoders:
    """The tiny Qwen3 decoder of ``evalsuite.testing.tiny_families`` (byte-level BPE whose post-processor appends
    EOS, last-token pooling, max_seq_length 128) converted to an f32 GGUF by the sdist's converter (through
    ``convert_bpe.py``, which names its pre-tokenizer), served by llama-cpp-python at the contract's length:

    - ``faithful``: the file as converted (``qwen3.pooling_type`` 3, ``tokenizer.ggml.add_eos_token`` true);
    - ``noeos``: a copy whose ``tokenizer.ggml.add_eos_token`` is false (what Qwen3-Embedding's conversion lost);
    - ``mean``: a copy whose ``qwen3.pooling_type`` is 1 (mean).
    """

    faithful: str
    noeos: str
    mean: str
    model_dir: Path  # the sentence-transformers directory: the canary's reference
    gguf: Path  # the converted file


def convert_bpe(model_dir: Path, out: Path) -> Path:
    """``model_dir`` converted to an f32 GGUF by the sdist's convert_hf_to_gguf.py (see convert_bpe.py)."""
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    argv = [str(CONVERT_BPE), str(CONVERTER), str(model_dir), "--outtype", "f32", "--outfile", str(out)]
    done = subprocess.run(
        [str(VENV / "bin" / "python"), *argv], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0 and out.exists(), done.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def llamacpp_decoders(llamacpp_launcher, tmp_path_factory) -> LlamaCppDecoders:
    from evalsuite.testing.tiny_families import MAX_LENGTH, write_family

    if not F16.exists():
        llamacpp_launcher("decoder", {})  # skips (or fails under CI) with the install command
    root = tmp_path_factory.mktemp("llamacpp-decoder")
    model_dir = write_family("qwen3", root / "qwen3")
    gguf = convert_bpe(model_dir, root / "qwen3-f32.gguf")
    noeos = with_metadata(gguf, root / "qwen3-f32-noeos.gguf", "tokenizer.ggml.add_eos_token", False)
    mean = with_metadata(gguf, root / "qwen3-f32-mean.gguf", "qwen3.pooling_type", 1)
    n = str(MAX_LENGTH)
    args = ["--model_alias", DECODER_NAME, "--n_ctx", n, "--n_batch", n, "--n_ubatch", n]
    servers = llamacpp_launcher("decoder", {"faithful": (gguf, args), "noeos": (noeos, args), "mean": (mean, args)})
    return LlamaCppDecoders(
        faithful=servers["faithful"].url,
        noeos=servers["noeos"].url,
        mean=servers["mean"].url,
        model_dir=model_dir,
        gguf=gguf,
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
