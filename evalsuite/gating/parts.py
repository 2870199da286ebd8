"""What a job adds to a gated pytest session: its :class:`PytestPart`, declared beside its items (the audit's in
`audit/items.py`, the budget's in `budget/items.py`) and loaded by its ``Job`` (`base/jobs.py`).

A part adds its options to ``pytest`` (prefix ``evalsuite_``); ``take`` reads its request from the parsed values
(None: not asked for; an EvalsuiteError: a usage error), and ``attach`` makes, from the started session and that
request, the :class:`~.session.SessionPart` the session holds: its items beside the session's own, closed with it.
The run job's part is the gated session itself: options only (:func:`gated_session_part`).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..base.options import Option

if TYPE_CHECKING:
    from .session import GateSession, SessionPart

R = TypeVar("R")


@dataclass(frozen=True)
class PytestPart(Generic[R]):
    options: tuple[Option, ...]
    take: Callable[[argparse.Namespace, str], R | None] | None = None
    attach: Callable[[GateSession, R], SessionPart] | None = None

    def request(self, values: argparse.Namespace, prefix: str) -> R | None:
        return None if self.take is None else self.take(values, prefix)

    def part(self, session: GateSession, request: R) -> SessionPart:
        if self.attach is None:
            raise TypeError("a pytest part without attach takes no request")
        return self.attach(session, request)


def gated_session_part(
    index_type: Callable[[Callable[[str], Any]], Callable[[str], Any]] | None = None,
) -> PytestPart[Any]:
    """The gated session's own options (`start.py`: the run's, the gates', the sweeps', the reranker's and the
    canary's); ``index_type`` wraps the parser of the run's ``--index`` (the audit's refusal of a store URI)."""
    from .start import plugin_options

    options = tuple(o for group, _ in plugin_options() for o in group)
    if index_type is not None:
        options = tuple(
            dataclasses.replace(o, kwargs={**o.kwargs, "type": index_type(o.kwargs["type"])})
            if o.flag == "--index"
            else o
            for o in options
        )
    return PytestPart(options)
