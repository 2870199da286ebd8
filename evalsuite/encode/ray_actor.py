"""One Ray actor of the pool: the pinned model on its node, encoding blocks of texts for any role and contract.

The actor finds the model once (:func:`~evalsuite.encode.ray_model.locate`, in :meth:`EncodeActor.ready`) and
loads it on the first block that needs it, once per dtype for the actor's whole life: every role, every block,
every forward-pass key of a sweep (max length and truncation are set per block on the same weights). A block
comes back as plain numpy arrays with the counters, the seconds spent and the node that computed it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..model import ModelInfo
from .base import EncodeStats
from .ray_model import ModelSource, locate, node_identity
from .settings import EncoderSettings

STATS = ("texts", "tokens", "padded_tokens", "truncated", "batches")


@dataclass(frozen=True)
class BlockTask:
    """How to encode a block (picklable): one forward-pass key of the run, one role."""

    settings: EncoderSettings  # the run's, its max length resolved; each actor runs the model on its own device
    poolings: tuple[str, ...]
    role: str


class EncodeActor:
    """The model of one pool member (CPU, or the one GPU Ray gave it)."""

    def __init__(self, source: ModelSource, files: dict[str, bytes] | None, device: str) -> None:
        self.source, self.files, self.device = source, files, device
        self.info: ModelInfo | None = None
        self.encoders: dict[tuple[str, int, bool], Any] = {}
        self.node_id, self.address = node_identity()

    def ready(self) -> dict[str, object]:
        """Find and verify the model on this node (raises ExecutorError naming the node); where it runs."""
        t0 = time.perf_counter()
        self._model()
        return {"node_id": self.node_id, "address": self.address, "locate_seconds": time.perf_counter() - t0}

    def _model(self) -> ModelInfo:
        if self.info is None:
            self.info = locate(self.source, self.files)
            self.files = None  # written to this node's disk (shipped): the bytes are no longer needed
        return self.info

    def _encoder(self, task: BlockTask) -> tuple[Any, float]:
        from .local import LocalEncoder

        settings = task.settings
        key = (settings.dtype, settings.batch_size, settings.trust_remote_code)
        if key in self.encoders:
            return self.encoders[key], 0.0
        t0 = time.perf_counter()
        self.encoders[key] = LocalEncoder.from_settings(
            self._model(), replace(settings, device=self.device), progress=False
        )
        return self.encoders[key], time.perf_counter() - t0

    def encode(self, rows: np.ndarray, texts: list[str], task: BlockTask) -> dict[str, Any]:
        """``{"rows", "tokens", "truncated", "v:<pooling>"..., "stats", "seconds", "load_seconds", "node_id"}``."""
        encoder, load_seconds = self._encoder(task)
        encoder.max_length, encoder.truncation = task.settings.max_length, task.settings.truncation
        t0 = time.perf_counter()
        n = len(texts)
        before = encoder.stats_by_role.get(task.role, EncodeStats()).copy()
        vectors = {p: np.zeros((n, self.source.info.hidden_size), dtype=np.float32) for p in task.poolings}
        tokens = np.zeros(n, dtype=np.int32)
        truncated = np.zeros(n, dtype=bool)
        for part in encoder.encode_stream(texts, poolings=task.poolings, role=task.role):
            for p in task.poolings:
                vectors[p][part.rows] = part.vectors[p]
            tokens[part.rows] = part.tokens
            truncated[part.rows] = part.truncated
        delta = encoder.stats_by_role[task.role].minus(before)
        out: dict[str, Any] = {f"v:{p}": v for p, v in vectors.items()}
        out.update(
            rows=np.asarray(rows, dtype=np.int64),
            tokens=tokens,
            truncated=truncated,
            stats={name: int(getattr(delta, name)) for name in STATS},
            seconds=time.perf_counter() - t0,
            load_seconds=load_seconds,
            node_id=self.node_id,
        )
        return out
