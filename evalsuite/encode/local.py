"""The local reference encoder: transformers + torch, several poolings from one forward pass.

Texts are tokenized once, sorted by token length and batched under a token budget, so padding
stays small. Every requested pooling is computed from each batch's hidden states, which are
then dropped: hidden states of a whole corpus are never held.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..base.errors import ModelError, SpecError, TruncationError
from ..model import ModelInfo
from .base import EncodedRows, EncodeStats, StreamingEncoder
from .batches import length_batches
from .settings import EncoderSettings

_TORCH_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}
TOKENIZE_TEXTS = 4096  # texts per tokenizer call, at most
TOKENIZE_CHARS = 4 * 2**20  # characters per tokenizer call, at most (a single longer text goes alone)


def tokenize_groups(
    lengths: Sequence[int], max_texts: int = TOKENIZE_TEXTS, max_chars: int = TOKENIZE_CHARS
) -> list[range]:
    """Consecutive ranges of texts (by their lengths in characters) for one tokenizer call each: at most
    ``max_texts`` texts and ``max_chars`` characters (a longer text alone). A fast tokenizer tokenizes a text
    whole before it truncates and keeps the cut tokens on the side, so a call's memory follows its characters,
    not its texts: measured ~33 MB per MiB of text (tiny BERT's WordPiece); a run over 2,000 documents of
    15,000 words (158 MiB, one call) was at 5.6 GB. Under the budget a call stays near 130 MB."""
    out: list[range] = []
    start, chars = 0, 0
    for i, n in enumerate(lengths):
        if i > start and (i - start >= max_texts or chars + n > max_chars):
            out.append(range(start, i))
            start, chars = i, 0
        chars += n
    if start < len(lengths):
        out.append(range(start, len(lengths)))
    return out


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise SpecError("--device cuda was asked for but torch sees no CUDA device; use --device cpu or auto")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise SpecError(f"--device {device!r} is not valid; choose auto, cpu or cuda")
    return device


def load_pretrained(
    info: ModelInfo, auto_class: Any, torch_dtype: str, *, trust_remote_code: bool, what: str
) -> tuple[Any, Any]:
    """``(tokenizer, model)`` of a pinned directory, offline, in ``torch_dtype`` (a torch attribute name), with
    ``auto_class`` (``AutoModel``, ``AutoModelForSequenceClassification``); ``what`` names it in errors.
    Repository code runs only with ``trust_remote_code``. ModelError when the files cannot be loaded."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    if info.needs_remote_code and not trust_remote_code:
        raise ModelError(
            f"{info.root}: this {what} needs custom code (config.json has auto_map); evalsuite does not run "
            "repository code unless you pass --trust-remote-code after reviewing it"
        )
    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            str(info.tokenizer_path), local_files_only=True, trust_remote_code=trust_remote_code
        )
        model = auto_class.from_pretrained(
            str(info.path),
            local_files_only=True,
            dtype=getattr(torch, torch_dtype),
            trust_remote_code=trust_remote_code,
        )
    except (OSError, ValueError) as exc:
        raise ModelError(f"{info.path}: cannot load the {what} or its tokenizer offline: {exc}") from exc
    return tokenizer, model


def progress_enabled() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


class LocalEncoder(StreamingEncoder):
    """Reference encoder for one (model revision, dtype, max length, truncation policy)."""

    def __init__(
        self,
        info: ModelInfo,
        *,
        dtype: str = "float32",
        device: str = "auto",
        max_length: int | None = None,
        truncation: str = "truncate",
        batch_size: int = 64,
        max_batch_tokens: int = 16384,
        trust_remote_code: bool = False,
        progress: bool | None = None,
    ) -> None:
        from transformers import AutoModel

        if dtype not in _TORCH_DTYPES:
            raise SpecError(f"dtype {dtype!r} is not valid; choose float32, bfloat16 or float16")
        self.info = info
        self.dtype = dtype
        self.device = pick_device(device)
        self.max_length = max_length or info.default_max_length
        self.truncation = truncation
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.progress = progress_enabled() if progress is None else progress
        self.stats_by_role: dict[str, EncodeStats] = {}
        self.tokenizer, self.model = load_pretrained(
            info, AutoModel, _TORCH_DTYPES[dtype], trust_remote_code=trust_remote_code, what="model"
        )
        self.model.eval().to(self.device)
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = self.tokenizer.eos_token_id or 0
        self.use_token_types = "token_type_ids" in self.tokenizer.model_input_names
        self.heads: Any = None
        if info.dense:
            from .heads import DenseStack

            self.heads = DenseStack(info.dense, self.device)
        self.prompt_lengths = {} if info.include_prompt else self._prompt_lengths(info.prompts.values())

    @classmethod
    def from_settings(cls, info: ModelInfo, settings: EncoderSettings, *, progress: bool | None = None) -> LocalEncoder:
        """The reference encoder a run's :class:`~evalsuite.encode.settings.EncoderSettings` describe (the one
        place they become keyword arguments)."""
        return cls(
            info,
            dtype=settings.dtype,
            device=settings.device,
            max_length=settings.max_length,
            truncation=settings.truncation,
            batch_size=settings.batch_size,
            trust_remote_code=settings.trust_remote_code,
            progress=progress,
        )

    def _prompt_lengths(self, prompts: Iterable[str]) -> dict[str, int]:
        """Tokens of each declared prompt that ``include_prompt: false`` leaves out of pooling, counted as
        sentence-transformers counts them (the prompt tokenized alone, less a trailing special token)."""
        special = set(self.tokenizer.all_special_ids)
        out: dict[str, int] = {}
        for prompt in dict.fromkeys(p for p in prompts if p):
            ids = self.tokenizer(prompt)["input_ids"]
            out[prompt] = len(ids) - (1 if ids and ids[-1] in special else 0)
        return out

    def _prompt_tokens(self, texts: Sequence[str]) -> np.ndarray:
        """Per text, the tokens of the longest declared prompt it starts with (0 when include_prompt is true):
        a function of the rendered text and the model alone, so cached vectors stay valid."""
        out = np.zeros(len(texts), dtype=np.int64)
        if self.prompt_lengths:
            by_length = sorted(self.prompt_lengths.items(), key=lambda kv: -len(kv[0]))
            for i, text in enumerate(texts):
                out[i] = next((n for p, n in by_length if text.startswith(p)), 0)
        return out

    def release(self) -> None:
        """Drop the model and tokenizer (counters stay); the encoder cannot encode afterwards."""
        self.model = None
        self.tokenizer = None

    # -- tokenization -------------------------------------------------------------------------
    def _tokenize(self, texts: list[str], ids: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The token ids of every text, truncated to max_length, as one int32 array with each text's start
        (text ``i`` is ``flat[offsets[i] : offsets[i + 1]]``); and which texts were truncated. One flat array
        holds 4 bytes a token where a list of Python ints per text held ~1 KB a short document (measured:
        40 MB for 40,000 documents of ~32 tokens), the in-memory run's largest cost per document."""
        probe = self.max_length + 1
        parts: list[np.ndarray] = []
        lengths = np.zeros(len(texts), dtype=np.int64)
        truncated = np.zeros(len(texts), dtype=bool)
        for group in tokenize_groups([len(t) for t in texts]):
            start, chunk = group.start, texts[group.start : group.stop]
            enc = self.tokenizer(
                chunk,
                truncation=True,
                max_length=probe,
                padding=False,
                return_attention_mask=False,
                return_token_type_ids=False,
            )["input_ids"]
            long = [i for i, row in enumerate(enc) if len(row) > self.max_length]
            if long and self.truncation == "reject":
                i = long[0]
                name = ids[start + i] if ids is not None else f"#{start + i}"
                full = len(self.tokenizer(chunk[i], truncation=False)["input_ids"])
                raise TruncationError(
                    f"text {name} has {full} tokens, over max_length {self.max_length} and the "
                    f"truncation policy is 'reject' ({len(long)} such text(s) in this batch); "
                    "raise --max-length or use --truncation truncate"
                )
            if long:
                fixed = self.tokenizer(
                    [chunk[i] for i in long],
                    truncation=True,
                    max_length=self.max_length,
                    padding=False,
                    return_attention_mask=False,
                    return_token_type_ids=False,
                )["input_ids"]
                for i, row in zip(long, fixed, strict=True):
                    enc[i] = row
                truncated[[start + i for i in long]] = True
            lengths[group.start : group.stop] = [len(row) for row in enc]
            count = int(lengths[group.start : group.stop].sum())
            parts.append(np.fromiter(itertools.chain.from_iterable(enc), dtype=np.int32, count=count))
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)), offsets, truncated

    def _batches(self, lengths: np.ndarray) -> list[np.ndarray]:
        return length_batches(lengths, self.batch_size, self.max_batch_tokens)

    def _padded_forward(
        self, flat: np.ndarray, offsets: np.ndarray, idx: np.ndarray, min_width: int = 0
    ) -> tuple[Any, Any, int]:
        """One forward pass over the tokenized texts ``idx`` (rows of ``flat``/``offsets``), right-padded with the
        pad token to the longest of them (at least ``min_width``): (last hidden states as float32, the attention
        mask, the padded width). Call it under ``torch.inference_mode()``."""
        import torch

        lengths = np.diff(offsets)
        width = max(int(lengths[idx].max()), min_width)
        ids_arr = np.full((len(idx), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for row, i in enumerate(idx):
            ids_arr[row, : lengths[i]] = flat[offsets[i] : offsets[i + 1]]
            mask[row, : lengths[i]] = 1
        inputs = {
            "input_ids": torch.from_numpy(ids_arr).to(self.device),
            "attention_mask": torch.from_numpy(mask).to(self.device),
        }
        if self.use_token_types:
            inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
        return self.model(**inputs).last_hidden_state.float(), inputs["attention_mask"], width

    # -- encoding -----------------------------------------------------------------------------
    def encode_stream(
        self,
        texts: Sequence[str],
        *,
        poolings: Sequence[str] = ("mean",),
        ids: Sequence[str] | None = None,
        role: str = "document",
    ) -> Iterator[EncodedRows]:
        """One :class:`EncodedRows` per batch as it is computed (rows index ``texts``); the role's counters
        grow batch by batch, so an interrupted stream still counts what it finished."""
        import torch

        from .pooling import exclude_prompt, pool

        t0 = time.perf_counter()
        poolings = list(dict.fromkeys(poolings))
        n = len(texts)
        stats = self.stats_by_role.setdefault(role, EncodeStats())
        if n == 0:
            return
        flat, offsets, truncated = self._tokenize(list(texts), ids)
        lengths = np.diff(offsets)
        prompt_tokens = self._prompt_tokens(texts)
        stats.texts += n
        stats.tokens += int(lengths.sum())
        stats.truncated += int(truncated.sum())
        bar: Any = None
        if self.progress:
            from tqdm import tqdm

            bar = tqdm(total=n, desc=f"encode {role}s", unit="text", leave=False)
        try:
            for idx in self._batches(lengths):
                with torch.inference_mode():
                    h, attention, width = self._padded_forward(flat, offsets, idx)
                    pool_mask = None
                    if self.prompt_lengths:
                        pool_mask = exclude_prompt(attention, torch.from_numpy(prompt_tokens[idx]))
                    pooled = {p: pool(h, attention, p, pool_mask) for p in poolings}
                    if self.heads is not None:
                        pooled = {p: self.heads(v) for p, v in pooled.items()}
                    vectors = {p: v.cpu().numpy() for p, v in pooled.items()}
                stats.padded_tokens += len(idx) * width
                stats.batches += 1
                stats.seconds += time.perf_counter() - t0
                t0 = time.perf_counter()
                if bar is not None:
                    bar.update(len(idx))
                yield EncodedRows(idx, vectors, lengths[idx].astype(np.int32), truncated[idx])
        finally:
            stats.seconds += time.perf_counter() - t0
            if bar is not None:
                bar.close()
