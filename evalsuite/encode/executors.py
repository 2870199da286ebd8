"""How a run encodes and searches: in this process (the default) or on a Ray cluster; in memory or chunked.

The spec says *what* is evaluated; an :class:`Execution` says *how*. The in-process executor needs
nothing beyond the model stack; ``executor="ray"`` imports Ray only when the first text is encoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from ..base.extras import require

if TYPE_CHECKING:
    from ..model import ModelInfo
    from .base import Encoder
    from .settings import EncoderSettings

EXECUTORS = ("in-process", "ray")
DEFAULT_CHUNK = 65_536
DEFAULT_BLOCK_ROWS = 262_144


@dataclass(frozen=True)
class Execution:
    """``chunk_size`` 0 keeps the corpus's vectors in memory; N encodes N documents at a time into a
    memory-mapped store under ``store_dir`` (a temporary directory when None) and searches it in blocks
    of ``block_rows``. ``ray_address`` None starts (or reuses) a local Ray; ``ray_actors`` models run at once;
    ``ray_ship_model`` sends the model's files to the actors, ``ray_model_path`` is where every node reads them
    (default: the driver's own path; :mod:`evalsuite.encode.ray_model`)."""

    executor: str = "in-process"
    ray_address: str | None = None
    ray_actors: int = 1
    ray_ship_model: bool = False
    ray_model_path: str | None = None
    chunk_size: int = 0
    block_rows: int = DEFAULT_BLOCK_ROWS
    store_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise SpecError(f"executor {self.executor!r} is not valid; choose one of {', '.join(EXECUTORS)}")
        if self.executor == "ray":
            require("ray", "--executor ray")
        if self.ray_address is not None and self.executor != "ray":
            raise SpecError("--ray-address is only used with --executor ray")
        if (self.ray_ship_model or self.ray_model_path) and self.executor != "ray":
            raise SpecError("--ray-ship-model and --ray-model-path are only used with --executor ray")
        if self.ray_ship_model and self.ray_model_path:
            raise SpecError("--ray-ship-model and --ray-model-path exclude each other: choose one")
        if self.ray_actors < 1 or self.chunk_size < 0 or self.block_rows < 1:
            raise SpecError(
                f"ray_actors ({self.ray_actors}) and block_rows ({self.block_rows}) must be >= 1 and "
                f"chunk_size ({self.chunk_size}) >= 0 (0: in memory)"
            )

    @property
    def blockwise(self) -> bool:
        return self.chunk_size > 0


def build_encoder(info: ModelInfo, execution: Execution, settings: EncoderSettings) -> Encoder:
    """The model encoder for ``execution`` with ``settings`` (the embedding cache wraps it when enabled)."""
    if execution.executor == "ray":
        from .ray_executor import RayEncoder

        return RayEncoder(
            info,
            settings,
            address=execution.ray_address,
            actors=execution.ray_actors,
            ship_model=execution.ray_ship_model,
            model_path=execution.ray_model_path,
        )
    from .local import LocalEncoder

    return LocalEncoder.from_settings(info, settings)
