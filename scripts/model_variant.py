#!/usr/bin/env python3
"""A deliberately broken copy of a sentence-transformers model directory, for a canary fire drill.

    python scripts/model_variant.py SRC DEST --pooling cls        # the server will pool with [CLS]
    python scripts/model_variant.py SRC DEST --no-normalize       # the server will not normalize

Serve DEST (e.g. `bash .ci/infinity.sh serve .infinity-venv DEST 8001 --served-model-name NAME`) and run
`evalsuite canary` against it: it must fail and name the cause. Only the sentence-transformers configuration
changes (`1_Pooling/config.json`, `modules.json`); the weights are copied as they are. Engines that ignore the
sentence-transformers pooling config (vLLM reads it; Infinity's torch engine reads it; some do not) need their own
flag instead: docs/engines.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

MODES = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "last": "pooling_mode_lasttoken",
    "max": "pooling_mode_max_tokens",
}


def make_variant(src: Path, dest: Path, *, pooling: str | None = None, normalize: bool = True) -> Path:
    """Copy ``src`` to ``dest`` with another pooling and/or without the Normalize module."""
    if not (src / "modules.json").is_file():
        raise SystemExit(f"{src}: not a sentence-transformers model directory (no modules.json)")
    if dest.exists():
        raise SystemExit(f"{dest}: exists; pass a new directory")
    shutil.copytree(src, dest)
    if pooling is not None:
        path = dest / "1_Pooling" / "config.json"
        cfg = json.loads(path.read_text(encoding="utf-8"))
        cfg.update({key: name == pooling for name, key in MODES.items()})
        path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    if not normalize:
        path = dest / "modules.json"
        modules = json.loads(path.read_text(encoding="utf-8"))
        kept = [m for m in modules if not str(m.get("type", "")).endswith("Normalize")]
        path.write_text(json.dumps(kept, indent=2) + "\n", encoding="utf-8")
    return dest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src", type=Path, help="a sentence-transformers model directory")
    p.add_argument("dest", type=Path, help="the new directory (must not exist)")
    p.add_argument("--pooling", choices=sorted(MODES), help="the pooling the copy declares")
    p.add_argument("--no-normalize", action="store_true", help="drop the Normalize module")
    args = p.parse_args(argv)
    if args.pooling is None and not args.no_normalize:
        p.error("nothing to change: pass --pooling and/or --no-normalize")
    out = make_variant(args.src, args.dest, pooling=args.pooling, normalize=not args.no_normalize)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
