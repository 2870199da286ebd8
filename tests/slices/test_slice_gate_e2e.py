"""Through the plugin, with a real model, FAISS and ranx: a sweep cell that hurts one topic fails that topic's
gate while the average stays within its own gate.

The tiny random BERT reads "word" and "query" as one [UNK] token each, so a text's vector is a function of
its token count: on this length-coded dataset (document ``dN`` has N words, each query as many words as its
relevant document) it retrieves perfectly. The cell ``max_length=24`` cuts every text over 24 tokens, so the
documents of 23 words or more tie: only the long queries lose, and only the ``finance`` queries are long.
"""

import pytest

from evalsuite.model import directory_digest


@pytest.fixture(autouse=True)
def _model_stack(model_stack_loaded):
    """pytester runs in-process: load torch and ranx once, before the first run."""


@pytest.fixture
def coded(make_beir, tmp_path):
    short = [(n, ("sports", "music", "cooking", "databases")[i % 4]) for i, n in enumerate(list(range(1, 21)) * 10)]
    long = [(n, "finance") for n in range(30, 42)]
    queries = short + long
    docs = [{"_id": f"d{n:02d}", "title": "", "text": " ".join(["word"] * n)} for n in range(1, 61)]
    return make_beir(tmp_path / "coded", docs,
                     [{"_id": f"q{j:03d}", "text": " ".join(["query"] * n), "topic": t}
                      for j, (n, t) in enumerate(queries)],
                     [(f"q{j:03d}", f"d{n:02d}", 1) for j, (n, _) in enumerate(queries)])


class _KeepReport:
    report = None

    def pytest_unconfigure(self, config):
        from evalsuite.pytest_plugin import REPORT

        self.report = config.stash.get(REPORT, None)


def test_a_sweep_cell_that_hurts_one_topic_fails_its_gate(pytester, tiny_model_dir, coded):
    keep = _KeepReport()
    result = pytester.runpytest(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--model", str(tiny_model_dir),
        "--model-rev", directory_digest(tiny_model_dir), "--dataset", str(coded), "--no-cache", "--device", "cpu",
        "--vary", "max_length=24", "--gate", "ndcg@10:max_drop=0.1", "--gate", "ndcg@10[topic=finance]:max_drop=0.02",
        "--gate", "ndcg@10[topic=sports]:max_drop=0.02", plugins=[keep])
    assert result.ret == 1
    rows = {r["gate"]: r for r in keep.report.dataset("coded").results["gates"] if r["item"].startswith("sweep")}
    overall, finance, sports = (rows["ndcg@10:max_drop=0.1"], rows["ndcg@10[topic=finance]:max_drop=0.02"],
                                rows["ndcg@10[topic=sports]:max_drop=0.02"])
    assert overall["verdict"] == "pass" and -0.1 < overall["delta"] < -0.02  # the average holds its gate
    assert finance["verdict"] == "fail" and finance["slice_queries"] == 12 and finance["delta"] < -0.2
    assert finance["ci"]["upper_bound"] < -0.02 and finance["reference"] == pytest.approx(1.0)
    assert sports["verdict"] == "pass" and sports["delta"] == 0.0  # untouched topic
    # the dataset's mean drop is the finance slice's drop weighted by its share of the queries
    assert overall["delta"] == pytest.approx(finance["delta"] * 12 / 212, abs=1e-6)
    out = result.stdout.str()
    assert "sweep cell max_length=24 against the base contract:" in out
    assert "ndcg@10 on [topic=finance]: candidate" in out and "slice [topic=finance] has 12 queries" in out
