"""The learned sparse reference: one weight per vocabulary token for each text, as the model family declares
(:mod:`evalsuite.model.sparse_layout`: SPLADE's MLM head, BGE-M3's ``sparse_linear``).

A text's vector is a pair of arrays (token ids ascending, their weights, all > 0), at most ``top_k`` of them (the
largest; 0 keeps all). Texts go through the model in batches sorted by length (little padding); torch and
transformers are imported when the model loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import ModelError
from ..model import ModelInfo
from ..model.sparse_layout import SparseHead, sparse_head
from .local import load_pretrained, pick_device
from .sparse_cache import SparseVector as SparseVector  # (int64 token ids ascending, float32 weights > 0)

if TYPE_CHECKING:
    from .sparse_cache import SparseKey


def prune(ids: np.ndarray, weights: np.ndarray, top_k: int) -> SparseVector:
    """The ``top_k`` largest weights (ties: the lower token id), ids ascending; 0 keeps all."""
    keep = weights > 0
    ids, weights = ids[keep], weights[keep]
    if top_k and len(ids) > top_k:
        order = np.lexsort((ids, -weights))[:top_k]
        ids, weights = ids[order], weights[order]
    order = np.argsort(ids, kind="stable")
    return ids[order].astype(np.int64), weights[order].astype(np.float32)


@dataclass
class SparseEncoder:
    """The model's sparse head over texts already rendered for their role (prefixes applied)."""

    info: ModelInfo
    head: SparseHead
    max_length: int
    device: str = "cpu"
    batch_size: int = 32
    trust_remote_code: bool = False
    _loaded: tuple[Any, Any, Any] | None = None

    @classmethod
    def of(
        cls, info: ModelInfo, *, max_length: int, device: str, batch_size: int, trust_remote_code: bool
    ) -> SparseEncoder:
        return cls(info, sparse_head(info.path, info.hidden_size), max_length, device, batch_size, trust_remote_code)

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            import torch
            from transformers import AutoModel, AutoModelForMaskedLM

            auto = AutoModelForMaskedLM if self.head.family == "splade" else AutoModel
            tokenizer, model = load_pretrained(
                self.info, auto, "float32", trust_remote_code=self.trust_remote_code, what="sparse model"
            )
            if len(tokenizer) > self.head.vocab_size:
                raise ModelError(
                    f"{self.info.path}: the tokenizer has {len(tokenizer)} tokens but the model's vocabulary "
                    f"{self.head.vocab_size}: the sparse weights would index past it; the tokenizer belongs to "
                    "another model"
                )
            device = pick_device(self.device)
            linear = None
            if self.head.linear is not None:
                state = torch.load(self.head.linear, map_location="cpu", weights_only=True)
                linear = torch.nn.Linear(self.info.hidden_size, 1)
                linear.load_state_dict(state)
                linear = linear.to(device).eval()
            self._loaded = (tokenizer, model.to(device).eval(), linear)
        return self._loaded

    def encode(self, texts: Sequence[str], top_k: int = 0) -> list[SparseVector]:
        """Each text's sparse vector (``top_k``: after the model's own ``max_active_dims``, a further cut)."""
        import torch

        tokenizer, model, linear = self._load()
        cut = self.cut(top_k)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[SparseVector | None] = [None] * len(texts)
        special = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                batch = {k: v.to(model.device) for k, v in batch.items()}
                if self.head.family == "splade":
                    vectors = self._splade(model(**batch).logits, batch["attention_mask"])
                    for row, i in enumerate(idx):
                        v = vectors[row]
                        nz = torch.nonzero(v > 0).flatten()
                        out[i] = prune(nz.cpu().numpy(), v[nz].float().cpu().numpy(), cut)
                else:
                    hidden = model(**batch).last_hidden_state
                    weights = torch.relu(linear(hidden)).squeeze(-1)  # (batch, tokens)
                    for row, i in enumerate(idx):
                        out[i] = prune(
                            *_max_per_token(
                                batch["input_ids"][row], weights[row], batch["attention_mask"][row], special
                            ),
                            cut,
                        )
        return [v for v in out if v is not None]

    def cut(self, top_k: int) -> int:
        """The pruning applied for ``top_k``: the smaller of it and the model's own ``max_active_dims`` (0: none)."""
        caps = [x for x in (top_k, self.head.max_active_dims or 0) if x]
        return min(caps) if caps else 0

    def cache_key(self, texts: Sequence[str], top_k: int) -> SparseKey:
        """What names ``encode(texts, top_k)`` in the sparse vector cache (:mod:`evalsuite.encode.sparse_cache`)."""
        from .sparse_cache import SparseKey

        return SparseKey(
            model_revision=self.info.revision,
            tokenizer_revision=self.info.tokenizer_revision,
            head=f"{self.head.family}:{self.head.describe()}:vocab={self.head.vocab_size}",
            max_length=self.max_length,
            top_k=self.cut(top_k),
            texts=SparseKey.texts_digest(texts),
        )

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids as the model reads them, with a leading BOS and a trailing EOS cut (what a server
        that answers one weight per token without them, e.g. vLLM's BGE-M3 ``token_classify``, weighs)."""
        tokenizer = self._load()[0]
        bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
        out = []
        for ids in tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]:
            ids = list(ids)
            if ids and bos is not None and ids[0] == bos:
                ids = ids[1:]
            if ids and eos is not None and ids[-1] == eos:
                ids = ids[:-1]
            out.append([int(i) for i in ids])
        return out

    def tokenizer(self) -> Any:
        """The pinned tokenizer (the model loads with it)."""
        return self._load()[0]

    def special_ids(self) -> set[int]:
        return {int(i) for i in self._load()[0].all_special_ids}

    def token_scores(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """BGE-M3 only: each text's token ids (the special tokens included) and ``sparse_linear``'s score of each
        token before the ReLU: what the diagnosis of a served sparse vector builds its alternatives from."""
        import torch

        tokenizer, model, linear = self._load()
        if linear is None:
            raise ModelError(f"{self.info.path}: per-token scores are BGE-M3's (sparse_linear.pt); this is SPLADE")
        out = []
        with torch.inference_mode():
            for text in texts:
                batch = tokenizer([text], truncation=True, max_length=self.max_length, return_tensors="pt")
                batch = {k: v.to(model.device) for k, v in batch.items()}
                raw = linear(model(**batch).last_hidden_state).squeeze(-1)[0]
                out.append((batch["input_ids"][0].cpu().numpy().astype(np.int64), raw.float().cpu().numpy()))
        return out

    def _splade(self, logits: Any, mask: Any) -> Any:
        import torch

        x = torch.log1p(torch.relu(logits * mask.unsqueeze(-1).to(logits.dtype)))
        if self.head.activation == "log1p_relu":
            x = torch.log1p(x)
        return x.max(dim=1).values if self.head.pooling == "max" else x.sum(dim=1)


def _max_per_token(input_ids: Any, weights: Any, mask: Any, special: Any) -> tuple[np.ndarray, np.ndarray]:
    """BGE-M3's lexical weights of one text: per token id the largest weight over its occurrences, the special
    tokens and padding left out."""
    import torch

    keep = (mask > 0) & ~torch.isin(input_ids, special.to(input_ids.device))
    ids, w = input_ids[keep].cpu().numpy(), weights[keep].float().cpu().numpy()
    if not len(ids):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    unique, inverse = np.unique(ids, return_inverse=True)
    best = np.zeros(len(unique), dtype=np.float32)
    np.maximum.at(best, inverse, w)
    return unique, best
