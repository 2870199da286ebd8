"""What ``evalsuite --version`` prints: the installed distribution's version and where it runs from."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import __version__


def version_line() -> str:
    """``evalsuite 0.1.0 from /site-packages/evalsuite (python 3.11)``; a source tree that was never
    installed says so and reports the version its ``__init__`` declares (the one the build uses)."""
    where = Path(__file__).resolve().parents[1]  # the evalsuite package (this module is in its base/)
    py = f"python {sys.version_info.major}.{sys.version_info.minor}"
    try:
        version = metadata.version("evalsuite")
    except metadata.PackageNotFoundError:
        return f"evalsuite {__version__} from {where} (source tree, not installed; {py})"
    return f"evalsuite {version} from {where} ({py})"


class VersionAction(argparse.Action):
    """``--version``: computed only when asked, so other commands do not read package metadata."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()
