"""The spec file every job reads its settings from: `evalsuite.toml`, or `[tool.evalsuite]` of `pyproject.toml`
(gating/plan.py says what it holds), found and read with typed errors naming the file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .errors import SpecError


def find_spec_file(start: Path, explicit: str | None = None) -> tuple[Path, dict[str, object]] | None:
    """The spec named by ``explicit``; else `evalsuite.toml` in ``start``, else `[tool.evalsuite]` of
    `pyproject.toml` there."""
    if explicit:
        path = (start / explicit).resolve()
        if not path.is_file():
            raise SpecError(f"--evalsuite-spec {explicit}: file not found")
        return path, load_spec_file(path)
    for name in ("evalsuite.toml", "pyproject.toml"):
        path = start / name
        if path.is_file():
            settings = load_spec_file(path)
            if settings:
                return path, settings
    return None


def load_spec_file(path: Path) -> dict[str, object]:
    """Settings of a spec file: the whole `evalsuite.toml`, or `[tool.evalsuite]` of a pyproject."""
    data = read_toml(path)
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool", {})
    settings = tool.get("evalsuite", {}) if isinstance(tool, dict) else {}
    if not isinstance(settings, dict):
        raise SpecError(f"{path}: [tool.evalsuite] must be a table of settings, got {type(settings).__name__}")
    return settings


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: invalid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}); save the spec file as UTF-8") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot be read ({exc.strerror or exc})") from None
