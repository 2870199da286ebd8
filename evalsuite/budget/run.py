"""The loss budget, start to end: the chain of configurations from the reference to production (one declared
stage at a time, skipped stages said), each stage charged against the one before, the Shapley charges when
asked, and the total with its CI."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.errors import BudgetStageError
from .attribution import MAX_SHAPLEY_STAGES, Charge, charges, disagreements, sequential, shapley
from .compute import Evaluator, Scored
from .result import BudgetResult, StageEntry
from .stages import BUDGET_STAGES, BudgetStage, configure

if TYPE_CHECKING:
    import numpy as np

    from .plan import BudgetPlan


def _side(plan: BudgetPlan, scored: Scored, contract: dict[str, object]) -> dict[str, object]:
    return {
        "contract": contract,
        "config": scored.config.to_dict(),
        "metrics": dict(scored.metrics),
        "cost": dict(scored.cost),
    }


def served_agreement(evaluate: Evaluator, plan: BudgetPlan) -> str:
    """The served documents' vectors against the local model's at the same dtype, judged by the canary's vector
    agreement threshold: a served stage's loss from vectors that disagree is a fault to diagnose, not noise."""
    import dataclasses

    import numpy as np

    from ..canary.embedding.settings import CanarySettings
    from ..checks.measure import row_cosine

    threshold = float(next(f.default for f in dataclasses.fields(CanarySettings) if f.name == "min_cosine"))  # type: ignore[arg-type]
    _, local = evaluate.vectors(False, plan.production.dtype)
    _, served = evaluate.vectors(True, plan.production.dtype)
    if local.shape != served.shape:
        return (
            f"the served engine returns {served.shape[1]}-dimension vectors, the local model {local.shape[1]}: "
            "the served stage's loss is a contract fault; run `evalsuite canary --endpoint URL` for the cause"
        )
    cos = row_cosine(served, local)
    below = int((cos < threshold).sum())
    head = f"served vs local document vectors ({plan.production.dtype}): min cosine {cos.min():.4f}, median {np.median(cos):.4f}"
    if below:
        causes = served_diagnosis(plan)
        return (
            f"{head}: {below} of {len(cos)} below the canary's vector agreement threshold {threshold:g}, so the served "
            "stage's loss is a fault of the deployment, not noise; "
            + (
                "the canary's diagnosis: " + " | ".join(causes)
                if causes
                else "`evalsuite canary --endpoint URL` names the cause"
            )
        )
    return f"{head}: every vector passes the canary's vector agreement threshold {threshold:g}"


def served_diagnosis(plan: BudgetPlan) -> list[str]:
    """The canary against the served engine (its checks, then the diagnosis of a failure: the cause, tested
    against the local reference at the deployment's dtype, and the engine's remedy), as sentences."""
    import dataclasses

    from ..canary.embedding.settings import CanarySettings
    from ..canary.runner import local_context, run_canary

    spec = plan.served_spec
    assert spec is not None
    settings = CanarySettings(
        endpoint=spec.endpoints[0],
        served_model=spec.served_model,
        api_key_env=spec.api_key_env,
        **({"timeout": spec.endpoint_timeout} if spec.endpoint_timeout else {}),
    )
    local = plan.prepared.spec.replace(dtype=plan.production.dtype)
    prepared = dataclasses.replace(
        plan.prepared, spec=local, contract=plan.prepared.contract.replace(dtype=local.dtype)
    )
    outcome = run_canary(local_context(settings, prepared))
    return [d.sentence() for d in outcome.diagnoses]


def run_budget(plan: BudgetPlan, evaluate: Evaluator | None = None) -> BudgetResult:
    """Compute every declared stage on the same queries; raises BudgetStageError for a stage that cannot run."""
    declared = plan.declared
    if plan.attribution == "shapley" and len(declared) > MAX_SHAPLEY_STAGES:
        raise BudgetStageError(
            "attribution",
            f"Shapley over {len(declared)} stages needs {2 ** len(declared)} configurations; at most "
            f"{MAX_SHAPLEY_STAGES} stages are averaged; use --attribution sequential",
        )
    evaluate = evaluate or Evaluator(plan)
    metrics = list(plan.metrics)
    reference = evaluate(plan.reference_config)
    chain: list[Scored] = [reference]
    applied: set[str] = set()
    entries: list[tuple[BudgetStage, Scored | None, str | None]] = []
    for s in BUDGET_STAGES:
        why = s.declared(plan)
        if why is not None:
            entries.append((s, None, why))
            continue
        applied.add(s.name)
        after = evaluate(configure(frozenset(applied), plan))
        chain.append(after)
        entries.append((s, after, None))
    seq = sequential([c.scores for c in chain], metrics)
    shap: dict[str, dict[str, Charge]] = {}
    if plan.attribution == "shapley" and declared:

        def value(subset: frozenset[str]) -> np.ndarray:
            return evaluate(configure(subset, plan)).scores

        shap = shapley(declared, value, metrics)
    production = chain[-1]
    out: list[StageEntry] = []
    seq_by_name: dict[str, dict[str, Charge]] = {}
    i = 0
    for stage, scored, why in entries:
        if scored is None:
            out.append(StageEntry(stage.name, stage.describe(plan), stage.changes, stage.gain, skipped=why))
            continue
        seq_by_name[stage.name] = seq[i]
        out.append(
            StageEntry(
                stage.name,
                stage.describe(plan),
                stage.changes,
                stage.gain,
                config=scored.config,
                metrics=dict(scored.metrics),
                delta=seq[i],
                shapley=shap.get(stage.name, {}),
                cost=scored.cost,
                measured=scored.measured,
                knob=stage.knob(plan),
                scores=scored.scores,
            )
        )
        i += 1
    notes = list(plan.index_notes)
    if "served" in declared and "precision" in declared:
        notes.append(
            f"the served engine computes in its own precision: the served stage is charged what it adds beyond the "
            f"local model in {plan.production.dtype}"
        )
    if "served" in declared:
        notes.append(served_agreement(evaluate, plan))
    if "index" in declared and ("compression" in declared or "ann" in declared):
        notes.append(
            "the index as built replaces the simulated compression and search: its stage is charged what the real "
            "build adds (stale, missing or shifted vectors, other parameters)"
        )
    rankings = {"reference": reference.ranking} | {
        e.name: sc.ranking for e, (_, sc, _) in zip(out, entries, strict=True) if sc is not None
    }
    return BudgetResult(
        metrics=tuple(metrics),
        reference=_side(plan, reference, plan.reference.to_dict()),
        production=_side(plan, production, plan.production.to_dict()),
        total=charges(production.scores, reference.scores, metrics),
        stages=tuple(out),
        attribution=plan.attribution,
        dataset=plan.prepared.dataset.identity.to_dict(),
        query_ids=evaluate.query_ids,
        disagreements=tuple(disagreements(seq_by_name, shap, metrics[0])) if shap else (),
        notes=tuple(notes),
        configurations_computed=evaluate.computed,
        reference_scores=reference.scores,
        rankings=rankings,
    )
