"""The checks of `evalsuite verify`, in triage order: served model, max length, dimension, norms, vectors.

Each check is a :class:`Finding`; a mismatch of the vectors carries the diagnosis that needs no model
(normalization, Matryoshka cut with or without re-normalizing, float16/bfloat16 rounding), scored by
:func:`evalsuite.diagnose.score.diagnose` against the fingerprint's own vectors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import ContractError, EndpointError, SpecError
from ..contract import Contract
from ..diagnose.engines import server_facts
from ..diagnose.hypotheses import FACTORS, Alternative
from ..diagnose.score import Diagnosis, derive, diagnose, fit, name_precision, numeric_variants
from ..run.fingerprint import Fingerprint

if TYPE_CHECKING:
    from ..encode.endpoint import EndpointEncoder

MIN_COSINE = 0.99  # per probe text, as the canary's default
NORM_TOL = 1e-3  # a unit vector's norm within this of 1 (the endpoint client's tolerance)
UNNORMALIZED_NORM_TOL = 1e-2  # relative, between served and fingerprint norms when the contract does not normalize


@dataclass(frozen=True)
class Manifest:
    path: Path
    contract: Contract
    fingerprint: Fingerprint
    model_names: tuple[str, ...]  # names the deployment may serve the model under

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """SpecError (usage, exit 2) for a missing or unreadable file, or one without a fingerprint."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SpecError(f"{path}: no such manifest; give the manifest.json `evalsuite run` wrote") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SpecError(f"{path}: not a readable JSON manifest ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("contract"), dict):
            raise SpecError(f"{path}: not an evalsuite index manifest (no 'contract' object)")
        if "fingerprint" not in data:
            raise SpecError(
                f"{path}: this manifest has no fingerprint (written by an evalsuite from before `verify`); "
                "re-run `evalsuite run` with the same contract to write one, then verify against it"
            )
        try:
            contract = Contract.from_dict(data["contract"], source=f"{path}: contract")
            fp = Fingerprint.from_dict(data["fingerprint"], str(path))
        except ContractError as exc:
            raise SpecError(str(exc)) from None
        model, encoder = data.get("model") or {}, data.get("encoder") or {}
        names = (encoder.get("served_model"), model.get("name"), contract.model)
        return cls(path, contract, fp, tuple(dict.fromkeys(str(n) for n in names if n)))


@dataclass(frozen=True)
class Finding:
    check: str
    passed: bool
    message: str
    diagnosis: Diagnosis | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "passed": self.passed,
            "message": self.message,
            "diagnosis": None if self.diagnosis is None else self.diagnosis.to_dict(),
        }


def check_model(served: str, manifest: Manifest, given: str | None) -> Finding:
    from ..encode.response import model_matches  # the canary's rule: the same name, or the same path tail

    if given is not None or model_matches(served, frozenset(manifest.model_names)):
        return Finding("model", True, f"model: the server serves {served!r}")
    return Finding(
        "model",
        False,
        f"model: the server serves {served!r}, the manifest's model is {manifest.model_names[0]!r}; pass "
        "--served-model NAME if the deployment serves the pinned model under another name",
    )


def check_max_length(server_max: int | None, contract: Contract) -> Finding:
    if server_max is None:
        return Finding("max_length", True, "max length: the server does not report one")
    if server_max == contract.max_length:
        return Finding("max_length", True, f"max length: {server_max} tokens, as the contract")
    return Finding(
        "max_length",
        False,
        f"max length: the server's is {server_max} tokens, the contract's {contract.max_length}: texts over "
        f"{min(server_max, contract.max_length)} tokens get other vectors (or are refused)",
    )


def check_vectors(served: np.ndarray, manifest: Manifest, min_cosine: float, engine: str | None) -> list[Finding]:
    """Dimension, norms and per-text cosine against the fingerprint; a mismatch gets the numpy diagnosis."""
    c, fp = manifest.contract, manifest.fingerprint
    want, got = fp.vectors.shape[1], served.shape[1]
    found: list[Finding] = []
    if got != want:
        found.append(Finding("dimension", False, f"dimension: the server returns {got}, the index holds {want}"))
    else:
        found.append(Finding("dimension", True, f"dimension: {got}"))
    norms = np.linalg.norm(served.astype(np.float64), axis=1)
    if c.normalize:
        ok = bool(np.abs(norms - 1.0).max() <= NORM_TOL)
        expected = "1 (the contract normalizes)"
    else:
        ref = np.linalg.norm(fp.vectors.astype(np.float64)[:, :got], axis=1)
        ok = got == want and bool((np.abs(norms - ref) / np.where(ref > 0, ref, 1.0)).max() <= UNNORMALIZED_NORM_TOL)
        expected = f"{ref.min():.4f}-{ref.max():.4f} (the fingerprint's)"
    span = f"served norms {norms.min():.4f}-{norms.max():.4f}, expected {expected}"
    found.append(Finding("norm", ok, f"norm: {span}"))
    base = Alternative.of_contract(c, want)
    variants = numeric_variants(base, got, want, (None, "float16", "bfloat16")) if got <= want else iter(())
    candidates = {alt: derive(fp.vectors, alt) for alt in variants}
    cos = fit(served, fp.vectors, fp.ids, base, "the contract").min_cosine if got == want else None
    if cos is not None and cos >= min_cosine and all(f.passed for f in found):
        found.append(Finding("vectors", True, f"vectors: {len(fp.ids)} probe texts, min cosine {cos:.5f}"))
        return found
    if c.normalize and not ok and cos is not None and cos >= min_cosine:
        # the fingerprint holds unit vectors only: no derived alternative has the served norms, but equal
        # directions with other norms is exactly a server that does not normalize
        factor = next(f for f in FACTORS if f.field == "normalize")
        found.append(
            Finding(
                "vectors",
                False,
                f"vectors: every direction matches (min cosine {cos:.5f}) but not the norms; cause: "
                f"{factor.cause(False, c)}; fix: {factor.remedy_for(engine, False, c)}",
            )
        )
        return found
    diagnosis = None
    if candidates:
        what = f"{len(fp.ids)} probe texts of the manifest"
        diagnosis = diagnose(served, candidates, fp.ids, base=base, hidden=want, contract=c, what=what, engine=engine)
        diagnosis = name_precision(diagnosis, served, candidates, fp.ids, base=base, hidden=want, contract=c)
    shown = "" if cos is None else f"min cosine {cos:.5f} (< {min_cosine} or norms differ); "
    cause = "" if diagnosis is None else diagnosis.sentence()
    found.append(Finding("vectors", False, f"vectors: {shown}{cause}".rstrip("; "), diagnosis))
    return found


def verify(
    manifest: Manifest,
    probe: EndpointEncoder,
    client_for: Callable[[str, frozenset[str]], EndpointEncoder],
    served_model: str | None,
    min_cosine: float,
) -> list[Finding]:
    """Every finding for the deployment behind ``probe`` (a client that checks no model name);
    ``client_for(name, aliases)`` makes the client that embeds the probes."""
    from ..encode.served import discover_served_model

    served = discover_served_model(probe, served_model)
    facts = server_facts(probe, served.name)
    findings = [check_model(served.name, manifest, served_model), check_max_length(facts.max_length, manifest.contract)]
    client = client_for(served.name, served.aliases)
    try:
        vectors = client.embed(
            manifest.fingerprint.rendered(manifest.contract), ids=list(manifest.fingerprint.ids), check_norm=False
        )
    except EndpointError as exc:
        findings.append(Finding("vectors", False, f"vectors: {exc}"))
        return findings
    finally:
        client.close()
    return findings + check_vectors(vectors, manifest, min_cosine, facts.engine)
