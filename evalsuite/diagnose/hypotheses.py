"""Every way a deployment can make its vectors other than the contract says, one declaration each.

An :class:`Alternative` is one complete way of making a vector (pooling, normalization, prefixes,
truncation length, Matryoshka cut, output rounding, the dtype and revision of the model). The
contract is one of them (:meth:`Alternative.of_contract`); every field on which another alternative
departs from it is a :class:`Factor` declared in :data:`FACTORS`: which triage stage it belongs to,
how its cause reads ("the server pools with CLS") and how to fix it on each known engine.

Adding a hypothesis: a field on :class:`Alternative` (with its value in ``of_contract``), a
:class:`Factor` naming that field, and where its values come from (:mod:`.local` for what needs a
forward pass, :func:`evalsuite.diagnose.score.derive` for what numpy can do).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..contract import Contract

# The triage order of the index contract: the order an engineer debugs a mismatch in.
STAGES: tuple[tuple[str, str], ...] = (
    ("identity", "served model and revision against the manifest"),
    ("input", "input format and prefixes"),
    ("shape", "dimension, norm and pooling"),
    ("truncation", "truncation"),
    ("similarity", "normalization and similarity metric"),
    ("agreement", "served vs reference similarity and ranking"),
    ("search", "exact flat search on the same vectors"),
    ("batch", "batch, precision and dimensions"),
)
STAGE_NAMES = tuple(name for name, _ in STAGES)

PREFIX_MODES = ("contract", "none", "swapped", "query_on_both", "declared")
# The special tokens around each input: the reference tokenizer's ("contract"); without the closing one ([SEP] for
# BERT, EOS for decoders) as a GGUF converted without it serves ("no_closing"); or lost by over-long inputs only,
# when the server truncates by cutting the token list after adding it ("cut": llama-cpp-python) (issue 31).
SPECIAL_MODES = ("contract", "no_closing", "cut")
# How a batch's texts are padded and where last-token pooling reads: the reference's ("contract": each text's own
# last token), or "right": right-padded and pooled at the batch's last position, so a text shorter than the longest
# in its batch is pooled at a pad token (TEI's Qwen3 bug). Formed over the batches the served vectors came from.
PADDING_MODES = ("contract", "right")
# The model's Dense heads after pooling (sentence-transformers' 2_Dense, ...): run as the contract says ("contract"),
# not run at all ("dropped": the pooled transformer output, TEI#732, vLLM#15509; of the hidden size, or of the right
# size from the wrong layer when the heads end where they began, as embeddinggemma's 768 -> 3072 -> 768), or run
# without their activation functions ("no_activation"). Only for a model that declares Dense heads (issue 40).
HEAD_MODES = ("contract", "dropped", "no_activation")


# (prefix mode, max length, model dtype, suspect model, special-token mode, padding mode, head mode): one pass each
ForwardKey = tuple[str, int, str, str | None, str, str, str]


@dataclass(frozen=True)
class Alternative:
    """One way of making the served vectors. ``normalize`` acts on the full pooled vector, then the
    first ``dim`` values are kept, re-normalized when ``renormalize``; ``rounding`` is the served
    vectors' own precision (values rounded to float16/bfloat16 after all that)."""

    pooling: str
    normalize: bool
    prefix: str  # one of PREFIX_MODES
    max_length: int
    dim: int
    renormalize: bool
    rounding: str | None = None
    model_dtype: str = "float32"
    model: str | None = None  # a --suspect-model directory; None: the pinned reference
    special: str = "contract"  # one of SPECIAL_MODES
    padding: str = "contract"  # one of PADDING_MODES
    head: str = "contract"  # one of HEAD_MODES

    @classmethod
    def of_contract(cls, contract: Contract, hidden: int) -> Alternative:
        """The contract's own way: cut to ``dim`` then normalize (the same as normalizing the full
        vector, cutting and re-normalizing)."""
        return cls(
            pooling=contract.pooling,
            normalize=contract.normalize,
            prefix="contract",
            max_length=contract.max_length,
            dim=contract.dim if contract.dim < hidden else hidden,
            renormalize=contract.normalize,
            model_dtype=contract.dtype,
        )

    def replace(self, **changes: Any) -> Alternative:
        return dataclasses.replace(self, **changes)

    def forward_key(self) -> ForwardKey:
        """What needs its own forward pass (everything else is derived from one pooled pass)."""
        return (self.prefix, self.max_length, self.model_dtype, self.model, self.special, self.padding, self.head)

    def departures(self, base: Alternative, hidden: int) -> list[tuple[Factor, object]]:
        """The factors on which this alternative departs from ``base``, in triage order."""
        out = []
        for factor in FACTORS:
            value = getattr(self, factor.field)
            if value != getattr(base, factor.field) and factor.relevant(self, hidden):
                out.append((factor, value))
        return sorted(out, key=lambda fv: STAGE_NAMES.index(fv[0].stage))

    def label(self, base: Alternative, hidden: int) -> str:
        """``pooling=cls, normalize=false`` (the departures), or ``the contract``."""
        parts = [f"{f.field}={_show(v)}" for f, v in self.departures(base, hidden)]
        return ", ".join(parts) or "the contract"


def _show(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "none" if value is None else str(value)


@dataclass(frozen=True)
class Factor:
    """One field of :class:`Alternative` a deployment can get wrong.

    ``cause(value, contract)`` reads as a clause ("the server pools with CLS"); ``remedy`` maps an
    engine ("vllm", "infinity", "tei", "sglang", "llamacpp", "llama-cpp-python", or "" for any) to what to
    change, formatted with ``value``, ``contract``, ``upper`` (the pooling in capitals), ``normalize``
    ("true"/"false"), ``llama_pooling`` (llama.cpp's pooling type number for the contract's pooling) and
    ``special_fix`` (llama.cpp's fix for a special-token mode).
    """

    field: str
    stage: str
    cause: Callable[[Any, Contract], str]
    remedy: Mapping[str, str]
    relevant: Callable[[Alternative, int], bool] = lambda alt, hidden: True

    def remedy_for(self, engine: str | None, value: object, contract: Contract) -> str:
        template = self.remedy.get(engine or "", self.remedy[""])
        return template.format(
            value=value,
            contract=contract,
            upper=contract.pooling.upper(),
            normalize=str(contract.normalize).lower(),
            llama_pooling=LLAMA_POOLING_TYPES.get(contract.pooling, "?"),
            special_fix=_special_fix(value),
        )


# llama.cpp's ``enum llama_pooling_type`` (llama.h): what llama-cpp-python's --pooling_type takes
LLAMA_POOLING_TYPES = {"none": 0, "mean": 1, "cls": 2, "last": 3}


def _special_cause(mode: str, c: Contract) -> str:
    if mode == "cut":
        return (
            "the server truncates by cutting the token list, so over-long inputs lose their closing special token "
            "([SEP] or EOS; the reference truncates before adding it)"
        )
    if c.pooling == "last":  # a decoder: the appended EOS is the token its last-token pooling reads
        return (
            "the server does not append the EOS token the model's tokenizer appends (last-token pooling reads the "
            "text's last word instead)"
        )
    return "the server's tokenizer does not add the closing special token ([SEP] or EOS) that the reference's adds"


def _special_fix(mode: object) -> str:
    """llama.cpp's remedy for a special-token mode (llama-cpp-python and llama-server read the same GGUF keys)."""
    if mode == "cut":
        return (
            "it keeps the first n_batch tokens of the text with its special tokens ([CLS] text [SEP]; text EOS for a "
            "decoder), and no setting changes that: chunk documents to "
            "the contract's max length (special tokens included) before sending them"
        )
    return (
        "the GGUF says not to add it; re-convert with convert_hf_to_gguf.py from the model's own tokenizer.json, "
        "or set tokenizer.ggml.add_eos_token to true with gguf-py's gguf_set_metadata.py (the converter writes it "
        "from the tokenizer's post-processor; BERT's [SEP] is the EOS token there)"
    )


def _prefix_cause(mode: str, c: Contract) -> str:
    return {
        "none": f"the server gets no prefixes (the contract's: query {c.query_prefix!r}, document {c.doc_prefix!r})",
        "swapped": "the query and document prefixes are swapped",
        "query_on_both": f"the query prefix {c.query_prefix!r} is on documents too",
        "declared": "the server applies the model's declared prompts instead of the contract's prefixes",
    }.get(mode, f"prefixes {mode}")


_PREFIX_FIX = (
    "send the contract's prefixes (query {contract.query_prefix!r}, document {contract.doc_prefix!r}); the "
    "client adds them, so check that neither the client nor the server adds or strips another prompt"
)

# vLLM 0.32's /v1/embeddings embeds ``input`` as sent; only its Cohere route (/v2/embed, ``input_type``) prepends the
# model's declared prompts (config_sentence_transformers.json), so a wrong prefix comes from in front of it
_VLLM_PREFIX_FIX = (
    "vLLM's /v1/embeddings applies no prompt of its own (it embeds each input as sent): the client, or a gateway "
    "or proxy in front of vLLM, must send the contract's prefixes (query {contract.query_prefix!r}, document "
    "{contract.doc_prefix!r}); find what drops or adds them on the way (or call vLLM's /v2/embed with input_type "
    "query / document, which prepends the model's declared prompts)"
)

_HEAD_CAUSES = {
    "dropped": "the server drops the model's Dense head: its vectors are the pooled transformer output before the "
    "projection (2_Dense not run)",
    "no_activation": "the server runs the model's Dense head without its activation function",
}

_PADDING_CAUSE = (
    "the server right-pads each batch and pools its last position, so every text shorter than the longest in its "
    "batch is pooled at a pad token (its vector depends on the batch it is sent in)"
)

FACTORS: tuple[Factor, ...] = (
    Factor(
        field="model",
        stage="identity",
        cause=lambda v, c: f"the server runs another model or revision ({v})",
        remedy={"": "deploy the pinned revision {contract.model_revision} of {contract.model}"},
    ),
    Factor(field="prefix", stage="input", cause=_prefix_cause, remedy={"": _PREFIX_FIX, "vllm": _VLLM_PREFIX_FIX}),
    Factor(
        field="special",
        stage="input",
        cause=_special_cause,
        remedy={
            "": "serve a tokenizer that adds the closing special token as the reference's does (its post-processor), "
            "and truncate before adding it (or chunk documents to the contract's max length before sending)",
            "llama-cpp-python": "llama-cpp-python: {special_fix}",
            "llamacpp": "llama.cpp: {special_fix}",
            "vllm": "vLLM: serve the model directory with its own tokenizer (no --tokenizer pointing elsewhere, "
            "and a tokenizer.json whose post-processor adds the closing token: EOS for a decoder, [SEP] for BERT)",
            "tei": "TEI: serve a model directory whose tokenizer.json post-processor adds the closing token",
            "infinity": "Infinity: serve a model directory whose tokenizer.json post-processor adds the closing token",
            "sglang": "SGLang: serve the model with its own tokenizer (its post-processor adds the closing token)",
        },
    ),
    Factor(
        field="head",
        stage="shape",
        cause=lambda v, c: _HEAD_CAUSES[str(v)],
        remedy={
            "": "serve the model directory with its modules.json and every Dense module (2_Dense/...: config.json and "
            "weights), on an engine release that runs sentence-transformers Dense heads after pooling (TEI#732, "
            "vLLM#15509, TEI#749); until then serve it with sentence-transformers itself (e.g. Infinity)",
            "tei": "TEI: upgrade to a release that loads the model's Dense modules (TEI#732: 2_Dense not loaded; "
            "TEI#749: embeddinggemma's prompt and Dense head skipped together), and serve the directory with its "
            "modules.json",
            "vllm": "vLLM: upgrade to a release that applies sentence-transformers Dense layers after pooling "
            "(vLLM#15509), and serve the directory with its modules.json and 2_Dense/",
            "infinity": "Infinity: serve the model directory with its modules.json and 2_Dense/ (the torch engine "
            "runs sentence-transformers, Dense heads included)",
        },
    ),
    Factor(
        field="pooling",
        stage="shape",
        cause=lambda v, c: f"the server pools with {str(v).upper()} (the contract's: {c.pooling})",
        remedy={
            "": "serve the model with {contract.pooling} pooling (1_Pooling/config.json)",
            "vllm": 'vLLM: --pooler-config \'{{"seq_pooling_type":"{upper}"}}\'',
            "sglang": "SGLang: serve a model whose 1_Pooling/config.json says {contract.pooling} pooling",
            "infinity": "Infinity: fix 1_Pooling/config.json in the served model directory to {contract.pooling} "
            "pooling (--pooling-method is ignored by the torch engine)",
            "tei": "TEI: --pooling {contract.pooling}",
            "llama-cpp-python": "llama-cpp-python's server has no pooling setting: it pools as the GGUF's "
            "<arch>.pooling_type says; set it to {llama_pooling} ({contract.pooling}) with gguf-py's "
            "gguf_set_metadata.py, or re-convert with convert_hf_to_gguf.py from a model directory whose "
            "1_Pooling/config.json says {contract.pooling}",
            "llamacpp": "llama.cpp: --pooling {contract.pooling} (unset: the GGUF's <arch>.pooling_type)",
        },
    ),
    Factor(
        field="max_length",
        stage="truncation",
        cause=lambda v, c: f"the server truncates at {v} tokens (the contract's max_length: {c.max_length})",
        remedy={
            "": "set the server's max length to the contract's {contract.max_length} tokens",
            "vllm": "vLLM: --max-model-len {contract.max_length}",
            "infinity": "Infinity: max_seq_length {contract.max_length} in the model's sentence_bert_config.json",
            "tei": "TEI: serve the model with max_seq_length {contract.max_length} (and --auto-truncate)",
            "sglang": "SGLang: --context-length {contract.max_length}",
            "llama-cpp-python": "llama-cpp-python: --n_ctx {contract.max_length} --n_batch {contract.max_length} "
            "--n_ubatch {contract.max_length} (it silently keeps the first min(n_ctx, n_batch) tokens of each "
            "input; the GGUF keeps no max_seq_length)",
            "llamacpp": "llama.cpp: --ctx-size {contract.max_length} --batch-size {contract.max_length} "
            "--ubatch-size {contract.max_length}",
        },
    ),
    Factor(
        field="normalize",
        stage="similarity",
        cause=lambda v, c: "the server normalizes the vectors" if v else "the server does not normalize the vectors",
        remedy={
            "": "make the server's normalization match the contract (normalize={normalize})",
            "vllm": "vLLM: --pooler-config '{{\"normalize\":{normalize}}}'",
            "tei": "TEI: the OpenAI route always normalizes; use /embed with normalize={normalize}",
            "llama-cpp-python": "llama-cpp-python's server never L2-normalizes (/v1/embeddings calls "
            "embed(normalize=False)) and has no setting for it: L2-normalize the served vectors in the client "
            "before indexing and check the raw vectors with a contract that says so (--no-normalize), or serve "
            "the GGUF with llama.cpp's llama-server, whose /v1/embeddings normalizes (--embd-normalize 2)",
            "llamacpp": "llama.cpp: --embd-normalize 2 normalizes, -1 does not (the contract: normalize={normalize})",
        },
    ),
    Factor(
        field="dim",
        stage="batch",
        cause=lambda v, c: f"the server cuts the vectors to {v} dimensions (the contract's: {c.dim})",
        remedy={"": "ask for the contract's {contract.dim} dimensions (or none)"},
        relevant=lambda alt, hidden: alt.head != "dropped",  # a dropped head's width is the transformer's, not a cut
    ),
    Factor(
        field="renormalize",
        stage="batch",
        cause=lambda v, c: (
            "the server re-normalizes after the Matryoshka cut" if v else "the server cuts without re-normalizing"
        ),
        remedy={
            "": "re-normalize the cut vectors on the client, or do not ask the server for 'dimensions'",
            "infinity": "Infinity cuts 'dimensions' without re-normalizing: re-normalize on the client",
        },
        relevant=lambda alt, hidden: alt.dim < hidden,
    ),
    Factor(
        field="rounding",
        stage="batch",
        cause=lambda v, c: f"the served vectors are rounded to {v}",
        remedy={
            "": "return float32 vectors (JSON floats or base64 float32)",
            "vllm": "vLLM: ask for float32 output (embed_dtype float32)",
        },
    ),
    Factor(
        field="model_dtype",
        stage="batch",
        cause=lambda v, c: f"the server runs the model in {v} (the contract's dtype: {c.dtype})",
        remedy={
            "": "run the model in {contract.dtype}",
            "vllm": "vLLM: --dtype {contract.dtype}",
            "infinity": "Infinity: --dtype {contract.dtype}",
            "tei": "TEI: --dtype {contract.dtype}",
            "sglang": "SGLang: --dtype {contract.dtype}",
            "llama-cpp-python": "llama-cpp-python: serve a GGUF converted at the contract's dtype "
            "(convert_hf_to_gguf.py --outtype f32 for float32); an f16 or quantized file changes the vectors",
            "llamacpp": "llama.cpp: serve a GGUF converted at the contract's dtype (convert_hf_to_gguf.py --outtype "
            "f32 for float32); an f16 or quantized file changes the vectors",
        },
    ),
    Factor(
        field="padding",
        stage="batch",
        cause=lambda v, c: _PADDING_CAUSE,
        remedy={
            "": "pool the last real token of each text (the attention mask's last 1), not the batch's last position, "
            "or pad batches on the left (the model's tokenizer_config.json padding_side); until then send one text "
            "a request",
            "tei": "TEI: upgrade to a release whose last-token pooling reads each text's last real token (its "
            "Qwen3 fixes: left padding, batched last-token pooling); until then one text a batch "
            "(--max-client-batch-size 1 --max-batch-requests 1)",
        },
        relevant=lambda alt, hidden: alt.pooling == "last",
    ),
)


def prefixes(
    mode: str, contract: Contract, prompts: Mapping[str, str], default: str | None = None
) -> dict[str, str] | None:
    """The (query, document) prefixes a prefix mode sends, or None when the mode cannot be formed
    (the model declares no prompts). ``declared``: each role's prompt as :func:`~evalsuite.model.prompts.declared_prompt`
    picks it, the model's ``default`` (``default_prompt_name``) for a role without its own."""
    q, d = contract.query_prefix, contract.doc_prefix
    if mode == "contract":
        return {"query": q, "document": d}
    if mode == "none":
        return {"query": "", "document": ""}
    if mode == "swapped":
        return {"query": d, "document": q}
    if mode == "query_on_both":
        return {"query": q, "document": q}
    if mode == "declared":
        from ..model.prompts import declared_prompt

        (qn, pq), (dn, pd) = (declared_prompt(prompts, role, default) for role in ("query", "document"))
        if qn is None and dn is None:
            return None
        return {"query": pq, "document": pd}
    raise ValueError(f"unknown prefix mode {mode!r}; choose one of {', '.join(PREFIX_MODES)}")


# Not a field of Alternative: no reference pass reproduces a quantized file's or a low-precision kernel's rounding,
# so :func:`evalsuite.diagnose.score.name_precision` names it from how the served vectors depart from the best
# alternative's (evenly, on every text, at high cosine). Its value is the min cosine to that alternative (issue 31).
PRECISION = Factor(
    field="precision",
    stage="batch",
    cause=lambda v, c: (
        f"the served vectors are made at lower precision than the reference's (min cosine {v}): quantized weights "
        "or reduced-precision compute"
    ),
    remedy={
        "": "serve the model's weights unquantized and compute in the contract's dtype ({contract.dtype})",
        "vllm": "vLLM: --dtype {contract.dtype} and no --quantization (serve unquantized weights)",
        "sglang": "SGLang: --dtype {contract.dtype} and no --quantization",
        "infinity": "Infinity: --dtype {contract.dtype} (not int8 or fp8)",
        "tei": "TEI: --dtype {contract.dtype}",
        "llama-cpp-python": "llama-cpp-python: serve the f32 GGUF (convert_hf_to_gguf.py --outtype f32; f16 is "
        "usually within tolerance), not a quantized one (q8_0, q4_0, q4_K_M, ...: llama-quantize or "
        "llama_model_quantize output; the GGUF's general.file_type says which)",
        "llamacpp": "llama.cpp: serve the f32 GGUF (convert_hf_to_gguf.py --outtype f32; f16 is usually within "
        "tolerance), not a quantized one (q8_0, q4_0, q4_K_M, ...: llama-quantize output; the GGUF's "
        "general.file_type says which)",
    },
)
