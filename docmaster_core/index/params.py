"""The semantic index's parameters as one typed value with one key.

A document's semantic index (SEC anchor pairs, PC-KMeans clusters, hyper-edges;
DocMaster Sec. 2.3, Eq. (1)-(2)) depends on the index hyperparameters and on the LLM
backend that labelled its anchor pairs. :class:`IndexParams` holds exactly those; its
:meth:`IndexParams.key` is the one key under which the workspace stores the index and
under which retrievers cache hyper-edges, for the CLI and the app alike.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..config import IndexSettings
from ..store.workspace import params_key

__all__ = ["IndexParams", "params_key"]


@dataclass(frozen=True)
class IndexParams(Mapping):
    """Index hyperparameters plus the labelling LLM backend (DocMaster Eq. (1)-(2)).

    Attributes:
        alpha: SEC weight of cosine vs structural entropy, in [0, 1] (Eq. 1).
        k: SEC anchor pairs labelled per document (>= 0).
        K: PC-KMeans clusters per document (>= 1).
        w: PC-KMeans penalty of a violated must-link / cannot-link (>= 0, Eq. 2).
        sec_sign: ``"printed"`` or ``"prose"`` reading of Eq. (1).
        random_state: Seed of PC-KMeans and grouping.
        llm: Backend name of the LLM that labels anchor pairs (``"offline"`` or a model).
    """

    alpha: float = 0.6
    k: int = 20
    K: int = 8
    w: float = 1.0
    sec_sign: str = "printed"
    random_state: int = 0
    llm: str = "offline"

    def __post_init__(self) -> None:
        # coerce so that 1 and 1.0 give one key; IndexSettings validates the ranges
        for f, typ in (("alpha", float), ("w", float), ("k", int), ("K", int), ("random_state", int)):
            object.__setattr__(self, f, typ(getattr(self, f)))
        self.settings()

    @classmethod
    def from_settings(cls, settings: IndexSettings, llm: str, **overrides: Any) -> "IndexParams":
        """The parameters of ``settings`` for backend ``llm``, with non-None ``overrides``.

        Raises:
            TypeError: an override names no index parameter.
            pydantic.ValidationError: a value is out of range (e.g. alpha > 1, K < 1).
        """
        names = {f.name for f in fields(cls)}
        bad = sorted(set(overrides) - names)
        if bad:
            raise TypeError(f"unknown index parameter(s): {', '.join(bad)}")
        base = settings.model_dump()
        base.update({k: v for k, v in overrides.items() if v is not None})
        base["llm"] = overrides.get("llm") or llm
        return cls(**{k: base[k] for k in names})

    # Mapping: ``dict(p)``, ``**p`` and ``ws.load_index(doc_id, p)`` see the stored dict
    def __getitem__(self, name: str) -> Any:
        if name not in self.__dataclass_fields__:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.__dataclass_fields__)

    def __len__(self) -> int:
        return len(self.__dataclass_fields__)

    def replace(self, **overrides: Any) -> "IndexParams":
        """A copy with the non-None ``overrides`` applied."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain JSON-able dict (what the workspace stores)."""
        return asdict(self)

    def key(self) -> str:
        """The stable key of these parameters (16 hex characters, see :func:`params_key`)."""
        return params_key(self.as_dict())

    def settings(self) -> IndexSettings:
        """The :class:`~docmaster_core.config.IndexSettings` the index builder takes.

        Raises:
            pydantic.ValidationError: a value is out of range.
        """
        d = self.as_dict()
        return IndexSettings(**{k: v for k, v in d.items() if k in IndexSettings.model_fields})

    @property
    def sliders(self) -> dict[str, Any]:
        """``{"alpha", "k", "K", "w"}``: the four hyperparameters a user moves by slider."""
        return {"alpha": self.alpha, "k": self.k, "K": self.K, "w": self.w}
