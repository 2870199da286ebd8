"""The values the retrievers pass around: a parsed retrieval (:class:`RetrievalSpec`; :mod:`.spec` parses it), what a
retriever reads (:class:`RetrievalInputs`) and what it gives back (:class:`Retrieved`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .params import Param, ParamValue

if TYPE_CHECKING:
    from ..search import Ranking


@dataclass(frozen=True)
class RetrievalSpec:
    """A retriever (``kind``) and its parameters, defaults filled in; :attr:`text` is the canonical text."""

    kind: str
    params: tuple[tuple[Param, ParamValue], ...] = ()

    @property
    def text(self) -> str:
        if not self.params:
            return self.kind
        return self.kind + ":" + ",".join(f"{p.name}={p.render(v)}" for p, v in self.params)

    @property
    def values(self) -> dict[str, ParamValue]:
        """Each parameter's value by its name in the text (``k1``)."""
        return {p.name: v for p, v in self.params}

    def get(self, name: str) -> ParamValue:
        return self.values[name]

    @property
    def components(self) -> tuple[str, ...]:
        """The retrievers it fuses (a hybrid), else itself."""
        fused = self.values.get("fuse")
        return tuple(str(n) for n in fused) if isinstance(fused, tuple) else (self.kind,)

    def to_dict(self) -> dict[str, object]:
        """What the manifest records: the kind, the text and each parameter by its spec key."""
        out: dict[str, object] = {"kind": self.kind, "text": self.text}
        for p, v in self.params:
            out[p.setting] = list(v) if isinstance(v, tuple) else v
        return out


class RetrievalInputs(Protocol):
    """What a retriever reads: the query and document ids and texts (documents in corpus order, read once per
        call), ``corpus_key`` (the corpus's identity: an index built over it is reused within the process), and the
        contract's dense run at any depth (its vectors searched exactly), the model's learned sparse run (each vector
    cut to its ``top_k`` largest weights, 0: all) and its MaxSim run over per-token vectors (``rerank`` 0: the whole
    corpus, N: the dense run's top N re-ranked); these two also say what their index holds per document."""

    @property
    def query_ids(self) -> Sequence[str]: ...

    @property
    def doc_ids(self) -> Sequence[str]: ...

    @property
    def corpus_key(self) -> str: ...

    def query_texts(self) -> list[str]: ...

    def doc_texts(self) -> Iterable[str]: ...

    def dense(self, k: int) -> Ranking: ...

    def sparse(self, top_k: int, k: int) -> Retrieved: ...

    def multivector(self, projection: str, specials: str, rerank: int, k: int) -> Retrieved: ...


@dataclass(frozen=True)
class Retrieved:
    """A retriever's ranking; a hybrid's also holds each component's run (at the fusion depth) by name, and
    ``entry`` what the manifest records of how each part was made, by retriever name (index sizes, seconds)."""

    ranking: Ranking
    components: Mapping[str, Ranking] = field(default_factory=dict)
    entry: Mapping[str, object] = field(default_factory=dict)
