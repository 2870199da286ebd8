"""evalsuite: retrieval-quality gates for text-embedding models.

The Python front door (docs/api.md)::

    import evalsuite

    result = evalsuite.evaluate()              # the bundled model on the bundled dataset
    result.metrics["ndcg@10"]
    evalsuite.sweep(vary={"dim": [384, 128]})  # evalsuite.canary(endpoint=...), evalsuite.audit(index=...)

Importing this package is cheap on purpose: torch, faiss, transformers and ranx are imported only by the modules
that run a model, search or score, and the front door (:mod:`evalsuite.api`) is imported on first use.

``evalsuite.sweep``, ``evalsuite.canary`` and ``evalsuite.audit`` are the packages of those jobs, and calling one
runs the job (:func:`evalsuite.api.sweep`, ...): a package and a function of the same name cannot otherwise share
the attribute, since importing a submodule sets its package as the attribute of its parent.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .api import AuditResult as AuditResult
    from .api import CanaryReport as CanaryReport
    from .api import Evaluation as Evaluation
    from .api import MetricDelta as MetricDelta
    from .api import RunComparison as RunComparison
    from .api import SweepReport as SweepReport
    from .api import audit as audit
    from .api import budget as budget
    from .api import canary as canary
    from .api import evaluate as evaluate
    from .api import sweep as sweep

_JOB_PACKAGES = ("sweep", "canary", "audit", "budget")  # packages that are also front-door functions
_API = ("evaluate", "AuditResult", "CanaryReport", "Evaluation", "MetricDelta", "RunComparison", "SweepReport")
__all__ = ["__version__", "audit", "budget", "canary", "evaluate", "sweep", *_API[1:]]


class _JobPackage(types.ModuleType):
    """A job's package that runs the job when called: ``evalsuite.sweep(vary=...)`` is ``evalsuite.api.sweep``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from . import api

        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Evalsuite(types.ModuleType):
    """This package: a job package set as its attribute (by the import system) becomes callable."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _JOB_PACKAGES and type(value) is types.ModuleType:
            value.__class__ = _JobPackage
        super().__setattr__(name, value)


def __getattr__(name: str) -> object:
    if name in _JOB_PACKAGES:
        return importlib.import_module(f"{__name__}.{name}")  # set as the attribute, callable, on import
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


sys.modules[__name__].__class__ = _Evalsuite
