"""The files of one `evalsuite run`: results.json, manifest.json, report.md, run.trec."""

from __future__ import annotations

from pathlib import Path

from ..base.io import atomic_write_json, atomic_write_text, path_name
from ..run.result import Result
from .markdown import contract_rows, table
from .slices import slice_markdown
from .trec import trec_run


def departures_markdown(contract: dict[str, object]) -> str:
    """The settings that override what the model declares (empty when none): the run is not the model as shipped."""
    departures = contract.get("departures") or []
    if not isinstance(departures, list) or not departures:
        return ""
    lines = "".join(f"- {d}\n" for d in departures)
    return f"\n**Departures from the model's declaration** (this run evaluates a changed model):\n\n{lines}"


def run_markdown(result: Result) -> str:
    m = result.manifest
    ident = result.dataset.identity
    counts = ident.to_dict()["counts"]
    t = result.timing
    parts = [
        f"# evalsuite run `{m['run_id']}`\n",
        f"Model **{m['model']['name']}** at revision `{m['contract']['model_revision']}` "
        f"on dataset **{ident.name}** (split `{ident.split}`, sha256 `{ident.sha256[:16]}…`).\n",
        "## Metrics\n",
        table(["metric", "value"], [(k, v) for k, v in result.metrics.items()]),
        slice_markdown(result.slice_rows(), tuple(result.metrics)),
        "\n## Dataset\n",
        table(["count", "value"], list(counts.items())),
        "\n## Contract\n",
        table(["field", "value"], contract_rows(m["contract"])),
        departures_markdown(m["contract"]),
        "\n## Timing\n",
        table(
            ["step", "value"],
            [
                ("encode seconds", t.get("encode_seconds")),
                ("search seconds", t.get("search_seconds")),
                ("score seconds", t.get("score_seconds")),
                ("query tokens", t.get("queries", {}).get("tokens")),
                ("document tokens", t.get("documents", {}).get("tokens")),
                (
                    "truncated texts",
                    t.get("queries", {}).get("truncated", 0) + t.get("documents", {}).get("truncated", 0),
                ),
                (
                    "embedding cache hits / misses",
                    f"{t['cache']['hits']} / {t['cache']['misses']}" if "cache" in t else "cache off",
                ),
                ("result cache", result_cache_text(t.get("result_cache"))),
                ("device", device_text(m.get("device"))),
            ],
        ),
    ]
    nodes = m.get("encoder", {}).get("nodes")
    if nodes:
        parts += ["\n## Ray nodes\n", ray_nodes_markdown(nodes, t.get("executor", {}))]
    if result.warnings:
        parts += ["\n## Warnings\n", "".join(f"- {w}\n" for w in result.warnings)]
    return "".join(parts)


def ray_nodes_markdown(nodes: list[dict[str, object]], executor: dict[str, object]) -> str:
    """Which Ray nodes encoded how many rows in how long, and where the executor's time went."""
    rows = [
        (
            str(n["node_id"])[:12],
            n["address"],
            _resources(n.get("resources")),
            n["rows"],
            n["seconds"],
            n.get("load_seconds"),
        )
        for n in nodes
    ]
    parts = ", ".join(f"{k.replace('_seconds', '')} {executor[k]} s" for k in executor if k.endswith("_seconds"))
    return table(["node", "address", "resources", "rows", "encode seconds", "load seconds"], rows) + (
        f"\nExecutor time (summed over actors): {parts}.\n" if parts else ""
    )


def _resources(resources: object) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in resources.items()) if isinstance(resources, dict) else ""


def device_text(device: object) -> str:
    """Where the vectors were computed; a warm run loaded no model: it says so instead of naming a device."""
    return "none: every vector came from the embedding cache (no model loaded)" if device == "cache" else str(device)


def result_cache_text(entry: dict[str, object] | None) -> str:
    """Where the ranking and scores came from: this run's search, or the result cache (and when it was filled)."""
    if not entry or entry.get("status") == "off":
        return "off: searched and scored in this run"
    if entry.get("status") != "hit":
        return "miss: searched and scored in this run, then stored"
    return (
        f"hit: ranking and scores read back, computed {entry.get('computed')} on identical inputs "
        f"(search {entry.get('computed_search_seconds')} s, score {entry.get('computed_score_seconds')} s then); "
        "--no-cache recomputes them"
    )


def default_run_dir(dataset_name: str, model_name: str) -> Path:
    """`reports/<dataset>/<model>` (the model's last path part, made safe for a folder name)."""
    model = path_name(model_name.rsplit("/", 1)[-1], "model")
    return Path("reports") / dataset_name / model


def write_run_reports(result: Result, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    return {
        "run.trec": atomic_write_text(out / "run.trec", trec_run(result.ranking)),
        "manifest.json": atomic_write_json(out / "manifest.json", result.manifest),
        "report.md": atomic_write_text(out / "report.md", run_markdown(result)),
        "results.json": atomic_write_json(out / "results.json", result.to_dict()),
    }
