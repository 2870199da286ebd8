"""The local reranker reference: transformers ``AutoModelForSequenceClassification`` + torch.

Pairs are tokenized once (as the contract renders them), sorted by token length and batched under
a token budget, so padding stays small; the logit of the one label goes through the contract's
activation. Scores come back in input order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..base.counters import Counters
from ..base.errors import ModelError, TruncationError
from ..encode.batches import length_batches
from ..model import ModelInfo
from .contract import RerankerContract, finite_or_error

_TORCH_DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class RerankStats(Counters):
    """Counters accumulated over a reranker's calls."""

    pairs: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    truncated: int = 0
    batches: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class ScoredPairs:
    """Per pair, in input order: its score (float64), its token count after truncation, whether it was cut."""

    scores: np.ndarray
    tokens: np.ndarray
    truncated: np.ndarray


class LocalReranker:
    """Reference scorer for one reranker contract (revision, template, max length, truncation, dtype)."""

    def __init__(
        self,
        info: ModelInfo,
        contract: RerankerContract,
        *,
        device: str = "auto",
        batch_size: int = 32,
        max_batch_tokens: int = 16384,
        trust_remote_code: bool = False,
    ) -> None:
        from transformers import AutoModelForSequenceClassification

        from ..encode.local import load_pretrained, pick_device

        if contract.model_revision != info.revision:
            raise ModelError(
                f"{info.root}: the reranker contract pins revision {contract.model_revision[:16]} but the "
                f"directory is {info.revision[:16]}"
            )
        self.info, self.contract = info, contract
        self.device = pick_device(device)
        self.batch_size, self.max_batch_tokens = batch_size, max_batch_tokens
        self.stats = RerankStats()
        self.tokenizer, self.model = load_pretrained(
            info,
            AutoModelForSequenceClassification,
            contract.dtype,
            trust_remote_code=trust_remote_code,
            what="reranker",
        )
        self.model.eval().to(self.device)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))

    def _encode(self, firsts: list[str], seconds: list[str | None], truncation: object) -> dict[str, list[list[int]]]:
        c = self.contract
        kw: dict[str, object] = {"padding": False, "return_attention_mask": False}
        if truncation:
            kw.update(truncation=truncation, max_length=c.max_length)
        if c.is_pair:
            return dict(self.tokenizer(firsts, [s or "" for s in seconds], **kw))
        return dict(self.tokenizer(firsts, **kw))

    def tokenize(
        self, pairs: Sequence[tuple[str, str]], ids: Sequence[str] | None = None
    ) -> tuple[list[list[int]], list[list[int]] | None, int]:
        """Token ids (and token type ids) per pair under the contract; and how many pairs were cut."""
        token_ids, types, cut = self._tokenize(pairs, ids)
        return token_ids, types, len(cut)

    def _tokenize(
        self, pairs: Sequence[tuple[str, str]], ids: Sequence[str] | None
    ) -> tuple[list[list[int]], list[list[int]] | None, list[int]]:
        c = self.contract
        rendered = [c.render(q, d) for q, d in pairs]
        firsts = [r[0] for r in rendered]
        seconds = [r[1] for r in rendered]
        full = self._encode(firsts, seconds, False)
        long = [i for i, row in enumerate(full["input_ids"]) if len(row) > c.max_length]
        if long and c.truncation == "reject":
            i = long[0]
            name = ids[i] if ids is not None else f"#{i}"
            raise TruncationError(
                f"pair {name} has {len(full['input_ids'][i])} tokens, over the reranker max_length "
                f"{c.max_length} and its truncation is 'reject' ({len(long)} such pair(s)); raise "
                "--reranker-max-length or use --reranker-truncation longest_first"
            )
        if long:
            cut = self._encode([firsts[i] for i in long], [seconds[i] for i in long], c.truncation)
            for key in full:
                for j, i in enumerate(long):
                    full[key][i] = cut[key][j]
        types = full.get("token_type_ids")
        return full["input_ids"], types, long

    def logits(self, pairs: Sequence[tuple[str, str]], ids: Sequence[str] | None = None) -> np.ndarray:
        """The raw logit of each pair (float64, input order), before any activation."""
        return self._forward(pairs, ids).scores

    def score_rows(self, pairs: Sequence[tuple[str, str]], ids: Sequence[str] | None = None) -> ScoredPairs:
        """Each pair's score after the contract's activation, with its token count and whether it was cut."""
        rows = self._forward(pairs, ids)
        return ScoredPairs(self.contract.activate(rows.scores), rows.tokens, rows.truncated)

    def _forward(self, pairs: Sequence[tuple[str, str]], ids: Sequence[str] | None) -> ScoredPairs:
        import torch

        t0 = time.perf_counter()
        n = len(pairs)
        out = np.zeros(n, dtype=np.float64)
        cut_mask = np.zeros(n, dtype=bool)
        if n == 0:
            return ScoredPairs(out, np.zeros(0, dtype=np.int32), cut_mask)
        token_ids, type_ids, cut = self._tokenize(pairs, ids)
        cut_mask[cut] = True
        lengths = np.fromiter((len(r) for r in token_ids), dtype=np.int64, count=n)
        self.stats.pairs += n
        self.stats.tokens += int(lengths.sum())
        self.stats.truncated += len(cut)
        with torch.inference_mode():
            for idx in length_batches(lengths, self.batch_size, self.max_batch_tokens):
                width = int(lengths[idx].max())
                ids_arr = np.full((len(idx), width), self.pad_id, dtype=np.int64)
                types = np.zeros((len(idx), width), dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for row, i in enumerate(idx):
                    ids_arr[row, : lengths[i]] = token_ids[i]
                    mask[row, : lengths[i]] = 1
                    if type_ids is not None:
                        types[row, : lengths[i]] = type_ids[i]
                inputs = {
                    "input_ids": torch.from_numpy(ids_arr).to(self.device),
                    "attention_mask": torch.from_numpy(mask).to(self.device),
                }
                if type_ids is not None:
                    inputs["token_type_ids"] = torch.from_numpy(types).to(self.device)
                logits = self.model(**inputs).logits.float()
                out[idx] = logits[:, 0].cpu().numpy().astype(np.float64)
                self.stats.padded_tokens += len(idx) * width
                self.stats.batches += 1
        self.stats.seconds += time.perf_counter() - t0
        finite_or_error(out, f"reranker {self.info.name}")
        return ScoredPairs(out, lengths.astype(np.int32), cut_mask)

    def score(self, pairs: Sequence[tuple[str, str]], ids: Sequence[str] | None = None) -> np.ndarray:
        """Each pair's score after the contract's activation (float64, input order)."""
        return self.score_rows(pairs, ids).scores
