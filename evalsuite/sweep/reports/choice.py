"""The choice of `sweep --choose` in the reports: the sentence, each cell's cost, decision and bounds with the
Pareto front marked, and (HTML) quality against cost with the front and the chosen cell."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...reports.markdown import table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..choose import Choice
    from ..results import SweepResult

FRONT_MARK = "◆"


def choice_rows(choice: Choice) -> tuple[list[str], list[list[str]]]:
    r = choice.rule
    headers = ["cell", r.metric, f"cost ({r.cost})", "Δ vs base", "one-sided bounds", "decision", "front"]
    rows = [
        [
            "base",
            f"{choice.base_value:.4f}",
            _num(choice.base_cost),
            "",
            "",
            "",
            FRONT_MARK if choice.base_pareto else "",
        ]
    ]
    for c in choice.cells:
        chosen = c.name == choice.chosen
        rows.append(
            [
                c.name + (" (chosen)" if chosen else ""),
                f"{c.value:.4f}",
                _num(c.cost),
                f"{c.delta:+.4f}",
                f"{c.lower_bound:+.4f} / {c.upper_bound:+.4f}",
                c.decision or "not judged (no cost)",
                FRONT_MARK if c.pareto else "",
            ]
        )
    return headers, rows


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def choice_legend(choice: Choice) -> str:
    return (
        f"Each cell is judged non-inferior to the {choice.base_name} within {choice.rule.margin:g} {choice.rule.metric} (pass: the "
        f"one-sided lower bound of cell - {choice.base_name} is at least -{choice.rule.margin:g}; fail: the upper bound is below it) "
        f"at {choice.confidence:.2%} one-sided confidence, Bonferroni-corrected over the cells considered; "
        f"{FRONT_MARK} marks the Pareto front of {choice.rule.metric} against cost."
    )


def choice_markdown(result: SweepResult) -> list[str]:
    c = result.choice
    if c is None:
        return []
    return ["\n## Choice\n\n", f"**{c.sentence()}**\n\n", choice_legend(c) + "\n\n", table(*choice_rows(c))]


def pareto_figure(choice: Choice) -> Figure:
    from ...reports.html import pareto_chart

    points = [("base", choice.base_cost, choice.base_value, "base")] + [
        (c.name, c.cost, c.value, "chosen" if c.name == choice.chosen else (c.decision or "not judged"))
        for c in choice.cells
        if c.cost is not None
    ]
    points = [p for p in points if p[1] is not None]
    xs = [float(p[1]) for p in points]  # type: ignore[arg-type]
    front = [i for i, p in enumerate(points) if p[0] == "base" and choice.base_pareto] + [
        i for i, p in enumerate(points) for c in choice.cells if c.name == p[0] and c.pareto
    ]
    return pareto_chart(
        f"{choice.rule.metric} against cost: the chosen cell and the Pareto front",
        f"cost ({choice.rule.cost})",
        {choice.rule.metric: [p[2] for p in points]},
        xs,
        [p[0] for p in points],
        [p[3] for p in points],
        lambda _pts: sorted(front, key=lambda i: xs[i]),
        log_x=choice.rule.cost == "bytes",
    )


def choice_html(result: SweepResult) -> list[str]:
    from ...reports import html as h

    c = result.choice
    if c is None:
        return []
    parts = [
        h.heading("Choice"),
        h.paragraph(c.sentence()),
        h.paragraph(choice_legend(c), "meta"),
        h.table(*choice_rows(c)),
    ]
    if any(x.cost is not None for x in c.cells) and c.base_cost is not None:
        parts.append(h.figure_html(h.png_data_uri(pareto_figure(c)), f"{c.rule.metric} against {c.rule.cost}"))
    return parts
