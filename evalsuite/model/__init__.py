"""Model location and pinning: which weights and tokenizer are loaded, at which revision."""

from .resolve import ModelInfo, bundled_model_dir, directory_digest, resolve_model

__all__ = ["ModelInfo", "bundled_model_dir", "directory_digest", "resolve_model"]
