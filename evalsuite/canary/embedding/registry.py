"""The embedding canary's checks, in the order they run: the one list the CLI, the plugin and the reports read.

Adding a check is one declaration and its test::

    # 1. a declaration in a check module (canary/embedding/checks/: a new one, or the group it belongs to):
    def check_widgets(ctx: CanaryContext) -> CheckOutcome: ...      # CheckOutcome("widgets", ...), message "widgets: ..."
    WIDGETS = Check(name="widgets", label="widgets", run=check_widgets,
                    explanation="what it compares and why", example="widgets: a failure message",
                    thresholds=("widget_min",),             # requires=..., per_dataset=..., report=...
                    stage="agreement", diagnosed=False)     # its triage link; whether the diagnosis explains it
    # 2. one entry in CANARY_CHECKS below, where it should run;
    # 3. its threshold as a CanarySettings field (bounds validated from the declaration):
    #        widget_min: float = _setting(0.9, "canary_widget_min", low=0.0, high=1.0)
    #    and, if users may set it, the Option "--canary-widget-min" in canary/embedding/options.py
    #    (tests/canary/test_settings.py fails while the two disagree);
    # 4. its test (tests/canary/): a faithful server passes it, the fault it names fails it.

From another package: the same declaration wrapped in ``PluginCheck(family="embedding", check=WIDGETS)``
(``evalsuite.checks.plugins``) and named by an entry point of the group ``evalsuite.checks``; it runs after the
built-in checks (its thresholds are its own: the settings above are this package's).

Labels, the list of checks a session runs, skip verdicts, the triage checklist, the diagnosis and the report
sections follow from the declarations; :func:`evalsuite.checks.judge` runs each under the one error policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import Check, CheckOutcome, judge
from ...checks.declaration import find
from ...checks.plugins import with_plugins
from .checks.agreement import BATCH_INVARIANCE, NORM_AGREEMENT, VECTOR_AGREEMENT
from .checks.bad_input import BAD_INPUT
from .checks.determinism import DETERMINISM
from .checks.identity import AUTH, IDENTITY
from .checks.invariance import CASE_VARIANTS, DISTINCT_INPUTS
from .checks.ladder import LENGTH_LADDER
from .checks.matryoshka import MATRYOSHKA
from .checks.repeat import REPEATED_REQUESTS
from .checks.retrieval import RETRIEVAL_AGREEMENT
from .checks.stress import STRESS_INPUTS

if TYPE_CHECKING:
    from .context import CanaryContext
    from .settings import CanarySettings

CANARY_CHECKS: tuple[Check[CanaryContext], ...] = (
    IDENTITY,
    VECTOR_AGREEMENT,
    NORM_AGREEMENT,
    BATCH_INVARIANCE,
    REPEATED_REQUESTS,
    RETRIEVAL_AGREEMENT,
    BAD_INPUT,
    # issue 40's probes: what a fixed probe set misses
    LENGTH_LADDER,
    CASE_VARIANTS,
    DISTINCT_INPUTS,
    DETERMINISM,
    STRESS_INPUTS,
    MATRYOSHKA,
    AUTH,
)
LABELS: dict[str, str] = {c.name: c.label for c in CANARY_CHECKS}


def canary_checks() -> tuple[Check[CanaryContext], ...]:
    """Every embedding check in run order, the installed plug-ins' after the built-in ones: what every reader of
    this family reads."""
    return with_plugins("embedding", CANARY_CHECKS)


def get_check(name: str) -> Check[CanaryContext]:
    """The declaration of check ``name``; SpecError listing the known ones otherwise."""
    return find(name, canary_checks(), "canary")


def declared(name: str) -> Check[CanaryContext] | None:
    """The declaration of check ``name``; None when no embedding check has that name."""
    return next((c for c in canary_checks() if c.name == name), None)


def check_names(settings: CanarySettings) -> list[str]:
    """The checks that apply to these settings, in the order they run."""
    return [c.name for c in canary_checks() if c.applies(settings)]


def checks_for_dataset(settings: CanarySettings, *, first: bool) -> list[str]:
    """The checks a session runs for one dataset: all of them for the first dataset, only the
    dataset-dependent ones (``per_dataset``, e.g. retrieval agreement) for the others."""
    return [c.name for c in canary_checks() if c.applies(settings) and (first or c.per_dataset)]


def run_check(name: str, ctx: CanaryContext) -> CheckOutcome:
    """Run embedding check ``name`` (see :func:`evalsuite.checks.judge`)."""
    return judge(get_check(name), ctx)
