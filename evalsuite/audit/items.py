"""The audit's pytest items: ``pytest --model-rev REV --audit-index URI [--ids PATH]`` runs one item per audit check
(``evalsuite-audit/<dataset>/audit[<check>]``), each with its status (and its diagnosis) as JUnit properties.

The store (``faiss:PATH``, ``postgresql://...``, ``lancedb:DIR?table=T``, a plug-in's) is audited against each
dataset's prepared reference (the session's own model and encoder). ``--audit-index`` is the CLI's ``evalsuite audit
--index`` under the plugin's ``--audit-*`` names: the plugin's ``--index`` is the run's index kind (``hnsw``,
``ivf:nlist=64``), and a store URI given there is a usage error naming ``--audit-index`` (:func:`index_kind_only`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..gating.items import EvalsuiteFailure, EvalsuiteItem
from ..gating.parts import PytestPart
from ..run.options import Option, collect
from .options import INDEX_OPTIONS, SETTING_OPTIONS

if TYPE_CHECKING:
    from ..gating.session import GateSession
    from .context import AuditContext

STORE_OPTION = Option(
    "--audit-index",
    "audit this built index (faiss:PATH, postgresql://USER@HOST:PORT/DB?table=T&id=COL&vector=COL, "
    "lancedb:DIR?table=T) against each dataset's reference: one item per audit check",
    {"metavar": "URI", "dest_name": "audit_index"},
)
# the plugin's audit options: the store, then the CLI's (its --index is --audit-index here; --endpoint and
# --suspect-model are the canary's, which the plugin already has)
PLUGIN_OPTIONS: tuple[Option, ...] = (
    STORE_OPTION,
    *(o for o in (*INDEX_OPTIONS, *SETTING_OPTIONS) if o.flag not in ("--index", "--endpoint", "--suspect-model")),
)


def is_store_uri(text: str) -> bool:
    """Whether ``text`` starts with a scheme of a declared store (``faiss:``, ``postgresql://``, ...)."""
    from .stores import store_kinds

    return text.startswith(tuple(s for kind in store_kinds() for s in kind.schemes))


def index_kind_only(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """The run's ``--index`` parser under pytest, refusing a store URI with the option that takes it (the plugin's
    ``--index`` took a store URI before ``--audit-index`` did)."""

    def parse_index(text: str) -> Any:
        if is_store_uri(text):
            raise argparse.ArgumentTypeError(
                f"{text!r} is a store URI: pass it as --audit-index {text} to audit that index "
                "(--index is the run's index kind, e.g. hnsw or ivf:nlist=64)"
            )
        return parse(text)

    parse_index.__name__ = getattr(parse, "__name__", "index")
    return parse_index


@dataclass(frozen=True)
class AuditRequest:
    uri: str
    values: dict[str, Any]


def take_request(values: argparse.Namespace, prefix: str) -> AuditRequest | None:
    """The audited store and its options (None without ``--audit-index``)."""
    given = collect(values, PLUGIN_OPTIONS, prefix)
    uri = given.pop("audit_index", None)
    if uri is None:
        return None
    if not is_store_uri(uri):
        from ..base.errors import SpecError
        from .stores import store_kinds

        schemes = ", ".join(s for kind in store_kinds() for s in kind.schemes)
        raise SpecError(f"--audit-index {uri!r}: no store answers this URI; it must start with one of: {schemes}")
    return AuditRequest(uri, given)


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

    def items(self, parent: pytest.Session, anchor: Path) -> list[pytest.Item]:
        return collect_audit_items(self, parent, anchor)

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


PYTEST_PART = PytestPart(PLUGIN_OPTIONS, take_request, SessionAudit)
