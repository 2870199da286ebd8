"""The embedding contract: everything that changes a vector, frozen in one value (``value.py``), and how a
request becomes one, every default resolved against what the model declares (``build.py``).

A contract is written into every result, manifest and baseline. Two results are
comparable only when their contracts agree on the fields that matter for the question.
"""

from __future__ import annotations

from .build import ContractRequest, build_contract, lineage, retrieval_of
from .value import DTYPES, POOLINGS, ROLES, SIMILARITIES, TRUNCATIONS, Contract

__all__ = [
    "DTYPES",
    "POOLINGS",
    "ROLES",
    "SIMILARITIES",
    "TRUNCATIONS",
    "Contract",
    "ContractRequest",
    "build_contract",
    "lineage",
    "retrieval_of",
]
