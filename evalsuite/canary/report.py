"""`canary.json` and `report.md`, written atomically. Settings carry the key's variable name only."""

from __future__ import annotations

from pathlib import Path

from ..io import atomic_write_json, atomic_write_text
from ..reports.markdown import contract_rows, table
from .runner import CanaryOutcome


def render_markdown(outcome: CanaryOutcome) -> str:
    s = outcome.settings
    lines = [f"# Canary: {'PASS' if outcome.passed else 'FAIL'}", "",
             f"Endpoint `{s.endpoint}`, served model `{outcome.served_model}`, "
             f"against the local reference `{outcome.contract['model']}` @ `{outcome.contract['model_revision'][:16]}`"
             f" on `{outcome.dataset['name']}`.", "",
             table(["check", "verdict", "message"], [(v.check, v.status, v.message) for v in outcome.verdicts])]
    for v in outcome.verdicts:
        if v.check == "retrieval_agreement" and "metrics" in v.details:
            rows = [(m, d["reference"], d["endpoint"], f"{d['delta']:+.4f}") for m, d in v.details["metrics"].items()]
            lines += ["## Retrieval agreement", "", table(["metric", "reference", "endpoint", "delta"], rows),
                      f"Mean top-10 overlap: {v.details['top10_overlap']['mean']:.3f}", ""]
    lines += ["## Settings", "", table(["setting", "value"], [(k, str(val)) for k, val in s.to_dict().items()]),
              "## Contract", "", table(["field", "value"], contract_rows(outcome.contract))]
    return "\n".join(lines)


def write_canary_reports(outcome: CanaryOutcome, out: str | Path) -> dict[str, Path]:
    out = Path(out)
    return {"json": atomic_write_json(out / "canary.json", outcome.to_dict()),
            "markdown": atomic_write_text(out / "report.md", render_markdown(outcome))}
