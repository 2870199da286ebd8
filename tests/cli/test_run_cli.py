import json

import pytest

from evalsuite.cli import main
from evalsuite.model import directory_digest
from evalsuite.testing.builders import run_argv


def test_model_rev_prints_directory_digest(tiny_model_dir, capsys):
    assert main(["model-rev", str(tiny_model_dir)]) == 0
    assert capsys.readouterr().out.strip() == directory_digest(tiny_model_dir)


def test_wrong_model_rev_fails_before_encoding(tiny_model_dir, small_beir, capsys, monkeypatch):
    import evalsuite.encode.local as local

    def forbidden(*a, **k):  # fault injection: encoding must not start
        raise AssertionError("encoder was constructed despite a wrong revision")

    monkeypatch.setattr(local.LocalEncoder, "__init__", forbidden)
    rc = main(["run", "--model", str(tiny_model_dir), "--model-rev", "f" * 64, "--dataset", str(small_beir)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "f" * 64 in err and directory_digest(tiny_model_dir) in err


def test_broken_json_line_names_file_and_line(tiny_model_dir, small_beir, capsys):
    lines = (small_beir / "corpus.jsonl").read_text().splitlines()
    lines[3] = lines[3][:-5]
    (small_beir / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    rc = main(["run", "--model", str(tiny_model_dir), "--dataset", str(small_beir)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "corpus.jsonl:4: invalid JSON" in err


def test_bad_option_values_are_rejected_at_parse_time(capsys):
    for argv, needle in (
        (["run", "--pooling", "median"], "invalid choice"),
        (["run", "--max-length", "1"], "must be >= 2"),
        (["run", "--metrics", "ndcg@10,bogus@3"], "not a ranx metric"),
        (["run", "--device", "tpu"], "not a device"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert needle in capsys.readouterr().err


def test_run_writes_reports(tiny_model_dir, small_beir, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(
        [
            "run",
            "--model",
            str(tiny_model_dir),
            "--dataset",
            str(small_beir),
            "--out",
            str(out),
            "--metrics",
            "ndcg@10,recall@5,mrr@10",
            "--dim",
            "16",
            "--device",
            "cpu",
            "--no-cache",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "report.md", "results.json", "run.trec"]
    res = json.loads((out / "results.json").read_text())
    assert res["schema_version"] == 2 and "reranked" not in res
    assert set(res["metrics"]) == {"ndcg@10", "recall@5", "mrr@10"}
    assert set(res["per_query"]["ndcg@10"]) == {"q1", "q2", "q3"}
    assert res["dataset"]["counts"]["queries_dropped_no_relevant"] == 1
    assert res["manifest"]["contract"]["dim"] == 16
    assert res["manifest"]["contract"]["model_revision"] == directory_digest(tiny_model_dir)
    assert {"torch", "faiss-cpu", "ranx", "transformers"} <= set(res["manifest"]["libraries"])
    timing = res["timing"]
    assert timing["documents"]["texts"] == 6 and timing["queries"]["tokens"] > 0
    assert {"encode_seconds", "search_seconds", "score_seconds"} <= set(timing)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["index"] == {
        "type": "IndexFlatIP",
        "spec": "flat",
        "similarity": "cosine",
        "dim": 16,
        "normalized": True,
        "vectors": 6,
        "dtype_stored": "float32",
    }
    trec = (out / "run.trec").read_text().splitlines()
    assert len(trec) == 3 * 6 and trec[0].split()[1] == "Q0" and trec[0].split()[3] == "1"
    assert "| ndcg@10 |" in (out / "report.md").read_text()
    assert not list(out.glob(".*.tmp"))


@pytest.mark.integration
def test_run_without_arguments_uses_bundled_defaults(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--device", "cpu", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "sentence-transformers/all-MiniLM-L6-v2" in out
    results = json.loads((tmp_path / "reports" / "minibeir" / "all-MiniLM-L6-v2" / "results.json").read_text())
    assert 0.2 < results["metrics"]["ndcg@10"] < 0.95


def test_warm_rerun_encodes_nothing(tiny_model_dir, small_beir, tmp_path, capsys):
    argv = run_argv(str(tiny_model_dir), str(small_beir), cache_dir=str(tmp_path / "cache"))
    assert main([*argv, "--out", str(tmp_path / "cold")]) == 0
    assert main([*argv, "--out", str(tmp_path / "warm")]) == 0
    cold = json.loads((tmp_path / "cold" / "results.json").read_text())
    warm = json.loads((tmp_path / "warm" / "results.json").read_text())
    assert cold["timing"]["cache"] == {"hits": 0, "misses": 9, "corrupt": 0}
    assert warm["timing"]["cache"] == {"hits": 9, "misses": 0, "corrupt": 0}
    assert warm["timing"]["documents"]["texts"] == 0 and warm["timing"]["queries"]["texts"] == 0
    assert warm["metrics"] == cold["metrics"]
    assert "9 / 0" in (tmp_path / "warm" / "report.md").read_text()
