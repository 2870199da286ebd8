"""Run llama.cpp's ``convert_hf_to_gguf.py`` on a byte-level BPE model whose pre-tokenizer it does not know by hash.

The converter names a BPE model's pre-tokenizer (``tokenizer.ggml.pre``) by hashing the token ids of a fixed text
(``TextModel.get_vocab_base_pre``), and refuses every tokenizer not in its table ("BPE pre-tokenizer was not
recognized"): a freshly trained tokenizer, like the tiny Qwen3's of ``evalsuite.testing.tiny_families``, is in no
table. This driver reads the tokenizer's own ``tokenizer.json`` instead: a bare byte-level pre-tokenizer (no
normalizer; ``ByteLevel`` with ``use_regex`` true and ``add_prefix_space`` false) splits with the GPT-2 regex,
which is the regex llama.cpp's ``"gpt-2"`` pre-tokenizer type uses (``LLAMA_VOCAB_PRE_TYPE_GPT2`` in
``src/llama-vocab.cpp``), so it converts under that name; any other tokenizer is refused, naming what it has. The
rest of the conversion is the converter's own (``tests/llamacpp/test_llamacpp_decoder.py`` checks that llama.cpp
then tokenizes texts to the reference tokenizer's ids).

Run with the llama.cpp venv's python (it imports the converter, torch and the converter's transformers)::

    .llamacpp-venv/bin/python tests/llamacpp/convert_bpe.py .llamacpp-venv/convert MODEL_DIR --outtype f32 \\
        --outfile OUT.gguf
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

GPT2_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}


def pre_tokenizer_name(model_dir: Path) -> str:
    """llama.cpp's name for the pre-tokenizer of ``model_dir/tokenizer.json``, or SystemExit naming why none."""
    tok = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    pre = tok.get("pre_tokenizer") or {}
    if tok.get("normalizer") is None and all(pre.get(k) == v for k, v in GPT2_BYTE_LEVEL.items()):
        return "gpt-2"
    raise SystemExit(
        f"{model_dir / 'tokenizer.json'}: pre_tokenizer {json.dumps(pre)} with normalizer "
        f"{json.dumps(tok.get('normalizer'))} is not a bare GPT-2 byte-level pre-tokenizer; this driver maps only "
        "that one (convert the model with convert_hf_to_gguf.py itself if its hash is known)"
    )


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    convert_dir, model_dir = Path(argv[0]).resolve(), Path(argv[1])
    name = pre_tokenizer_name(model_dir)
    sys.path[:0] = [str(convert_dir), str(convert_dir / "gguf-py")]
    from conversion.base import TextModel, logger

    def get_vocab_base_pre(self: object, tokenizer: object) -> str:
        logger.info(
            f"tokenizer.ggml.pre: {name!r} (from tokenizer.json's pre-tokenizer, by tests/llamacpp/convert_bpe.py)"
        )
        return name

    TextModel.get_vocab_base_pre = get_vocab_base_pre  # type: ignore[method-assign]
    script = convert_dir / "convert_hf_to_gguf.py"
    sys.argv = [str(script), str(model_dir), *argv[2:]]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
