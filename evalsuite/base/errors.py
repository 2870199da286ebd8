"""Typed errors. Every message says what is wrong and what to do about it."""

from __future__ import annotations


class EvalsuiteError(Exception):
    """Base class of every error evalsuite raises on purpose."""


class SpecError(EvalsuiteError):
    """A setting (flag, spec file, gate expression) is invalid."""


class PluginError(EvalsuiteError):
    """An installed plug-in's entry point cannot be used; the message names the entry point and its package."""


class DatasetError(EvalsuiteError):
    """A dataset file is malformed. The message names the file and line."""

    def __init__(self, path: object, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line


class ModelError(EvalsuiteError):
    """A model cannot be found or loaded as asked."""


class RevisionMismatch(ModelError):
    """A pinned revision differs from the revision that would be loaded."""

    def __init__(self, what: str, expected: str, found: str, hint: str = "") -> None:
        msg = f"{what} mismatch: pinned {expected!r} but found {found!r}"
        super().__init__(msg + (f"; {hint}" if hint else ""))
        self.expected = expected
        self.found = found


class ContractError(EvalsuiteError):
    """Two contracts (or a contract and a manifest/baseline) are not comparable."""


class TruncationError(EvalsuiteError):
    """A text is longer than the contract's max length under the 'reject' policy."""


class EndpointError(EvalsuiteError):
    """A served endpoint answered in a way that breaks the embedding contract."""


class FleetMismatch(EndpointError):
    """Members of one served fleet encode the same texts differently (another contract behind one URL)."""


class CacheError(EvalsuiteError):
    """An embedding cache entry is unusable."""


class ExecutorError(EvalsuiteError):
    """The encoding executor (e.g. a Ray cluster or one of its actors) failed or cannot be reached."""


class StoreError(EvalsuiteError):
    """The on-disk vector store of a run cannot be created, written or read."""


class DatasetChanged(DatasetError):
    """A dataset file read on demand changed (or vanished) after it was indexed; the run must start again."""


class SpoolError(StoreError):
    """The decompressed copy of a compressed corpus (its spool file) cannot be created or written."""


class MissingExtra(SpecError):
    """A setting needs an optional dependency that is not installed; the message names the extra to install."""


class IndexSourceError(EvalsuiteError):
    """A vector index or store (a FAISS file, its id sidecar, a pgvector table, a LanceDB table) cannot be read
    as asked; the message names the file, table or column and what to do (a usage/input error, exit 2)."""


class HistoryError(EvalsuiteError):
    """The release history (a record file or its directory) cannot be read or written as asked; the message
    names the file and what to do."""


class BudgetStageError(SpecError):
    """A stage of the loss budget cannot be built as declared (a dim larger than the model's, PQ parameters that
    do not divide the dimension, an index URI that cannot be opened, an endpoint that fails its identity check);
    the message names the stage and what to do (a usage/input error, exit 2)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"budget stage {stage!r}: {message}")
        self.stage = stage
