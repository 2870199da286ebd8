"""Files that ship inside the package, found through ``importlib.resources``.

The bundled dataset lives in ``evalsuite/bundled/minibeir`` (in a clone, a link to ``fixtures/minibeir``;
in a wheel or an sdist, a copy made at build time), so a clone, an editable install and an installed
wheel all find it the same way, from any working directory.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import SpecError

BUNDLED = "bundled"  # the --dataset value (and spec-file `path`) that names the bundled dataset
BUNDLED_DATASET = "minibeir"


def bundled_dataset_dir() -> Path:
    """The directory of the bundled dataset inside the installed package."""
    root = resources.files("evalsuite").joinpath(BUNDLED, BUNDLED_DATASET)
    if not isinstance(root, Path):  # a zip import: the dataset readers need files on disk
        raise SpecError(
            f"evalsuite is imported from an archive ({root}); the bundled dataset needs an installed "
            "package on disk: pip install the wheel, or pass --dataset DIR"
        )
    if not (root / "corpus.jsonl").is_file():
        raise SpecError(
            f"the bundled dataset is missing from this evalsuite installation ({root}); reinstall evalsuite "
            "(pip install --force-reinstall evalsuite-*.whl), or pass --dataset DIR"
        )
    return root


def dataset_dir(value: str | None) -> Path:
    """``value`` as a dataset directory: none or ``bundled`` is the bundled dataset."""
    return bundled_dataset_dir() if value is None or value == BUNDLED else Path(value)
