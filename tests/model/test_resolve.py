import json
import shutil

import pytest

from evalsuite.base.errors import ModelError, RevisionMismatch, SpecError
from evalsuite.model import directory_digest, resolve_model
from evalsuite.model.resolve import BUNDLED_NAME


def test_directory_revision_is_content_digest(tiny_model_dir, tmp_path):
    info = resolve_model(str(tiny_model_dir))
    assert info.revision == directory_digest(tiny_model_dir)
    assert info.declared_pooling == "mean" and info.declared_normalize is True
    assert info.hidden_size == 32 and info.default_max_length == 64 and info.max_positions == 128
    copy = shutil.copytree(tiny_model_dir, tmp_path / "copy")
    assert directory_digest(copy) == info.revision  # location does not matter
    (copy / "config.json").write_text((copy / "config.json").read_text().replace("}", ', "x": 1}', 1))
    assert directory_digest(copy) != info.revision


def test_pinned_revision_accepts_full_and_prefix(tiny_model_dir):
    rev = directory_digest(tiny_model_dir)
    assert resolve_model(str(tiny_model_dir), revision=rev).revision == rev
    assert resolve_model(str(tiny_model_dir), revision=rev[:12]).revision == rev


def test_wrong_revision_names_both(tiny_model_dir):
    rev = directory_digest(tiny_model_dir)
    with pytest.raises(RevisionMismatch) as err:
        resolve_model(str(tiny_model_dir), revision="deadbeef" * 8)
    assert "deadbeef" in str(err.value) and rev in str(err.value)


def test_wrong_tokenizer_revision(tiny_model_dir):
    with pytest.raises(RevisionMismatch, match="tokenizer revision"):
        resolve_model(str(tiny_model_dir), tokenizer_revision="0" * 64)


def test_plain_transformers_layout(make_tiny_bert, tmp_path):
    d = make_tiny_bert(tmp_path / "plain", sentence_transformers_layout=False)
    info = resolve_model(str(d))
    assert info.declared_pooling is None and info.declared_normalize is None
    assert info.default_max_length == 128


def test_unsupported_module_is_refused(tiny_model_dir, tmp_path):
    d = shutil.copytree(tiny_model_dir, tmp_path / "lstm")
    modules = json.loads((d / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_LSTM", "type": "sentence_transformers.models.LSTM"})
    (d / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelError, match=r"'sentence_transformers.models.LSTM' is not supported.*--endpoint"):
        resolve_model(str(d))


def test_hub_cache_resolution_offline(tiny_model_dir, tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    repo = cache / "models--acme--tiny"
    commit_a, commit_b = "a" * 40, "b" * 40
    for c in (commit_a, commit_b):
        shutil.copytree(tiny_model_dir, repo / "snapshots" / c)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit_b)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert resolve_model("acme/tiny").revision == commit_b
    pinned = resolve_model("acme/tiny", revision=commit_a)
    assert pinned.revision == commit_a and pinned.root.name == commit_a
    assert resolve_model("acme/tiny", revision="aaaaaaaa").revision == commit_a
    with pytest.raises(RevisionMismatch) as err:
        resolve_model("acme/tiny", revision="c" * 40)
    assert "c" * 40 in str(err.value) and commit_b in str(err.value)
    with pytest.raises(SpecError, match=r"not an immutable commit.*currently points to"):
        resolve_model("acme/tiny", revision="main")
    with pytest.raises(ModelError, match="never downloads"):
        resolve_model("acme/absent")


def test_bundled_default():
    info = resolve_model(None)
    assert info.name == BUNDLED_NAME
    assert info.hidden_size == 384 and info.declared_pooling == "mean" and info.default_max_length == 256


def test_missing_model():
    with pytest.raises(ModelError, match="no such directory"):
        resolve_model("./no/such/dir/at/all")


def test_hub_tokenizer_revision_other_than_the_models(tiny_model_dir, tmp_path, monkeypatch):
    """--tokenizer-rev names another snapshot: the tokenizer is loaded from there and the contract says so."""
    from evalsuite.encode.local import LocalEncoder

    cache = tmp_path / "hub"
    repo = cache / "models--acme--tiny"
    model_commit, tok_commit = "a" * 40, "b" * 40
    for c in (model_commit, tok_commit):
        shutil.copytree(tiny_model_dir, repo / "snapshots" / c)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(model_commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    info = resolve_model("acme/tiny", revision=model_commit, tokenizer_revision=tok_commit)
    assert (info.revision, info.tokenizer_revision) == (model_commit, tok_commit)
    assert info.path.is_relative_to(repo / "snapshots" / model_commit)
    assert info.tokenizer_path.is_relative_to(repo / "snapshots" / tok_commit)
    enc = LocalEncoder(info, device="cpu", max_length=16)
    enc.encode(["bread"], poolings=["mean"])
    assert str(repo / "snapshots" / tok_commit) in str(enc.tokenizer.name_or_path)
    with pytest.raises(RevisionMismatch, match="tokenizer revision"):
        resolve_model("acme/tiny", revision=model_commit, tokenizer_revision="c" * 40)
