"""The Dense heads a sentence-transformers model applies after pooling, loaded from their directories
(``in_features``/``out_features``/``bias``/``activation_function``/``use_residual`` of ``config.json``; the
weights of ``model.safetensors`` or ``pytorch_model.bin``) and run on pooled vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base.errors import ModelError
from ..model.st_layout import DenseHead

if TYPE_CHECKING:
    import torch


class DenseStack:
    """The heads of one model, in order, on ``device`` (float32)."""

    def __init__(self, heads: Sequence[DenseHead], device: str) -> None:
        self.layers: list[tuple[Any, Any, Any, DenseHead]] = [self._load(h, device) for h in heads]

    @staticmethod
    def _load(head: DenseHead, device: str) -> tuple[Any, Any, Any, DenseHead]:
        import torch

        if head.weights.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(head.weights))
        else:
            state = torch.load(str(head.weights), map_location="cpu", weights_only=True)
        try:
            weight = state["linear.weight"].float().to(device)
            bias = state["linear.bias"].float().to(device) if head.bias else None
            residual = (
                state["residual.weight"].float().to(device)
                if head.use_residual and "residual.weight" in state
                else None
            )
        except KeyError as exc:
            raise ModelError(
                f"{head.weights}: no {exc.args[0]!r} tensor (a sentence-transformers Dense saves linear.*)"
            ) from None
        if tuple(weight.shape) != (head.out_features, head.in_features):
            raise ModelError(
                f"{head.weights}: linear.weight has shape {tuple(weight.shape)}, config.json says "
                f"({head.out_features}, {head.in_features})"
            )
        return weight, bias, residual, head

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        import torch

        for weight, bias, residual, head in self.layers:
            out = _activation(head.activation, torch.nn.functional.linear(x, weight, bias))
            if head.use_residual:
                out = out + (x if residual is None else torch.nn.functional.linear(x, residual))
            x = out
        return x


def _activation(name: str, x: torch.Tensor) -> torch.Tensor:
    import torch

    fn = {
        "Identity": lambda t: t,
        "Tanh": torch.tanh,
        "ReLU": torch.relu,
        "GELU": torch.nn.functional.gelu,
        "Sigmoid": torch.sigmoid,
        "SiLU": torch.nn.functional.silu,
    }[name]
    out: torch.Tensor = fn(x)
    return out
