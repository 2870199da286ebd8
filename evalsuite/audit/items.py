"""The audit's pytest items: ``pytest --model-rev REV --index URI [--ids PATH]`` runs one item per audit check
(``evalsuite/<dataset>/audit[<check>]``), each with its status (and its diagnosis) as JUnit properties.

The plugin's ``--index`` takes either an index kind of the run (``hnsw``, ``ivf:nlist=64``) or a store URI
(``faiss:PATH``, ``postgresql://...``, ``lancedb:DIR?table=T``); a URI is moved aside here before the gated
session starts, and audited against each dataset's prepared reference (the session's own model and encoder).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..gating.items import EvalsuiteFailure, EvalsuiteItem
from ..run.options import Option, collect
from .options import INDEX_OPTIONS, SETTING_OPTIONS

if TYPE_CHECKING:
    from ..gating.session import GateSession
    from .context import AuditContext

# the plugin's audit options (--index itself is the run's, made lenient; --endpoint and --suspect-model are the
# canary's, which the plugin already has)
PLUGIN_OPTIONS: tuple[Option, ...] = tuple(
    o for o in (*INDEX_OPTIONS, *SETTING_OPTIONS) if o.flag not in ("--index", "--endpoint", "--suspect-model")
)


def is_store_uri(text: str) -> bool:
    """Whether ``text`` starts with a scheme of a declared store (``faiss:``, ``postgresql://``, ...)."""
    from .stores import store_kinds

    return text.startswith(tuple(s for kind in store_kinds() for s in kind.schemes))


def lenient_index(parse: Any) -> Any:
    """The run's ``--index`` parser, letting a store URI through unchanged (the audit takes it)."""

    def parse_index(text: str) -> str:
        return text if is_store_uri(text) else str(parse(text))

    return parse_index


@dataclass(frozen=True)
class AuditRequest:
    uri: str
    values: dict[str, Any]


def take_request(values: argparse.Namespace, prefix: str) -> AuditRequest | None:
    """The audited store's URI, removed from the run's options (None when ``--index`` is not a URI)."""
    uri = getattr(values, prefix + "index", None)
    if not isinstance(uri, str) or not is_store_uri(uri):
        return None
    setattr(values, prefix + "index", None)
    return AuditRequest(uri, collect(values, PLUGIN_OPTIONS, prefix))


@dataclass
class SessionAudit:
    """The audited store of a gated session: one audit context per dataset (opened on the first item that needs
    it, against the session's prepared reference and encoder), closed with the session."""

    state: GateSession
    request: AuditRequest
    contexts: dict[str, AuditContext] = field(default_factory=dict)

    def context(self, dataset: str) -> AuditContext:
        if dataset not in self.contexts:
            from .runner import AuditTarget, open_context
            from .settings import AuditSettings
            from .source import SourceOptions

            v, state = self.request.values, self.state
            prepared = state.prepared[dataset]
            target = AuditTarget(
                self.request.uri,
                SourceOptions(
                    Path(v["ids"]) if v.get("ids") else None, v.get("password_env"), v.get("mmap") is not False
                ),
                Path(v["manifest"]) if v.get("manifest") else None,
            )
            self.contexts[dataset] = open_context(
                target, AuditSettings.from_mapping(collect_settings(v)), prepared, lambda: state.encoder(prepared)
            )
        return self.contexts[dataset]

    def close(self) -> None:
        for ctx in self.contexts.values():
            ctx.close()
        self.contexts.clear()


def collect_settings(values: dict[str, Any]) -> dict[str, Any]:
    names = {o.dest for o in SETTING_OPTIONS}
    return {k: v for k, v in values.items() if k in names}


class AuditItem(EvalsuiteItem):
    """One audit check of the store against this dataset's reference."""

    def __init__(self, *, check: str, audit: SessionAudit, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check
        self.audit = audit

    def runtest(self) -> None:
        __tracebackhide__ = True
        from ..checks import judge
        from .checks import audit_checks

        check = next(c for c in audit_checks() if c.name == self.check)
        verdict = judge(check, self.audit.context(self.dataset))
        self.state.canary_items.record(self.dataset, verdict)
        self.user_properties.append((f"audit:{self.check}", verdict.status))
        diagnosis = verdict.details.get("diagnosis")
        if isinstance(diagnosis, dict):
            for k, sentence in enumerate(diagnosis.get("sentences", [])):
                self.user_properties.append((f"audit:{self.check}:cause{k + 1}", sentence))
        if verdict.passed is None:
            pytest.skip(verdict.message)
        if not verdict.passed:
            raise EvalsuiteFailure(verdict.message)


def collect_audit_items(audit: SessionAudit, parent: pytest.Session, anchor: Path) -> list[pytest.Item]:
    """One item per audit check and dataset, marked ``evalsuite``, beside the session's own items."""
    from ..gating.items import DatasetCollector
    from .checks import audit_checks

    root = DatasetCollector.from_parent(parent, name="evalsuite-audit", path=anchor, nodeid="evalsuite-audit")
    items: list[pytest.Item] = []
    state = audit.state
    for dp in state.datasets:
        node = DatasetCollector.from_parent(root, name=dp.name)
        for check in audit_checks():
            item = AuditItem.from_parent(
                node, name=f"audit[{check.name}]", state=state, dataset=dp.name, check=check.name, audit=audit
            )
            item.add_marker("evalsuite")
            items.append(item)
    return items
