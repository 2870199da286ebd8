"""The bench scripts import their sibling modules by name (the script's folder is on ``sys.path`` when
run as ``python bench/gpu_check.py``): put ``bench/`` on the path for these tests the same way."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
