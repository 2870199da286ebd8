"""`evalsuite run --endpoint URL [--endpoint URL ...]`: a served fleet as the encoder.

Two fault servers on loopback (real HTTP, each serving the tiny model's real vectors) form the fleet; the
local reference run is the independent computation every served result is compared against.
"""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from evalsuite.cli import main
from evalsuite.run.pipeline import run
from evalsuite.run.spec import RunSpec
from evalsuite.testing.builders import run_argv

from .conftest import API_KEY_ENV
from .fault_server import FaultServer

TOLERANCE = 0.005  # the canary's default max |delta| of a metric


def spec_of(tiny_model_dir, dataset, *urls: str, **kw):
    kw.setdefault("use_cache", False)
    return RunSpec(model=str(tiny_model_dir), dataset=str(dataset), device="cpu", endpoints=tuple(urls), **kw)


def dataset_bodies(server: FaultServer) -> list[dict]:
    """The embeddings requests a server got, less the fleet's member check (its probe texts)."""
    from evalsuite.encode.fleet_check import PROBES

    probes = [t for _, t in PROBES]
    return [body for body in server.bodies if body["input"] != probes]


def inputs(server: FaultServer) -> list[str]:
    return [t for body in dataset_bodies(server) for t in body["input"]]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_two_servers_share_the_batches_and_match_one_server_and_the_local_run(
    fault_server, second_server, tiny_model_dir, canary_dataset
):
    local = run(spec_of(tiny_model_dir, canary_dataset))
    fleet = run(
        spec_of(
            tiny_model_dir,
            canary_dataset,
            fault_server.url,
            second_server.url,
            endpoint_batch_size=2,
            endpoint_concurrency=1,
        )
    )
    a, b = inputs(fault_server), inputs(second_server)
    assert a and b, "both servers of the fleet serve requests"
    n_texts = len(local.dataset.query_ids) + len(local.dataset.doc_ids)
    assert len(a) + len(b) == n_texts  # every text sent once, to one of them
    assert all(len(body["input"]) <= 2 for body in dataset_bodies(fault_server) + dataset_bodies(second_server))
    for key, value in local.metrics.items():
        assert abs(fleet.metrics[key] - value) <= TOLERANCE, key
    # rows come back in input order: each vector is the local one of the same text
    assert cosines(fleet.query_vectors, local.query_vectors).min() >= 0.9999
    assert cosines(fleet.doc_vectors, local.doc_vectors).min() >= 0.9999
    enc = fleet.manifest["encoder"]
    assert enc["kind"] == "endpoint" and enc["served_model"] == "tiny-model"
    assert enc["urls"] == [fault_server.url, second_server.url]
    assert enc["batches"] == {
        fault_server.url: len(dataset_bodies(fault_server)),
        second_server.url: len(dataset_bodies(second_server)),
    }
    assert len(fault_server.bodies) == len(dataset_bodies(fault_server)) + 1  # one member-check request each
    fault_server.bodies.clear()
    single = run(spec_of(tiny_model_dir, canary_dataset, fault_server.url, endpoint_batch_size=2))
    assert len(inputs(fault_server)) == n_texts
    assert single.metrics == pytest.approx(fleet.metrics, abs=1e-9)
    assert fleet.ranking == single.ranking
    assert local.manifest["encoder"] == {"kind": "local"}
    assert fleet.manifest["contract"] == local.manifest["contract"]  # the contract still governs


def test_servers_serving_different_models_exit_2_naming_both(
    fault_server, second_server, tiny_model_dir, canary_dataset, tmp_path, capsys
):
    second_server.listed = ["other-model"]
    rc = main(
        run_argv(
            str(tiny_model_dir),
            str(canary_dataset),
            "--out",
            str(tmp_path / "out"),
            "--endpoint",
            fault_server.url,
            "--endpoint",
            second_server.url,
        )
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "serve different models" in err
    assert f"{fault_server.url} serves 'tiny-model'" in err and f"{second_server.url} serves 'other-model'" in err
    assert not fault_server.bodies and not second_server.bodies  # checked before any text is sent


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_a_member_that_is_down_or_keeps_failing_stops_the_run_naming_it(
    fault_server, second_server, tiny_model_dir, canary_dataset, tmp_path, capsys
):
    down = _closed_port_url()
    args = run_argv(str(tiny_model_dir), str(canary_dataset), "--out", str(tmp_path / "out"), "--endpoint-timeout", "5")
    assert main([*args, "--endpoint", fault_server.url, "--endpoint", down]) == 2
    err = capsys.readouterr().err
    assert down in err and "refused" in err.lower()
    second_server.fail_first = [503] * 100  # answers /v1/models, then every embeddings request fails
    assert (
        main(
            [
                *args,
                "--endpoint",
                fault_server.url,
                "--endpoint",
                second_server.url,
                "--endpoint-batch-size",
                "1",
                "--endpoint-concurrency",
                "1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert f"fleet member {second_server.url} failed" in err and "HTTP 503" in err
    assert len(second_server.bodies) >= 4  # its retries were used first (1 + 3)
    assert not (tmp_path / "out" / "results.json").exists()


def test_the_api_key_reaches_every_member_and_is_never_printed(
    fault_server, second_server, api_key, tiny_model_dir, canary_dataset, tmp_path, capsys
):
    for s in (fault_server, second_server):
        s.api_key = api_key
    out = tmp_path / "out"
    base = run_argv(
        str(tiny_model_dir),
        str(canary_dataset),
        "--out",
        str(out),
        "--endpoint",
        fault_server.url,
        "--endpoint",
        second_server.url,
        "--endpoint-batch-size",
        "2",
    )
    assert main([*base, "--api-key-env", API_KEY_ENV]) == 0
    printed = "".join(capsys.readouterr())
    assert fault_server.headers and second_server.headers  # a call of few batches still reaches every member
    assert all(h.get("Authorization") == f"Bearer {api_key}" for h in fault_server.headers + second_server.headers)
    written = "".join(p.read_text() for p in out.iterdir())
    assert api_key not in printed and api_key not in written
    assert "served   tiny-model at" in printed
    second_server.echo_auth_status = 400  # an error body that quotes the key back
    assert main([*base, "--api-key-env", API_KEY_ENV]) == 2
    err = capsys.readouterr().err
    assert f"fleet member {second_server.url} failed" in err and api_key not in err


def test_a_warm_rerun_sends_no_embeddings_and_served_vectors_never_meet_local_ones(
    fault_server, second_server, tiny_model_dir, canary_dataset, tmp_path
):
    cache = str(tmp_path / "cache")
    urls = (fault_server.url, second_server.url)
    cold = run(spec_of(tiny_model_dir, canary_dataset, *urls, use_cache=True, cache_dir=cache))
    sent = len(fault_server.bodies) + len(second_server.bodies)
    assert sent > 0 and cold.timing["cache"]["hits"] == 0
    warm = run(spec_of(tiny_model_dir, canary_dataset, *reversed(urls), use_cache=True, cache_dir=cache))
    assert len(fault_server.bodies) + len(second_server.bodies) == sent  # the same deployment: all from the cache
    assert warm.metrics == cold.metrics and warm.timing["cache"]["misses"] == 0
    assert warm.manifest["encoder"]["kind"] == "endpoint"  # who made the cached vectors, still said
    # the same cache, the local reference: nothing served is reused, and what it stores stays apart
    local = run(spec_of(tiny_model_dir, canary_dataset, use_cache=True, cache_dir=cache))
    assert local.timing["cache"]["hits"] == 0
    only_one = run(spec_of(tiny_model_dir, canary_dataset, fault_server.url, use_cache=True, cache_dir=cache))
    assert only_one.timing["cache"]["hits"] == 0  # another deployment (one URL of the two) is another source
    keys = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("key.json")]
    assert sorted(k.get("source", "local")[:8] for k in keys) == sorted(["endpoint"] * 4 + ["local"] * 2)


def test_cache_key_of_local_vectors_is_unchanged_and_served_ones_differ():
    import hashlib
    from dataclasses import replace

    from evalsuite.encode.cache import ShardKey

    key = ShardKey("r" * 40, "t" * 40, "float32", 64, "truncate", "mean", "document", 32)
    before = {
        "model_revision": "r" * 40,
        "tokenizer_revision": "t" * 40,
        "dtype": "float32",
        "max_length": 64,
        "truncation": "truncate",
        "pooling": "mean",
        "role": "document",
        "dim": 32,
    }
    assert key.digest() == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()[:32]
    served = replace(key, source="endpoint m at http://a/v1")
    assert served.digest() != key.digest() != replace(key, source="endpoint m at http://b/v1").digest()


def test_dim_is_cut_here_unless_the_server_is_asked_for_it(fault_server, tiny_model_dir, canary_dataset):
    local = run(spec_of(tiny_model_dir, canary_dataset, dim=16))
    cut_here = run(spec_of(tiny_model_dir, canary_dataset, fault_server.url, dim=16))
    assert all("dimensions" not in body for body in fault_server.bodies)
    fault_server.bodies.clear()
    asked = run(spec_of(tiny_model_dir, canary_dataset, fault_server.url, dim=16, endpoint_dimensions=True))
    assert fault_server.bodies and all(body["dimensions"] == 16 for body in fault_server.bodies)
    assert asked.manifest["encoder"]["dimensions_requested"] == 16
    blockwise = run(
        spec_of(tiny_model_dir, canary_dataset, fault_server.url, dim=16, endpoint_dimensions=True, chunk_size=3)
    )  # served 16-column vectors stored chunk by chunk, searched block-wise
    assert blockwise.metrics == pytest.approx(asked.metrics, abs=1e-6)
    # the same documents in the same order; scores agree to float32 rounding (requests of 3 texts and block-wise
    # products sum in another order than the whole-batch run, so the last bit may differ)
    assert blockwise.ranking.doc_ids == asked.ranking.doc_ids
    for qid, scores in asked.ranking.scores.items():
        assert blockwise.ranking.scores[qid] == pytest.approx(scores, abs=1e-6), qid
    for result in (cut_here, asked):
        assert result.query_vectors.shape[1] == 16
        assert cosines(result.doc_vectors, local.doc_vectors).min() >= 0.9999
        for key, value in local.metrics.items():
            assert abs(result.metrics[key] - value) <= TOLERANCE


def test_run_endpoint_options_are_the_canary_client_options(tiny_model_dir):
    from evalsuite.canary.embedding.options import CANARY_OPTIONS
    from evalsuite.cli import build_parser
    from evalsuite.run.options import CLIENT, RUN_ENDPOINT_OPTIONS

    canary = {o.flag: o for o in CANARY_OPTIONS}
    for opt in RUN_ENDPOINT_OPTIONS:
        if opt.flag in CLIENT:
            assert opt.kwargs is canary[opt.flag].kwargs and opt.default == canary[opt.flag].default
    args = build_parser().parse_args(
        [
            "run",
            "--endpoint",
            "http://127.0.0.1:1/v1/embeddings/",
            "--endpoint",
            "http://127.0.0.1:2",
            "--endpoint-concurrency",
            "2",
        ]
    )
    assert args.endpoints == ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--endpoint", "ftp://x"])
    from evalsuite.base.errors import SpecError
    from evalsuite.run.pipeline import prepare

    with pytest.raises(SpecError, match=r"--endpoint-batch-size.*no --endpoint URL"):
        prepare(RunSpec(model=str(tiny_model_dir), endpoint_batch_size=4))
    spec = RunSpec.from_mapping({"endpoints": "http://127.0.0.1:1/v1"}, source="spec.json")
    assert spec.endpoints == ("http://127.0.0.1:1/v1",)
    with pytest.raises(Exception, match="more than once"):
        from evalsuite.encode.fleet import FleetConfig

        FleetConfig(urls=("http://127.0.0.1:1/v1", "http://127.0.0.1:1/v1/"))


@pytest.mark.parametrize("fault", ["cls", "unnormalized"])
def test_a_member_serving_another_contract_stops_the_run_named_before_any_dataset_text(
    fault_server, second_server, third_server, tiny_model_dir, canary_dataset, tmp_path, capsys, fault
):
    from .fault_server import Replica

    third_server.replica = Replica(1.0, fault)  # every request to this member: CLS pooling, or norm 1.7
    base = ["run", "--model", str(tiny_model_dir), "--dataset", str(canary_dataset), "--device", "cpu"]
    base += ["--no-cache", "--out", str(tmp_path / "out")]
    members = [fault_server.url, second_server.url, third_server.url]
    rc = main([*base, *(a for u in members for a in ("--endpoint", u))])
    err = capsys.readouterr().err
    assert rc == 2, err
    named = {  # an unnormalized member breaks the response checks already; a CLS one only the comparison
        "cls": f"fleet member(s) {third_server.url} disagree with the others on 4 probe texts",
        "unnormalized": f"fleet member {third_server.url} failed: item #0 ",
    }[fault]
    assert named in err  # only the third member named
    assert not inputs(fault_server) and not inputs(second_server) and not inputs(third_server)
    if fault == "cls":  # two members: neither can be blamed from the vectors alone; both are named
        rc = main([*base, "--endpoint", fault_server.url, "--endpoint", third_server.url])
        err = capsys.readouterr().err
        assert rc == 2 and f"one of {fault_server.url} and {third_server.url} serves another contract" in err
    # a faithful fleet of three runs
    third_server.replica = None
    assert main([*base, *(a for u in members for a in ("--endpoint", u))]) == 0
