"""Encoders: the only place that runs a model (local) or calls HTTP (endpoint)."""

from .base import EncodeStats, Encoder

__all__ = ["EncodeStats", "Encoder"]
