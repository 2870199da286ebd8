"""The alternatives' vectors, computed with the local reference in as few forward passes as they need.

One forward pass per (prefix mode, max length, model dtype, model) gives every pooling at once (the
encoder pools one batch's hidden states every way it is asked); every normalization, Matryoshka cut
and output rounding is then numpy (:func:`evalsuite.diagnose.score.derive`). A pass at a shorter max
length re-encodes only the texts it would cut. The expensive axes vary one at a time around the
contract; the cheap ones are combined with each, so two faults at once (CLS and no normalization, or
a cut length and CLS) are one candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..contract import POOLINGS
from .hypotheses import HEAD_MODES, PREFIX_MODES, Alternative, ForwardKey, prefixes
from .score import derive, numeric_variants

if TYPE_CHECKING:
    from ..contract import Contract
    from ..encode.base import Encoder
    from ..encode.right_padded import RightPaddedLastEncoder

TRUNCATION_LENGTHS = (64, 128, 256, 512)
ROUNDINGS = ("float16", "bfloat16")
MODEL_DTYPES = ("float16", "bfloat16")


@dataclass(frozen=True)
class Probes:
    """The texts diagnosed: ids, roles and texts as given (no prefix). ``batches``: the rows of each request the
    served vectors came from (empty: unknown); ``refused``: ids of texts the server refused, left out."""

    ids: tuple[str, ...]
    roles: tuple[str, ...]
    texts: tuple[str, ...]
    batches: tuple[tuple[int, ...], ...] = ()
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReferenceSource:
    """Where the local vectors come from: the pinned reference at a (max length, dtype), a suspect model
    directory, and the reference tokenizer's token counts of rendered texts (None: unknown). ``special``: the
    reference at a (special-token mode, max length, dtype) that loses the closing special token (see
    ``SPECIAL_MODES``), None when its tokenizer adds none (or the source cannot make one)."""

    encoder: Callable[[int, str], Encoder]
    suspect: Callable[[str], Encoder]
    token_counts: Callable[[list[str]], list[int] | None]
    special: Callable[[str, int, str], Encoder | None] | None = None
    # the reference at a (max length, dtype) run as an engine that right-pads a batch and pools its last position
    right_padded: Callable[[int, str], RightPaddedLastEncoder | None] | None = None
    # the reference at a (head mode, max length, dtype) with its Dense heads dropped or run without activations;
    # None (or the callable answering None) for a model without Dense heads
    headless: Callable[[str, int, str], Encoder | None] | None = None


@dataclass(frozen=True)
class Hypotheses:
    """Which values of the expensive axes to test (each one away from the contract)."""

    lengths: tuple[int, ...] = ()
    model_dtypes: tuple[str, ...] = ()
    suspects: tuple[str, ...] = ()

    @classmethod
    def for_contract(
        cls, contract: Contract, *, model_max: int, max_positions: int, server_max: int | None, suspects: Sequence[str]
    ) -> Hypotheses:
        wanted = {*TRUNCATION_LENGTHS, model_max, *([server_max] if server_max else [])}
        lengths = tuple(sorted(n for n in wanted if n != contract.max_length and 2 <= n <= max_positions))
        dtypes = MODEL_DTYPES if contract.dtype == "float32" else ()
        return cls(lengths, dtypes, tuple(suspects))


class AlternativeVectors:
    """Every alternative's vectors for ``probes`` at the served width, one forward pass per key."""

    def __init__(
        self,
        contract: Contract,
        hidden: int,
        prompts: Mapping[str, str],
        source: ReferenceSource,
        probes: Probes,
        default_prompt: str | None = None,
    ) -> None:
        self.contract = contract
        self.hidden = hidden
        self.prompts = prompts
        self.default_prompt = default_prompt  # the model's default_prompt_name
        self.source = source
        self.probes = probes
        self.not_tested: list[str] = []
        self._pooled: dict[ForwardKey, dict[str, np.ndarray] | None] = {}

    def _render(self, mode: str) -> list[str] | None:
        pre = prefixes(mode, self.contract, self.prompts, self.default_prompt)
        if pre is None:
            return None
        return [pre[r] + t for r, t in zip(self.probes.roles, self.probes.texts, strict=True)]

    def _encode(self, encoder: Encoder, rendered: list[str], rows: list[int]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for role in ("query", "document"):
            idx = [i for i in rows if self.probes.roles[i] == role]
            if idx:
                got = encoder.encode([rendered[i] for i in idx], poolings=list(POOLINGS), role=role)
                for p in POOLINGS:  # the width is the encoder's (a dropped Dense head's is the transformer's)
                    rows_of = out.setdefault(p, np.zeros((len(rendered), got[p].shape[1]), dtype=np.float32))
                    rows_of[idx] = got[p]
        if not out:
            out = {p: np.zeros((len(rendered), self.hidden), dtype=np.float32) for p in POOLINGS}
        return out

    def pooled(self, key: ForwardKey) -> dict[str, np.ndarray] | None:
        """Pooled vectors per pooling for one forward key; None when it cannot be formed or run."""
        if key not in self._pooled:
            self._pooled[key] = self._compute(key)
        return self._pooled[key]

    def _compute(self, key: ForwardKey) -> dict[str, np.ndarray] | None:
        mode, length, dtype, model, special, padding, head = key
        rendered = self._render(mode)
        if rendered is None:
            return None
        rows = list(range(len(rendered)))
        c = self.contract
        try:
            if model is not None:
                return self._encode(self.source.suspect(model), rendered, rows)
            if head != "contract":
                encoder = self.source.headless(head, length, dtype) if self.source.headless is not None else None
                return None if encoder is None else self._encode(encoder, rendered, rows)
            if padding != "contract":  # last-token pooling only: the batch's last position, over the served batches
                padded = self.source.right_padded(length, dtype) if self.source.right_padded is not None else None
                if padded is None or not self.probes.batches:
                    return None
                return {"last": padded.encode_batches(rendered, self.probes.batches)}
            if special == "cut":
                counts = self.source.token_counts(rendered)
                if counts is not None and all(n <= length for n in counts):
                    return None  # nothing is cut: the reference's pass at this length
            if special != "contract":
                encoder = self.source.special(special, length, dtype) if self.source.special is not None else None
                return None if encoder is None else self._encode(encoder, rendered, rows)
            if length != c.max_length and mode == "contract" and dtype == c.dtype:
                # only texts the other length cuts differently change: the rest are the contract's pass
                counts = self.source.token_counts(rendered)
                base = self.pooled(("contract", c.max_length, dtype, None, "contract", "contract", "contract"))
                if counts is not None and base is not None:
                    rows = [i for i, n in enumerate(counts) if n > min(length, c.max_length)]
                    if not rows:
                        return None  # identical to the contract's pass: nothing to test
                    out = self._encode(self.source.encoder(length, dtype), rendered, rows)
                    keep = [i for i in range(len(rendered)) if i not in set(rows)]
                    for p in POOLINGS:
                        out[p][keep] = base[p][keep]
                    return out
            return self._encode(self.source.encoder(length, dtype), rendered, rows)
        except (RuntimeError, TypeError, ValueError) as exc:  # a dtype the CPU cannot run, a suspect model's shape
            what = f"model {model}" if model else f"max_length {length}, dtype {dtype}, prefixes {mode}"
            self.not_tested.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
            return None

    def candidate_groups(
        self, base: Alternative, width: int, hyps: Hypotheses
    ) -> Iterator[dict[Alternative, np.ndarray]]:
        """The alternatives of ``width`` dimensions, cheapest passes first: the contract's own pass (every
        pooling, normalization, cut and output rounding), then other prefixes, the input without its closing
        special token, the served batches right-padded and pooled at their last position (last-token pooling), max
        lengths (each also cut after the closing token, as llama-cpp-python truncates), model
        dtypes and suspect models, each with every pooling, normalization and cut. A caller stops asking once one
        explains the served vectors, so the expensive passes run only when needed."""
        m, n, dt, sp, pd, hd = base.max_length, base.model_dtype, base.model, base.special, base.padding, base.head
        # a batch of texts of several lengths pads some of them: only then can right padding change a vector
        padded = base.pooling == "last" and any(len(b) > 1 for b in self.probes.batches)
        groups: list[list[ForwardKey]] = [
            [base.forward_key()],
            # the Dense heads dropped or run without activations, alone or with the prompt dropped too (TEI#749)
            [(mode, m, n, dt, sp, pd, h) for h in HEAD_MODES if h != hd for mode in ("contract", "none")],
            [(mode, m, n, dt, sp, pd, hd) for mode in PREFIX_MODES if mode != "contract"],
            [("contract", m, n, dt, "no_closing", pd, hd)],
            [("contract", m, n, dt, sp, "right", hd)] if padded else [],
            [
                ("contract", length, n, dt, s, pd, hd)
                for length in (m, *hyps.lengths)
                for s in (sp, "cut")
                if (length, s) != (m, sp)
            ],
            [("contract", m, d, dt, sp, pd, hd) for d in hyps.model_dtypes],
            [("contract", m, n, s, sp, pd, hd) for s in hyps.suspects],
        ]
        for keys in groups:
            yield self._candidates(keys, base, width)

    def _candidates(self, keys: list[ForwardKey], base: Alternative, width: int) -> dict[Alternative, np.ndarray]:
        contract_inputs = self._render("contract")
        out: dict[Alternative, np.ndarray] = {}
        for key in keys:
            mode, length, dtype, model, special, padding, head = key
            if mode != "contract" and self._render(mode) == contract_inputs:
                continue  # the same inputs as the contract's: the same vectors
            pooled = self.pooled(key)
            if pooled is None:
                continue
            roundings = (None, *ROUNDINGS) if key == base.forward_key() else (None,)
            for pooling in POOLINGS:
                if pooling not in pooled:
                    continue  # a pass that pools one way only (right padding: last)
                around = base.replace(
                    pooling=pooling,
                    prefix=mode,
                    max_length=length,
                    model_dtype=dtype,
                    model=model,
                    special=special,
                    padding=padding,
                    head=head,
                )
                for alt in numeric_variants(around, width, self.hidden, roundings):
                    out[alt] = derive(pooled[pooling], alt)
        return out
