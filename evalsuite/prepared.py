"""Settings -> checked inputs: the pinned model, the contract and the loaded dataset, all before the first
forward pass (and where and how the reference encodes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .contract import Contract
from .datasets import Dataset, load_dataset
from .encode.executors import Execution
from .errors import SpecError
from .model import ModelInfo, resolve_model
from .resources import dataset_dir
from .spec import RunSpec, build_contract, check_endpoint_settings


@dataclass(frozen=True)
class Prepared:
    """Everything checked and loaded before the first forward pass."""

    spec: RunSpec
    model: ModelInfo
    contract: Contract
    dataset: Dataset


def prepare(spec: RunSpec) -> Prepared:
    """Resolve and pin the model (revision errors come here, before any encoding), load the dataset."""
    info = resolve_model(spec.model, revision=spec.model_rev, tokenizer_revision=spec.tokenizer_rev)
    contract = build_contract(spec, info)
    execution_of(spec)  # executor settings are checked before the dataset loads
    check_endpoint_settings(spec)
    if contract.index != "flat" and spec.chunk_size:
        raise SpecError(INDEX_IN_MEMORY.format(index=contract.index))
    dataset = load_dataset(
        dataset_dir(spec.dataset),
        spec.split,
        spec.qrels,
        empty_docs=spec.empty_docs,
        empty_queries=spec.empty_queries,
        on_disk=spec.chunk_size > 0,  # a chunked run reads the corpus texts from disk, chunk by chunk
        spool_dir=spec.store_dir,
    )
    return Prepared(spec, info, contract, dataset)


INDEX_IN_MEMORY = (
    "index {index!r} is built over the document vectors in memory; it cannot be combined with "
    "--chunk-size (block-wise exact search): drop one of the two"
)


def execution_of(spec: RunSpec) -> Execution:
    """Where and how the reference encodes, as the settings say (in this process, in memory, by default)."""
    return Execution(
        executor=spec.executor,
        ray_address=spec.ray_address,
        ray_actors=spec.ray_actors,
        chunk_size=spec.chunk_size,
        block_rows=spec.block_rows,
        store_dir=Path(spec.store_dir) if spec.store_dir else None,
    )
