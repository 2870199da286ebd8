"""evalsuite: retrieval-quality gates for text-embedding models.

Importing this package is cheap on purpose: torch, faiss, transformers and ranx are
imported only by the modules that run a model, search or score.
"""

__version__ = "0.1.0"
