"""What a check is: one :class:`Check` declaration (a run function ``context -> CheckOutcome`` plus its label,
explanation, example, thresholds, when it applies, its place in the triage chain and whether the diagnosis reads
its failure), and the :class:`CheckContext` every family's context is.

A check runs on the context of its family: a :class:`~evalsuite.canary.embedding.context.CanaryContext` for the
embedding canary, a :class:`~evalsuite.canary.reranker.context.RerankCanaryContext` for the reranker's, an
:class:`~evalsuite.audit.context.AuditContext` for the index audit; each is a :class:`CheckContext`, which is all
the one error policy (:func:`evalsuite.checks.judge`) needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..diagnose.hypotheses import STAGE_NAMES
from .outcome import CheckOutcome

if TYPE_CHECKING:
    from ..encode.http import Deadline


class CheckContext(Protocol):
    """What the runner asks of a family's context: its settings, the run's deadline, closing it."""

    @property
    def settings(self) -> Any: ...

    @property
    def deadline(self) -> Deadline: ...

    def deadline_passed(self) -> bool: ...

    def close(self) -> None: ...


C = TypeVar("C", bound=CheckContext)


@dataclass(frozen=True)
class Check(Generic[C]):
    """One check, declared once; its family's registry, the CLI, the plugin and the reports read it.

    ``run`` returns a CheckOutcome named ``name`` whose message starts with ``label + ":"``;
    ``thresholds`` are the settings fields it compares against (its family's settings class);
    ``requires`` is the settings field that must be set for it to apply (None: always applies);
    ``per_dataset`` checks run for every dataset of a session, the others once;
    ``report`` adds a Markdown section to report.md from its verdict's details;
    ``stage`` is its link in the canary's triage chain (one of ``diagnose/hypotheses.py`` ``STAGES``, in debugging order);
    ``diagnosed``: the canary's diagnosis explains its failure from the served vectors.
    """

    name: str
    label: str
    explanation: str
    example: str
    run: Callable[[C], CheckOutcome]
    thresholds: tuple[str, ...] = ()
    requires: str | None = None
    per_dataset: bool = False
    report: Callable[[CheckOutcome], list[str]] | None = None
    stage: str = "agreement"
    diagnosed: bool = False

    def __post_init__(self) -> None:
        if self.stage not in STAGE_NAMES:
            from ..base.errors import SpecError

            raise SpecError(
                f"check {self.name!r}: stage {self.stage!r} is not a triage stage; use one of {', '.join(STAGE_NAMES)}"
            )

    def applies(self, settings: object) -> bool:
        return self.requires is None or bool(getattr(settings, self.requires))

    def skipped(self, settings: object) -> CheckOutcome:
        """The verdict when ``settings`` do not ask for this check: names the option that would (the settings
        class's ``option_of``, when it has one; else the field)."""
        field = self.requires or ""
        option_of: Callable[[str], str] | None = getattr(type(settings), "option_of", None)
        option = option_of(field) if option_of is not None else field
        return CheckOutcome(self.name, None, f"{self.label}: no --{option.replace('_', '-')} given", {})


def find(name: str, checks: tuple[Check[C], ...], family: str) -> Check[C]:
    """The declaration of check ``name`` among ``checks`` (a family's); SpecError listing the known ones otherwise."""
    for check in checks:
        if check.name == name:
            return check
    from ..base.errors import SpecError

    raise SpecError(f"unknown {family} check {name!r}; known: {', '.join(c.name for c in checks)}")
