"""The learned sparse reference against its oracles on tiny random-weight models built here: SPLADE equals
sentence-transformers' SparseEncoder per text (same active token ids, weights within 1e-5; max pooling, both
activations, pruning), BGE-M3's lexical weights equal a numpy loop over the hidden states (sparse_linear, ReLU,
max per token id, special tokens dropped); the exact sparse search equals a brute-force dot product; what cannot
run is refused with a typed error naming the file."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from evalsuite.base.errors import ModelError
from evalsuite.encode.sparse import SparseEncoder
from evalsuite.model import resolve_model
from evalsuite.model.sparse_layout import sparse_head
from evalsuite.retrieval.search import tie_order_key
from evalsuite.retrieval.sparse_search import sparse_search
from evalsuite.testing.tiny_bert import WORDS
from evalsuite.testing.tiny_sparse import write_tiny_bgem3, write_tiny_splade

TEXTS = [
    "how does a database commit a transaction",
    "yeast makes the bread dough rise in the oven",
    "the team player scores a goal on the court, the team wins",
    "",
    "planet moon sun orbit light space " * 6,
]


@pytest.fixture(scope="module")
def splade_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("splade")
    return {a: write_tiny_splade(root / a, activation=a) for a in ("relu", "log1p_relu")}


@pytest.fixture(scope="module")
def bgem3_dir(tmp_path_factory):
    return write_tiny_bgem3(tmp_path_factory.mktemp("bgem3") / "m")


def _ours(model_dir, texts, top_k=0):
    info = resolve_model(str(model_dir))
    encoder = SparseEncoder.of(info, max_length=64, device="cpu", batch_size=2, trust_remote_code=False)
    return encoder, encoder.encode(texts, top_k)


@pytest.mark.parametrize("activation", ["relu", "log1p_relu"])
def test_splade_equals_sentence_transformers(splade_dirs, activation: str) -> None:
    from sentence_transformers import SparseEncoder as STSparse

    model_dir = splade_dirs[activation]
    _, ours = _ours(model_dir, TEXTS)
    st = STSparse(str(model_dir), device="cpu")
    theirs = st.encode(TEXTS, convert_to_tensor=True).to_dense().numpy()
    for text, (ids, weights), row in zip(TEXTS, ours, theirs, strict=True):
        active = np.flatnonzero(row > 0)
        assert ids.tolist() == active.tolist(), text
        np.testing.assert_allclose(weights, row[active], rtol=1e-5, atol=1e-6, err_msg=text)
    assert sum(len(i) for i, _ in ours) > 100  # the tiny model activates many tokens: the comparison has content


def test_splade_pruning_equals_max_active_dims(splade_dirs) -> None:
    from sentence_transformers import SparseEncoder as STSparse

    _, ours = _ours(splade_dirs["relu"], TEXTS, top_k=5)
    st = STSparse(str(splade_dirs["relu"]), device="cpu")
    theirs = st.encode(TEXTS, convert_to_tensor=True, max_active_dims=5).to_dense().numpy()
    for (ids, weights), row in zip(ours, theirs, strict=True):
        active = np.flatnonzero(row > 0)
        assert len(ids) <= 5 and ids.tolist() == active.tolist()
        np.testing.assert_allclose(weights, row[active], rtol=1e-5, atol=1e-6)


def _bgem3_oracle(model_dir, texts):
    """FlagEmbedding's lexical weights, written out: relu(h W^T + b) per token, the largest per token id, the
    special tokens left out; the hidden states from transformers' AutoModel."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    state = torch.load(model_dir / "sparse_linear.pt", weights_only=True)
    w, b = state["weight"].numpy()[0].astype(np.float64), float(state["bias"].numpy()[0])
    unused = {tok.cls_token_id, tok.eos_token_id, tok.pad_token_id, tok.unk_token_id}
    out = []
    for text in texts:
        enc = tok(text, truncation=True, max_length=64, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc).last_hidden_state[0].numpy().astype(np.float64)
        weights: dict[int, float] = {}
        for token, h in zip(enc["input_ids"][0].tolist(), hidden, strict=True):
            value = max(float(h @ w + b), 0.0)
            if token not in unused and value > 0:
                weights[token] = max(weights.get(token, 0.0), value)
        out.append(weights)
    return out


def test_bgem3_lexical_weights_equal_a_numpy_loop(bgem3_dir) -> None:
    _, ours = _ours(bgem3_dir, TEXTS)
    oracle = _bgem3_oracle(bgem3_dir, TEXTS)
    for text, (ids, weights), want in zip(TEXTS, ours, oracle, strict=True):
        assert ids.tolist() == sorted(want), text
        np.testing.assert_allclose(weights, [want[i] for i in sorted(want)], rtol=1e-5, atol=1e-6, err_msg=text)
    assert sum(len(w) for w in oracle) > 20


def test_sparse_search_equals_a_brute_force_dot_product() -> None:
    rng = np.random.default_rng(0)
    vocab = 40
    docs = []
    for _ in range(60):
        ids = np.unique(rng.integers(0, vocab, size=rng.integers(0, 6)))
        docs.append((ids, rng.choice([0.5, 1.0, 2.0], size=len(ids)).astype(np.float32)))  # few values: ties
    docs[7] = docs[3]  # an exact tie: id order decides
    queries = [
        (np.array([1, 5, 9]), np.array([1.0, 0.5, 2.0], dtype=np.float32)),
        (np.array([39]), np.ones(1, np.float32)),
    ]
    doc_ids = [f"d{j}" for j in range(60)]
    got = sparse_search(queries, docs, query_ids=["a", "b"], doc_ids=doc_ids, vocab_size=vocab, k=10, block=1)
    dense_docs = np.zeros((60, vocab))
    for j, (ids, w) in enumerate(docs):
        dense_docs[j, ids] = w
    for qid, (ids, w) in zip(["a", "b"], queries, strict=True):
        q = np.zeros(vocab)
        q[ids] = w
        scores = dense_docs @ q
        want = sorted(((doc_ids[j], s) for j, s in enumerate(scores) if s > 0), key=lambda h: tie_order_key(*h))[:10]
        assert got.doc_ids[qid] == tuple(d for d, _ in want)
        np.testing.assert_allclose(got.scores[qid], [s for _, s in want])


def test_what_cannot_run_is_refused_naming_the_file(tiny_model_dir, splade_dirs, bgem3_dir, tmp_path) -> None:
    with pytest.raises(ModelError, match="no sparse head"):
        sparse_head(tiny_model_dir, 32)
    bad = shutil.copytree(bgem3_dir, tmp_path / "bad")
    import torch

    torch.save(torch.nn.Linear(16, 1).state_dict(), bad / "sparse_linear.pt")
    with pytest.raises(ModelError, match=r"sparse_linear.pt: sparse_linear must be a Linear\(32, 1\)"):
        sparse_head(bad, 32)
    (bad / "sparse_linear.pt").write_bytes(b"not a tensor")
    with pytest.raises(ModelError, match="cannot load it"):
        sparse_head(bad, 32)
    splade = shutil.copytree(splade_dirs["relu"], tmp_path / "splade")
    cfg = splade / "1_SpladePooling" / "config.json"
    cfg.write_text(json.dumps({"pooling_strategy": "max", "activation_function": "relu", "embedding_dimension": 7}))
    with pytest.raises(ModelError, match="declares 7 dimensions but the model's vocabulary has"):
        sparse_head(splade, 32)
    cfg.write_text(json.dumps({"pooling_strategy": "mean"}))
    with pytest.raises(ModelError, match="pooling_strategy 'mean'"):
        sparse_head(splade, 32)
    modules = json.loads((splade / "modules.json").read_text())
    (splade / "modules.json").write_text(
        json.dumps([*modules, {"idx": 2, "name": "2", "path": "", "type": "x.Router"}])
    )
    with pytest.raises(ModelError, match="Router"):
        sparse_head(splade, 32)
    assert len(WORDS) > 50


def test_runs_from_the_cli_and_refuses_a_model_without_a_sparse_head(
    tiny_model_dir, splade_dirs, bgem3_dir, small_beir, tmp_path, capsys
) -> None:
    from evalsuite.cli import main
    from evalsuite.testing.builders import run_argv

    out = tmp_path / "none"
    assert main(run_argv(tiny_model_dir, small_beir, "--retrieval", "sparse", out=out)) == 2
    assert "no sparse head" in capsys.readouterr().err and not out.exists()
    out = tmp_path / "splade"
    assert main(run_argv(splade_dirs["relu"], small_beir, "--retrieval", "sparse", "--sparse-top-k", "8", out=out)) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["contract"]["retrieval"] == "sparse:top_k=8"
    # what its inverted index holds per document: at most the 8 weights kept, 8 bytes a posting (id and weight)
    held = manifest["retrieval"]["sparse"]
    assert 1 <= held["active_per_document"] <= 8
    assert held["index_bytes_per_document"] == pytest.approx(8 * held["active_per_document"], abs=0.02)
    out = tmp_path / "hybrid"
    argv = run_argv(bgem3_dir, small_beir, "--retrieval", "hybrid", "--fuse", "dense,sparse", out=out)
    assert main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["contract"]["retrieval"] == "hybrid:fuse=dense+sparse,fusion=rrf,k=60,depth=100,top_k=0"
    # a SPLADE model has no dense pooling: a dense run is refused with what to do
    assert main(run_argv(splade_dirs["relu"], small_beir, out=tmp_path / "dense")) == 2
    assert "--retrieval sparse" in capsys.readouterr().err
