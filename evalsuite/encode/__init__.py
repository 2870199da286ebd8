"""Encoders: the only place that runs a model (local) or calls HTTP (endpoint)."""

from .base import Encoder, EncodeStats

__all__ = ["EncodeStats", "Encoder"]
