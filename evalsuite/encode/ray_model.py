"""How the pinned model reaches a Ray actor on a node that may not share the driver's disk.

Three ways, one per :class:`ModelSource` mode, each verified on the actor by the sha256 of the directory it
loads (``directory_digest``: relative paths and bytes) against the digest the driver pinned:

* ``driver-path`` (the default): the actor reads the driver's own path; a node that does not have it is
  refused by name, with what to do (``--ray-ship-model`` or ``--ray-model-path``);
* ``shared-path`` (``--ray-model-path DIR``): every node reads ``DIR``, e.g. on a shared filesystem;
* ``shipped`` (``--ray-ship-model``): the driver packs the model's files (weights, tokenizer, heads) once
  into Ray's object store; each node writes them once to a directory named by their digest under its
  temporary directory, and every actor of that node loads from there.

Ray is not imported here; :func:`node_identity` asks the actor's runtime context when called on an actor.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ExecutorError
from ..model import ModelInfo
from ..model.resolve import _content_files, directory_digest

MODES = ("driver-path", "shared-path", "shipped")
SHIP_DIR = "evalsuite-ray-models"  # under the node's temporary directory, one subdirectory per digest


@dataclass(frozen=True)
class ModelSource:
    """Where actors find the model and the sha256 it must have (``digest`` of ``info.root``, ``tokenizer_digest``
    of ``info.tokenizer_path`` when that lies outside the root, as a hub tokenizer revision may)."""

    info: ModelInfo
    digest: str
    mode: str = "driver-path"
    shared_path: str | None = None
    tokenizer_digest: str | None = None

    @classmethod
    def pin(cls, info: ModelInfo, *, ship: bool = False, shared_path: str | None = None) -> ModelSource:
        """The driver's side: the digests actors will verify (a directory's revision is already its digest)."""
        if ship and shared_path:
            raise ExecutorError("--ray-ship-model and --ray-model-path exclude each other: choose one")
        digest = info.revision if info.source != "hub-cache" else directory_digest(info.root)
        tok = None if _inside(info.tokenizer_path, info.root) else directory_digest(info.tokenizer_path)
        mode = "shipped" if ship else "shared-path" if shared_path else "driver-path"
        return cls(info, digest, mode, shared_path, tok)

    def describe(self) -> str:
        return {
            "driver-path": f"the driver's path {self.info.root}",
            "shared-path": f"--ray-model-path {self.shared_path}",
            "shipped": "the object store (--ray-ship-model)",
        }[self.mode]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def pack(source: ModelSource) -> dict[str, bytes]:
    """The files actors need, read once on the driver: ``model/<rel>`` and, outside the root, ``tokenizer/<rel>``."""
    out: dict[str, bytes] = {}
    trees = [("model", source.info.root)]
    if source.tokenizer_digest is not None:
        trees.append(("tokenizer", source.info.tokenizer_path))
    for prefix, root in trees:
        for p in _content_files(root):
            out[f"{prefix}/{p.relative_to(root).as_posix()}"] = p.read_bytes()
    return out


def node_identity() -> tuple[str, str]:
    """(node id, address) of the Ray node this code runs on (outside Ray: this host)."""
    import ray

    if not ray.is_initialized():
        import socket

        return "local", socket.gethostname()
    return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]


def _where() -> str:
    node_id, address = node_identity()
    return f"node {node_id[:12]} ({address})"


def _verify(directory: Path, expected: str, what: str) -> None:
    if not directory.is_dir():
        raise ExecutorError(f"{_where()}: {what} {directory} is not a directory on this node")
    found = directory_digest(directory)
    if found != expected:
        raise ExecutorError(
            f"{_where()}: the model at {directory} has sha256 {found[:16]}..., not the pinned revision's "
            f"{expected[:16]}... ({what}); give every node the same files, or --ray-ship-model to send the driver's"
        )


def remap(info: ModelInfo, root: Path, tokenizer: Path | None = None) -> ModelInfo:
    """``info`` with every path under its root moved under ``root`` (and its tokenizer to ``tokenizer``)."""

    def move(p: Path) -> Path:
        return root / p.relative_to(info.root) if _inside(p, info.root) else p

    heads = tuple(dataclasses.replace(d, path=move(d.path), weights=move(d.weights)) for d in info.dense)
    return dataclasses.replace(
        info,
        root=root,
        path=move(info.path),
        tokenizer_path=tokenizer if tokenizer is not None else move(info.tokenizer_path),
        dense=heads,
    )


def _unpack(files: dict[str, bytes], digest: str) -> Path:
    """Write the shipped files once per node under ``<tmp>/evalsuite-ray-models/<digest>`` (renamed into place
    whole, so a concurrent actor of the same node sees all of it or none) and return that directory."""
    base = Path(tempfile.gettempdir()) / SHIP_DIR
    final = base / digest[:32]
    if final.is_dir():
        if directory_digest(final / "model") == digest:
            return final
        shutil.rmtree(final, ignore_errors=True)  # left by an earlier, different package: written again
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=base))
    for rel, data in files.items():
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    try:
        os.rename(staging, final)
    except OSError:  # another actor of this node put it there first
        shutil.rmtree(staging, ignore_errors=True)
    return final


def locate(source: ModelSource, files: dict[str, bytes] | None = None) -> ModelInfo:
    """The actor's side: the model's :class:`ModelInfo` on this node, its files checked against the pinned
    digests; :class:`ExecutorError` naming the node and what to do when they are missing or differ."""
    info = source.info
    if source.mode == "shipped":
        if files is None:
            raise ExecutorError(f"{_where()}: the model was to be shipped but no files arrived")
        where = _unpack(files, source.digest)
        tok = where / "tokenizer" if source.tokenizer_digest is not None else None
        _verify(where / "model", source.digest, "the shipped model")
        if tok is not None and source.tokenizer_digest is not None:
            _verify(tok, source.tokenizer_digest, "the shipped tokenizer")
        return remap(info, where / "model", tok)
    if source.mode == "shared-path":
        root = Path(source.shared_path or "")
        _verify(root, source.digest, "--ray-model-path")
        return remap(info, root)
    if not info.root.is_dir():
        raise ExecutorError(
            f"{_where()} cannot read the model at the driver's path {info.root}; pass --ray-ship-model to send it "
            "through Ray's object store, or --ray-model-path DIR where every node has the same files"
        )
    _verify(info.root, source.digest, "the driver's path")
    if source.tokenizer_digest is not None:
        _verify(info.tokenizer_path, source.tokenizer_digest, "the driver's tokenizer path")
    return info
