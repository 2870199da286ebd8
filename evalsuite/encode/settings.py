"""How the reference model encodes, as one value passed through every layer that builds an encoder.

The run builds it once (:func:`evalsuite.run.prepared.encoder_settings`, from the decided spec and the contract)
and hands it on unchanged: to :func:`evalsuite.encode.executors.build_encoder`, which picks the executor; to the
Ray executor, which sends it to every actor inside each :class:`~evalsuite.encode.ray_actor.BlockTask`; to
:meth:`evalsuite.encode.local.LocalEncoder.from_settings`, the one place it is unpacked into a model; and to the
embedding cache (:class:`~evalsuite.encode.cached.CachedEncoder`), whose key holds its forward-pass fields.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EncoderSettings:
    """The forward-pass key of a run (``dtype``, ``max_length``, ``truncation``), where the model runs
    (``device``: auto, cpu, cuda[:N]; ``endpoint`` for a served deployment behind the cache), its batch size and
    whether the model repository's own code may run. ``max_length`` None: the model's default."""

    dtype: str = "float32"
    device: str = "auto"
    max_length: int | None = None
    truncation: str = "truncate"
    batch_size: int = 64
    trust_remote_code: bool = False
