"""A decoder's deployment departures, each named by the diagnosis with vLLM's remedy: the served vectors are made
locally under the departed contract (the query instruction missing, or on documents too; mean pooling instead of
last token; the EOS not appended) and the diagnosis must name exactly that factor."""

from __future__ import annotations

import pytest

from evalsuite.contract import build_contract
from evalsuite.diagnose.hypotheses import Alternative
from evalsuite.diagnose.local import AlternativeVectors, Hypotheses, Probes, ReferenceSource
from evalsuite.diagnose.score import diagnose
from evalsuite.encode.closing_token import ClosingTokenEncoder
from evalsuite.encode.local import LocalEncoder
from evalsuite.model import resolve_model
from evalsuite.retrieval.vectors import finalize
from evalsuite.run import probes as probe_texts
from evalsuite.run.spec import RunSpec


@pytest.fixture(scope="module")
def decoder(family_dir):
    info = resolve_model(str(family_dir("qwen3")))
    contract = build_contract(RunSpec(model=str(family_dir("qwen3"))), info)
    encoder = LocalEncoder(info, device="cpu", progress=False)
    no_eos = ClosingTokenEncoder(info, mode="no_closing", max_length=contract.max_length, device="cpu", progress=False)
    pairs = probe_texts.queries()[:6] + probe_texts.documents(contract.max_length)[:8]
    probes = Probes(
        tuple(i for i, _ in pairs), tuple("query" if i.startswith("q") else "document" for i, _ in pairs),
        tuple(t for _, t in pairs),
    )  # fmt: skip
    return info, contract, encoder, no_eos, probes


def served_as(decoder, *, pooling=None, query_prefix=None, doc_prefix=None, eos=True):
    _, c, encoder, no_eos, probes = decoder
    pooling = pooling or c.pooling
    prefix = {"query": c.query_prefix if query_prefix is None else query_prefix}
    prefix["document"] = c.doc_prefix if doc_prefix is None else doc_prefix
    texts = [prefix[r] + t for r, t in zip(probes.roles, probes.texts, strict=True)]
    pooled = (encoder if eos else no_eos).encode(texts, poolings=[pooling])[pooling]
    return finalize(pooled, c.dim, c.normalize)


def named(decoder, served):
    info, c, encoder, no_eos, probes = decoder
    source = ReferenceSource(
        encoder=lambda length, dtype: encoder,
        suspect=lambda path: encoder,
        token_counts=lambda texts: None,
        special=lambda mode, length, dtype: no_eos if mode == "no_closing" else None,
    )
    vectors = AlternativeVectors(c, info.hidden_size, info.prompts, source, probes)
    base = Alternative.of_contract(c, info.hidden_size)
    candidates: dict = {}
    for group in vectors.candidate_groups(base, served.shape[1], Hypotheses()):
        candidates.update(group)
        found = diagnose(served, candidates, probes.ids, base=base, hidden=info.hidden_size, contract=c, what="t",
                         engine="vllm")  # fmt: skip
        if found.explained:
            return found
    return found


@pytest.mark.parametrize(
    ("departure", "factor", "value", "says"),
    [
        ({"query_prefix": ""}, "prefix", "none", "the server gets no prefixes"),
        ({"doc_prefix": "query"}, "prefix", "query_on_both", "is on documents too"),
        ({"pooling": "mean"}, "pooling", "mean", '"seq_pooling_type":"LAST"'),
        ({"eos": False}, "special", "no_closing", "does not append the EOS token"),
    ],
)
def test_each_decoder_departure_is_named(decoder, departure, factor, value, says):
    if departure.get("doc_prefix") == "query":
        departure = {"doc_prefix": decoder[1].query_prefix}
    found = named(decoder, served_as(decoder, **departure))
    assert {c.factor: c.value for c in found.causes} == {factor: value}, found.sentence()
    assert says in found.sentence(), found.sentence()
    if factor == "special":
        assert "vLLM: serve the model directory with its own tokenizer" in found.sentence()


def test_a_faithful_decoder_deployment_names_nothing(decoder):
    found = named(decoder, served_as(decoder))
    assert found.causes == ()
    assert found.contract.max_difference < 1e-4  # the contract itself explains a faithful deployment
