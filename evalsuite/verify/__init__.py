"""`evalsuite verify`: a deployment against an index manifest's fingerprint, without the model.

:mod:`.checks` asks the server and compares (served model, dimension, normalization, max length,
the probe texts' vectors, with the numpy part of the diagnosis); :mod:`.cli` is the subcommand.
numpy and HTTP only: torch, faiss, ranx and transformers are never imported on this path.
"""
