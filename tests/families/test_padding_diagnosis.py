"""Left vs right padding as a diagnosis factor, on the tiny Qwen3 (last-token pooling): an engine that right-pads a
batch and pools its last position (TEI's Qwen3 bug) pools a pad token for every text shorter than the longest in its
batch. Served by a real loopback server whose engine is transformers alone (tests/families/decoder_engine.py), the
canary's diagnosis names it from a forward pass over the batches the served vectors came from; a faithful engine, mean
pooling and a missing EOS are never explained by it, even with every alternative scored."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.contract import build_contract
from evalsuite.diagnose.hypotheses import Alternative
from evalsuite.diagnose.local import AlternativeVectors, Hypotheses, Probes, ReferenceSource
from evalsuite.diagnose.score import EXPLAIN_TOL, diagnose
from evalsuite.encode.closing_token import ClosingTokenEncoder
from evalsuite.encode.local import LocalEncoder
from evalsuite.encode.right_padded import RightPaddedLastEncoder
from evalsuite.model import resolve_model
from evalsuite.retrieval.vectors import finalize
from evalsuite.run import probes as probe_texts
from evalsuite.run.spec import RunSpec
from evalsuite.testing.tiny_families import MAX_LENGTH

from .decoder_engine import DecoderEngine

HIDDEN = 64  # the tiny Qwen3's


@pytest.fixture(scope="module")
def qwen3(family_dir):
    d = family_dir("qwen3")  # left padding declared, last-token pooling, the EOS appended
    info = resolve_model(str(d))
    return d, info, build_contract(RunSpec(model=str(d)), info)


@pytest.fixture(scope="module")
def engines(qwen3):
    d = qwen3[0]
    return {
        "faithful": DecoderEngine(d, MAX_LENGTH),  # left padding, the batch's last position: each text's EOS
        "right": DecoderEngine(d, MAX_LENGTH, padding_side="right"),
        "no_eos": DecoderEngine(d, MAX_LENGTH, eos=False),
    }


def test_right_padding_is_the_engines_bug_not_the_models(engines):
    """The independent engine really has the bug: its vectors depend on the batch only when it right-pads."""
    texts = ["bread", "the garden soil feeds each seed and root of the plant"]
    for name, changes in (("faithful", False), ("right", True)):
        alone = engines[name].encode(texts[:1], poolings=["last"])["last"]
        batched = engines[name].encode(texts, poolings=["last"])["last"][:1]
        assert np.allclose(alone, batched, atol=1e-5) is not changes, name


@pytest.mark.parametrize(("engine", "pooling", "factor"), [("faithful", "last", None), ("right", "last", "padding")])
def test_canary_names_right_padding_against_a_real_server(
    qwen3, engines, small_beir, tmp_path, capsys, engine, pooling, factor
):
    from evalsuite.cli import main

    from ..canary.fault_server import serving

    d = qwen3[0]
    with serving(lambda n: engines[engine], HIDDEN, MAX_LENGTH) as fs:
        fs.pooling = pooling
        argv = ["canary", "--endpoint", fs.url, "--model", str(d), "--dataset", str(small_beir), "--device", "cpu"]
        rc = main([*argv, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")])
        batches = list(engines[engine].batches)
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "canary.json").read_text())
    if factor is None:
        assert rc == 0, out
        assert not report.get("diagnosis")
        return
    assert rc == 1, out
    assert max(batches) > 1  # the server got batches of several texts: the bug had something to pad
    [diagnosis] = report["diagnosis"]
    assert [c["factor"] for c in diagnosis["causes"]] == ["padding"], out
    assert diagnosis["causes"][0]["stage"] == "batch"
    assert "the server right-pads each batch and pools its last position" in out, out
    assert "pool the last real token of each text" in out, out  # the generic remedy (the engine is unknown)
    assert diagnosis["ranked"][0]["max_relative_difference"] < 1e-3


def _diagnosis(qwen3, engine, pooling, batch_size):
    """Every alternative scored (no early stop) against ``engine``'s vectors of the canary texts, sent in batches of
    ``batch_size`` as the canary's client sends them (sorted by length)."""
    _, info, c = qwen3
    pairs = probe_texts.queries() + probe_texts.documents(c.max_length)[:10]
    probes = Probes(
        tuple(i for i, _ in pairs), tuple("query" if i.startswith("q") else "document" for i, _ in pairs),
        tuple(t for _, t in pairs),
    )  # fmt: skip
    rendered = [c.render(r, t) for r, t in zip(probes.roles, probes.texts, strict=True)]
    order = sorted(range(len(rendered)), key=lambda i: len(rendered[i]))
    batches = tuple(tuple(sorted(order[k : k + batch_size])) for k in range(0, len(order), batch_size))
    served = np.zeros((len(rendered), HIDDEN), dtype=np.float32)
    for b in batches:
        served[list(b)] = finalize(engine.encode([rendered[i] for i in b], poolings=[pooling])[pooling], HIDDEN, True)
    probes = Probes(probes.ids, probes.roles, probes.texts, batches=batches)
    encoder = LocalEncoder(info, device="cpu", progress=False)
    no_eos = ClosingTokenEncoder(info, mode="no_closing", max_length=c.max_length, device="cpu", progress=False)
    padded = RightPaddedLastEncoder(info, device="cpu", max_length=c.max_length, progress=False)
    source = ReferenceSource(
        encoder=lambda length, dtype: encoder,
        suspect=lambda path: encoder,
        token_counts=lambda texts: None,
        special=lambda mode, length, dtype: no_eos if mode == "no_closing" else None,
        right_padded=lambda length, dtype: padded,
    )
    vectors = AlternativeVectors(c, HIDDEN, info.prompts, source, probes)
    base = Alternative.of_contract(c, HIDDEN)
    candidates: dict = {}
    for group in vectors.candidate_groups(base, HIDDEN, Hypotheses()):
        candidates.update(group)
    assert any(alt.padding == "right" for alt in candidates)  # the padding alternative was scored
    found = diagnose(served, candidates, probes.ids, base=base, hidden=HIDDEN, contract=c, what="t", engine="tei")
    padding_fit = min(
        (f for f in found.ranked if f.alternative.padding == "right"), key=lambda f: f.max_difference
    ).max_difference
    return found, padding_fit


@pytest.mark.parametrize(
    ("engine", "pooling", "factors"),
    [("right", "last", {"padding"}), ("faithful", "last", set()), ("faithful", "mean", {"pooling"}),
     ("no_eos", "last", {"special"})],
)  # fmt: skip
def test_only_right_padding_is_explained_by_the_padding_alternative(qwen3, engines, engine, pooling, factors):
    found, padding_fit = _diagnosis(qwen3, engines[engine], pooling, batch_size=8)
    assert {c.factor for c in found.causes} == factors, found.sentence()
    if "padding" in factors:
        assert padding_fit < 1e-3
        assert "TEI: upgrade" in found.sentence()  # the engine's own remedy
    else:
        assert padding_fit > EXPLAIN_TOL  # right padding does not fit: the diagnosis could not name it
