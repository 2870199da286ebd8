"""What a sentence-transformers directory declares in ``modules.json`` and its modules' configs.

The reference encoder runs four module kinds: Transformer, Pooling, Dense and Normalize. Both forms of a
Pooling config are read: the per-mode booleans (``pooling_mode_mean_tokens: true``, sentence-transformers
before 5) and the single key (``"pooling_mode": "lasttoken"``, what current sentence-transformers saves). A
pooling declaration that cannot be run (none, several modes, an unknown name) is not an error here: it is kept
as :attr:`StLayout.pooling_problem` and refused only when nothing (``--pooling``) overrides it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import ModelError

# sentence-transformers' pooling mode names -> the contract's names
ST_POOLING_NAMES = {
    "cls": "cls",
    "mean": "mean",
    "lasttoken": "last",
    "max": "max",
    "mean_sqrt_len_tokens": "mean_sqrt_len",
    "weightedmean": "weightedmean",
}
LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_lasttoken": "last",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}
# torch activation modules a Dense head may name (its ``activation_function``), by class name
DENSE_ACTIVATIONS = ("Identity", "Tanh", "ReLU", "GELU", "Sigmoid", "SiLU")
RUNS = "Transformer, Pooling, Dense and Normalize"
_ELSEWHERE = (
    "serve the model with sentence-transformers itself (e.g. behind Infinity) and evaluate it with "
    "--endpoint URL, or save it without that module"
)


@dataclass(frozen=True)
class DenseHead:
    """One ``Dense`` module after pooling: ``activation(x @ W.T + b)`` (plus ``x`` or a projection of it with
    ``use_residual``); ``digest`` is sha256 over its config and weight files."""

    path: Path
    in_features: int
    out_features: int
    bias: bool
    activation: str
    use_residual: bool
    weights: Path
    digest: str


@dataclass(frozen=True)
class StLayout:
    transformer: Path
    pooling: str | None = None
    pooling_problem: str | None = None  # why the declared pooling cannot be run (None: it can, or none declared)
    include_prompt: bool = True
    normalize: bool | None = None
    max_length: int | None = None
    dense: tuple[DenseHead, ...] = ()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{path}: missing (modules.json names this module)") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object")
    return data


def read_pooling(cfg_file: Path) -> tuple[str | None, str | None, bool]:
    """``(pooling, problem, include_prompt)`` of a Pooling config in either form; exactly one of pooling and
    problem is set."""
    cfg = _read_json(cfg_file)
    include_prompt = cfg.get("include_prompt", True) is not False
    raw = cfg.get("pooling_mode")
    if raw is not None:
        modes = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else [raw]
        names = [ST_POOLING_NAMES.get(m) if isinstance(m, str) else None for m in modes]
        if len(names) == 1 and names[0] is not None:
            return names[0], None, include_prompt
        what = f"pooling_mode {raw!r}"
    else:
        found = [name for key, name in LEGACY_POOLING_KEYS.items() if cfg.get(key)]
        if len(found) == 1:
            return found[0], None, include_prompt
        what = f"pooling modes {found}"
    problem = (
        f"{cfg_file}: declares {what}; evalsuite's reference encoder runs exactly one of "
        f"{', '.join(ST_POOLING_NAMES)} (sentence-transformers' names); pass --pooling "
        f"{'|'.join(dict.fromkeys(ST_POOLING_NAMES.values()))} to choose one"
    )
    return None, problem, include_prompt


def _file_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def read_dense(sub: Path) -> DenseHead:
    cfg_file = sub / "config.json"
    cfg = _read_json(cfg_file)
    weights = next((sub / n for n in ("model.safetensors", "pytorch_model.bin") if (sub / n).is_file()), None)
    if weights is None:
        raise ModelError(f"{sub}: a Dense module without weights (model.safetensors or pytorch_model.bin)")
    activation = str(cfg.get("activation_function") or "torch.nn.modules.activation.Tanh").rsplit(".", 1)[-1]
    if activation not in DENSE_ACTIVATIONS:
        raise ModelError(
            f"{cfg_file}: activation_function {cfg.get('activation_function')!r} is not one the reference encoder "
            f"runs ({', '.join(DENSE_ACTIVATIONS)}); {_ELSEWHERE}"
        )
    for key in ("module_input_name", "module_output_name"):
        if cfg.get(key, "sentence_embedding") != "sentence_embedding":
            raise ModelError(f"{cfg_file}: {key} {cfg[key]!r}: a Dense head on token vectors is not run; {_ELSEWHERE}")
    try:
        return DenseHead(
            path=sub,
            in_features=int(cfg["in_features"]),
            out_features=int(cfg["out_features"]),
            bias=bool(cfg.get("bias", True)),
            activation=activation,
            use_residual=bool(cfg.get("use_residual", False)),
            weights=weights,
            digest=_file_digest([cfg_file, weights]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{cfg_file}: in_features and out_features must be integers ({exc})") from None


def st_layout(root: Path) -> StLayout:
    """What ``root/modules.json`` declares (a plain transformers directory: the root, nothing declared).
    A module kind the reference cannot run is refused, naming it and what would run it."""
    modules_file = root / "modules.json"
    if not modules_file.is_file():
        return StLayout(root)
    try:
        modules = json.loads(modules_file.read_text())
    except json.JSONDecodeError as exc:
        raise ModelError(f"{modules_file}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    transformer, max_len = root, None
    pooling: str | None = None
    problem: str | None = None
    include_prompt, normalize = True, False
    dense: list[DenseHead] = []
    for m in modules:
        kind = str(m.get("type", "")).rsplit(".", 1)[-1]
        sub = root / m.get("path", "")
        if kind in ("Transformer", "MLMTransformer"):  # MLMTransformer: a SPLADE model's (its MLM head is sparse's)
            transformer = sub
            cfg = sub / "sentence_bert_config.json"
            if not cfg.is_file():
                cfg = root / "sentence_bert_config.json"
            if cfg.is_file():
                max_len = _read_json(cfg).get("max_seq_length")
        elif kind == "Pooling":
            pooling, problem, include_prompt = read_pooling(sub / "config.json")
        elif kind == "Dense":
            if pooling is None and problem is None:
                raise ModelError(f"{modules_file}: a Dense module before any Pooling (on token vectors); {_ELSEWHERE}")
            dense.append(read_dense(sub))
        elif kind == "Normalize":
            normalize = True
        elif kind == "SpladePooling":  # a learned sparse model: run by the sparse reference (model/sparse_layout.py)
            problem = problem or (
                f"{root}: a SPLADE model (SpladePooling) makes sparse vectors, not a dense one: evaluate it with "
                "--retrieval sparse (or fuse it: --retrieval hybrid --fuse sparse,bm25)"
            )
        else:
            raise ModelError(
                f"{modules_file}: module {m.get('type')!r} is not supported by the reference encoder ({RUNS} "
                f"are); {_ELSEWHERE}"
            )
    return StLayout(transformer, pooling, problem, include_prompt, normalize, max_len, tuple(dense))
