"""Token vectors from a model's last hidden states: the local reference of the token-level contract.

Texts (prefix applied by the contract) are tokenized once, batched by token length, and each text's
rows are cut to its real tokens, filtered by the special-token policy, projected and normalized.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.errors import ModelError, SpecError
from ..model import ModelInfo
from .late_contract import LateContract


def build_late_contract(
    info: ModelInfo,
    *,
    projection: str | None = None,
    special_tokens: str = "drop",
    normalize: bool = True,
    max_length: int | None = None,
    dtype: str = "float32",
    storage_dtype: str = "float16",
    query_prefix: str | None = None,
    doc_prefix: str | None = None,
) -> LateContract:
    dim = info.hidden_size
    if projection is not None:
        dim = int(_projection_weight(info, projection)[0].shape[0])
    max_length = max_length or info.default_max_length
    if max_length > info.max_positions:
        raise SpecError(
            f"late-interaction max_length {max_length} exceeds what the model supports ({info.max_positions} tokens)"
        )
    return LateContract(
        model=info.name,
        model_revision=info.revision,
        tokenizer_revision=info.tokenizer_revision,
        dim=dim,
        projection=projection,
        special_tokens=special_tokens,
        normalize=normalize,
        query_prefix=info.prompts.get("query", "") if query_prefix is None else query_prefix,
        doc_prefix=doc_prefix or "",
        max_length=max_length,
        dtype=dtype,
        storage_dtype=storage_dtype,
    )


def _projection_weight(info: ModelInfo, name: str) -> tuple[Any, Any]:
    import torch

    path = (info.root / name).resolve()
    if info.root.resolve() not in path.parents or not path.is_file():
        raise ModelError(f"{info.root}: projection file {name!r} not found in the model directory")
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # a corrupt or foreign file: say which
        raise ModelError(f"{path}: cannot read the projection ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or "weight" not in state or state["weight"].ndim != 2:
        raise ModelError(f"{path}: expected a state dict with a 2-D 'weight' [dim, hidden] (and optional 'bias')")
    if state["weight"].shape[1] != info.hidden_size:
        raise ModelError(
            f"{path}: the projection takes {state['weight'].shape[1]} inputs, the model's hidden size is "
            f"{info.hidden_size}"
        )
    return state["weight"].float(), state.get("bias")


class TokenEncoder:
    """Per-token vectors under one :class:`LateContract`."""

    def __init__(
        self,
        info: ModelInfo,
        contract: LateContract,
        *,
        device: str = "auto",
        batch_size: int = 32,
        max_batch_tokens: int = 16384,
    ) -> None:
        import torch
        import transformers
        from transformers import AutoModel, AutoTokenizer

        from .local import pick_device

        if contract.model_revision != info.revision:
            raise ModelError(
                f"{info.root}: the contract pins revision {contract.model_revision[:16]}, the directory "
                f"is {info.revision[:16]}"
            )
        self.info, self.contract = info, contract
        self.device = pick_device(device)
        self.batch_size, self.max_batch_tokens = batch_size, max_batch_tokens
        transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(info.tokenizer_path), local_files_only=True)
            self.model = AutoModel.from_pretrained(
                str(info.path), local_files_only=True, dtype=getattr(torch, contract.dtype)
            )
        except (OSError, ValueError) as exc:
            raise ModelError(f"{info.path}: cannot load the model or tokenizer offline: {exc}") from exc
        self.model.eval().to(self.device)
        self.projection = None
        if contract.projection is not None:
            w, b = _projection_weight(info, contract.projection)
            self.projection = (w.to(self.device), None if b is None else b.float().to(self.device))
        self.special_ids = set(self.tokenizer.all_special_ids)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self.tokens = 0

    def keep_mask(self, ids: list[int]) -> np.ndarray:
        policy = self.contract.special_tokens
        mask = np.ones(len(ids), dtype=bool)
        if policy == "keep":
            return mask
        for i, t in enumerate(ids):
            if t in self.special_ids and not (policy == "cls" and i == 0):
                mask[i] = False
        return mask

    def encode(self, texts: Sequence[str], role: str = "document") -> list[np.ndarray]:
        """One float32 matrix [kept tokens, dim] per text, in input order."""
        import torch

        from .batches import length_batches

        prefix = self.contract.prefix(role)
        ids = self.tokenizer(
            [prefix + t for t in texts],
            truncation=True,
            max_length=self.contract.max_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        lengths = np.array([len(r) for r in ids], dtype=np.int64)
        out: list[np.ndarray] = [np.zeros((0, self.contract.dim), dtype=np.float32)] * len(texts)
        with torch.inference_mode():
            for idx in length_batches(lengths, self.batch_size, self.max_batch_tokens) if len(texts) else []:
                width = int(lengths[idx].max())
                arr = np.full((len(idx), width), self.pad_id, dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for row, i in enumerate(idx):
                    arr[row, : lengths[i]] = ids[i]
                    mask[row, : lengths[i]] = 1
                h = self.model(
                    input_ids=torch.from_numpy(arr).to(self.device),
                    attention_mask=torch.from_numpy(mask).to(self.device),
                ).last_hidden_state.float()
                if self.projection is not None:
                    w, b = self.projection
                    h = h @ w.T + (b if b is not None else 0)
                if self.contract.normalize:
                    h = torch.nn.functional.normalize(h, dim=-1)
                h_np = h.cpu().numpy()
                for row, i in enumerate(idx):
                    keep = self.keep_mask(ids[i])
                    out[i] = np.ascontiguousarray(h_np[row, : lengths[i]][keep], dtype=np.float32)
        self.tokens += int(sum(len(m) for m in out))
        return out
