"""One entry point to the retrieval strategies over a workspace (SPEC F6).

:class:`Retriever` embeds a query once, computes the node cosines once (FAISS), and
runs any of the strategies ``tree``, ``semantic``, ``hyperedge``, ``combined`` (RRF of
the three, by page by default (``settings.combine_unit``), preceded by the elements a
question names explicitly, e.g. "Figure 3",
see :mod:`.references`) and ``flat`` (the baseline) over all or some documents, returning
:class:`~docmaster_core.model.Evidence` lists per document. Evidence ids are
``<letter><rank>`` with the letter naming the strategy (T, S, H, C, F), unique within
one document's result.
"""
from __future__ import annotations

import threading
from itertools import zip_longest
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import RetrievalError
from ..model import Evidence
from .combine import (EVIDENCE_ROTATION, EVIDENCE_SHARES, HYBRID_LISTS, STRATEGIES, STRUCTURED, combsum,
                      fuse_within_budget, rrf_fuse, rrf_fuse_pages)
from .corpus import CorpusView, evidence_chars, load_corpus, node_evidence, node_text
from .flat import FlatView, chunk_evidence, flat_cosines, flat_search, flat_view
from .hyperedge import HyperEdgeView, build_hyperedge_view, hyperedge_search
from .references import find_references, resolve_references
from .semantic import node_cosines, semantic_search, top_k_per_doc
from .tree_traversal import tree_search
from ..text.words import shingles

__all__ = ["Retriever", "QueryResult", "EVIDENCE_PREFIX", "check_top_k"]

#: Evidence-id letter of each strategy.
EVIDENCE_PREFIX = {"tree": "T", "semantic": "S", "hyperedge": "H", "combined": "C", "flat": "F", "keyword": "K"}


def check_top_k(top_k: int | None, name: str = "top_k") -> int | None:
    """Validate an evidence count: None (use the default) or an integer >= 1.

    Returns ``top_k`` unchanged. ``0`` is refused, not taken as "the default".

    Raises:
        RetrievalError: ``top_k`` is not an integer or is < 1.
    """
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
        raise RetrievalError(f"{name} must be an integer >= 1, got {top_k!r}")
    if top_k < 1:
        raise RetrievalError(f"{name} must be >= 1, got {int(top_k)}")
    return int(top_k)


@dataclass
class QueryResult:
    """Raw per-document rankings of one query (before conversion to Evidence).

    Attributes:
        q: float32 (d,) unit query vector.
        cos: float32 (N,) node cosines over the view.
        ranked: ``{strategy: {doc_index: (ids int64, scores float32)}}``; ids are node
            ids, or chunk indices for ``flat``.
        combined_strategies: ``{doc_index: [strategy names per combined item]}``.
        flat_cos: float32 (M,) chunk cosines when flat ran, else None.
    """

    q: np.ndarray
    cos: np.ndarray
    ranked: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]]
    combined_strategies: dict[int, list[str]]
    flat_cos: np.ndarray | None = None


def _keyword_lists(view: CorpusView, query, k: int, mask: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Node-level BM25 top-``k`` per masked document (body content only); empty for a vector query."""
    from .keyword import keyword_scores

    if not isinstance(query, str):
        return {}
    ks = keyword_scores(view, query)
    return top_k_per_doc(view, ks, k, valid=(ks > 0) & ~view.back_matter & (view.type_code != 0), doc_mask=mask)


def _reference_list(view: CorpusView, di: int, refs, cos: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"reference": (node_ids, ones)}`` of the elements a query names in document ``di`` ("Figure 3"), or {}."""
    ref_ids = resolve_references(view, di, refs, cos) if refs else []
    if not ref_ids:
        return {}
    return {"reference": (np.asarray(ref_ids, dtype=np.int64), np.ones(len(ref_ids), np.float32))}


class _PassageTexts:
    """The evidence texts of one document's listed passages, read only for the passages
    the budgeted fusion checks for redundancy.

    :func:`~.combine.fuse_within_budget` walks every list to the end while the budget is
    not full, but it needs a passage's *text* (its shingles) only when the passage fits;
    the lengths come from :func:`~.corpus.evidence_chars` (one small array per document).
    A text miss reads the asked node and the next :data:`TEXT_BATCH` unread ones in
    rotation order (the lists interleaved, as the fusion takes them) in one
    :meth:`CorpusView.prefetch` (issue 37: a warm 5k filter read ~37k stored nodes a
    condition only to measure them). Texts and lengths equal :func:`~.corpus.node_text`'s.

    Texts and shingles read once are kept per document in the view's byte-bounded
    ``doc_cache`` (shared with the candidate views of a filter at scale), so a document
    that is a candidate again (the same or another condition) reads no node (:meth:`keep`).
    """

    TEXT_BATCH = 8

    def __init__(self, view: CorpusView, di: int, lists: dict[str, tuple[np.ndarray, np.ndarray]],
                 rotation: Sequence[str]):
        self.view, self.di = view, di
        names = [s for s in ("reference", *rotation) if s in lists] + [s for s in lists if s not in rotation
                                                                       and s != "reference"]
        seqs = [np.asarray(lists[s][0]).tolist() for s in names]
        self.order = list(dict.fromkeys(int(n) for rank in zip_longest(*seqs) for n in rank if n is not None))
        self.pos = {n: i for i, n in enumerate(self.order)}
        dv = view.docs[di]
        self._key = ("passage_texts", dv.doc_id, dv.n_nodes)
        cached = view.doc_cache.get(self._key)
        self.text: dict[int, str] = cached[0] if cached is not None else {}
        self._shingles: dict[int, set[int]] = cached[1] if cached is not None else {}
        self._grown = False
        lengths = evidence_chars(view, di)
        self.chars = {n: int(lengths[n]) for n in self.order}

    def __getitem__(self, nid: int) -> str:
        t = self.text.get(nid)
        if t is None:
            at = self.pos.get(nid, len(self.order))
            batch = [nid] + [n for n in self.order[at + 1:at + 1 + 4 * self.TEXT_BATCH] if n not in self.text][
                :self.TEXT_BATCH]
            v, di = self.view, self.di
            v.prefetch((di, n) for n in batch)
            for n in batch:
                self.text[n] = node_text(v.node(di, n), v.docs[di].tree.title if n == 0 else "")
            self._grown = True
            t = self.text[nid]
        return t

    def shingles(self, nid: int) -> set[int]:
        """The word shingles of passage ``nid`` (:func:`~docmaster_core.text.words.shingles`)."""
        sh = self._shingles.get(nid)
        if sh is None:
            sh = self._shingles[nid] = shingles(self[nid])
            self._grown = True
        return sh

    def keep(self) -> None:
        """Put this document's texts and shingles back into the view's ``doc_cache``
        (declared as ~2 bytes a character and ~80 bytes a shingle)."""
        if self._grown:
            nbytes = (sum(2 * len(t) + 80 for t in self.text.values())
                      + sum(80 * len(x) + 200 for x in self._shingles.values()) + 400)
            self.view.doc_cache.put(self._key, (self.text, self._shingles), nbytes)


class Retriever:
    """Tri-modal retrieval plus the flat baseline over one workspace.

    Args:
        ws: The :class:`~docmaster_core.store.workspace.Workspace`.
        embedder: The embedder the node vectors were made with.
        settings: :class:`~docmaster_core.config.RetrievalSettings`.
        load_index: ``doc_id -> DocumentIndex | None`` for hyper-edges (e.g.
            ``DocMaster.load_index``); None uses fallback hyper-edges.
        index_key: Hashable identifying the index parameters ``load_index`` serves
            (part of the hyper-edge cache key).
        keyword: Also fuse node-level BM25 (:mod:`.keyword`) into ``combined`` (default
            False: the paper's tri-modal fusion; measured in docs/results/filter.md).
        combined_factor: The combined list holds ``combined_factor * top_k`` items.

    Attributes:
        index_key: As given (saved with the runs that search this retriever).
    """

    def __init__(self, ws, embedder, settings, *, load_index: Callable[[str], object | None] | None = None,
                 index_key: object = None, keyword: bool = False, combined_factor: float = 1.0):
        self.keyword = keyword
        self.combined_factor = combined_factor
        self.ws = ws
        self.embedder = embedder
        self.settings = settings
        self._load_index = load_index
        self.index_key = index_key
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ parts
    @property
    def view(self) -> CorpusView:
        """The workspace's (cached) corpus view, or the fixed view of :meth:`with_view`."""
        fixed = getattr(self, "_fixed_view", None)
        return fixed if fixed is not None else load_corpus(self.ws)

    def with_view(self, view: CorpusView) -> "Retriever":
        """A retriever with the same settings and index that searches ``view`` (e.g. the
        candidate documents of a question at scale, :func:`~docmaster_core.retrieval.corpus.sub_view`)."""
        import copy

        r = copy.copy(self)
        r._lock = threading.Lock()
        r._fixed_view = view
        return r

    def _index_signature(self) -> tuple:
        return tuple(self.ws.index_versions())

    def hyperedges(self, view: CorpusView | None = None) -> HyperEdgeView:
        """The stacked hyper-edges of the view (cached per index state)."""
        view = view or self.view
        sig = self._index_signature() if self._load_index else None
        key = ("hyperedges", self.index_key, sig)
        ck = (key[0], key[1], hash(key[2]))  # hashed once: the per-document cache looks it up per document
        tag = None
        if sig is not None and isinstance(self.index_key, str):
            made = {d: t for d, k, t in sig if k == self.index_key}
            tag = lambda doc_id: f"{self.index_key}|{made.get(doc_id)!r}"  # noqa: E731 - None: no stored index
        return view.aux(key, lambda: build_hyperedge_view(view, self._load_index, cache_key=ck, disk_tag=tag))

    def flat(self, view: CorpusView | None = None) -> FlatView:
        """The flat-chunk view (chunk embeddings from the disk cache or computed now)."""
        view = view or self.view
        return flat_view(view, self.embedder, self.settings)

    def encode(self, text: str) -> np.ndarray:
        """Unit query vector, float32 (d,)."""
        return np.asarray(self.embedder.encode([text])[0], dtype=np.float32)

    # ------------------------------------------------------------------ ranking
    def rank(self, query: str | np.ndarray, strategies: Sequence[str] = STRATEGIES, *, doc_ids: Sequence[str] | None = None,
             top_k: int | None = None, view: CorpusView | None = None, budget: int | None = None) -> QueryResult:
        """Per-document rankings of ``query`` for the given strategies.

        Args:
            query: Query text, or a float32 (d,) unit vector.
            strategies: Any of ``tree, semantic, hyperedge, combined, flat``.
            doc_ids: Documents to search (default all).
            top_k: Items per document and strategy (default ``settings.top_k``).
            budget: Characters per document: ``combined`` is then the filter evidence of
                :func:`~.combine.fuse_within_budget` (semantic, BM25, tree and hyper-edge
                passages in turn, ``settings.evidence_pool`` offered by each), not the
                top-k RRF list. The other strategies keep their top-k lists.

        Raises:
            RetrievalError: an unknown strategy or document, or ``top_k`` < 1.
        """
        check_top_k(top_k)
        bad = [s for s in strategies if s not in STRATEGIES]
        if bad:
            raise RetrievalError(f"unknown strategy {bad[0]!r}; choose from {', '.join(STRATEGIES)}")
        view = view or self.view
        k = top_k if top_k is not None else self.settings.top_k
        q = self.encode(query) if isinstance(query, str) else np.asarray(query, dtype=np.float32)
        mask = view.doc_mask(doc_ids)
        need = set(strategies)
        if "combined" in need and not budget:  # the budgeted evidence searches its own pools
            need |= set(STRUCTURED)
        cos = node_cosines(view, q) if need & {*STRUCTURED, "combined"} else np.zeros(view.emb.shape[0], np.float32)
        ranked: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
        if "semantic" in need:
            ranked["semantic"] = semantic_search(view, q, self.settings, top_k=k, doc_mask=mask, cos=cos)
        if "tree" in need:
            ranked["tree"] = tree_search(view, q, self.settings, top_k=k, doc_mask=mask, cos=cos)
        if "keyword" in need or ("combined" in need and not budget and self.keyword and isinstance(query, str)):
            ranked["keyword"] = _keyword_lists(view, query, k, mask)
        if "hyperedge" in need:
            ranked["hyperedge"] = hyperedge_search(view, self.hyperedges(view), q, self.settings, top_k=k,
                                                   doc_mask=mask, cos=cos)
        comb_strats: dict[int, list[str]] = {}
        if "combined" in need and budget:
            ranked["combined"], comb_strats = self._budgeted(view, query, q, cos, mask, int(budget))
        elif "combined" in need:
            refs = find_references(query) if isinstance(query, str) else []
            comb: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            for di in np.flatnonzero(mask).tolist():
                lists = {s: ranked[s][di] for s in STRUCTURED if di in ranked[s]}
                if self.keyword and di in ranked.get("keyword", {}):
                    lists["keyword"] = ranked["keyword"][di]
                lists.update(_reference_list(view, di, refs, cos))
                if lists:
                    kk = int(k * self.combined_factor)
                    if getattr(self.settings, "combine_unit", "node") == "page":
                        dv = view.docs[di]
                        ids, sc, who = rrf_fuse_pages(lists, view.page[dv.start:dv.start + dv.n_nodes], kk,
                                                      c=float(getattr(self.settings, "rrf_c", 5.0)), first="reference")
                    else:
                        ids, sc, who = rrf_fuse(lists, kk, first="reference")
                    comb[di] = (ids, sc)
                    comb_strats[di] = who
            ranked["combined"] = comb
        fcos = None
        if "flat" in need:
            fv = self.flat(view)
            fcos = flat_cosines(fv, q)
            ranked["flat"] = flat_search(fv, q, self.settings, top_k=k, doc_mask=mask, cos=fcos)
        return QueryResult(q, cos, ranked, comb_strats, fcos)

    def _budgeted(self, view: CorpusView, query, q: np.ndarray, cos: np.ndarray, mask: np.ndarray, budget: int
                  ) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict[int, list[str]]]:
        """The combined filter evidence of every masked document (:func:`~.combine.fuse_within_budget`):
        ``{doc_index: (node_ids int64 (m,) in the order taken, cosines float32 (m,) with the query)}``
        and the strategies holding each passage."""
        pool = int(getattr(self.settings, "evidence_pool", 40))
        lists = {"semantic": semantic_search(view, q, self.settings, top_k=pool, doc_mask=mask, cos=cos),
                 "tree": tree_search(view, q, self.settings, top_k=pool, doc_mask=mask, cos=cos),
                 "hyperedge": hyperedge_search(view, self.hyperedges(view), q, self.settings, top_k=pool,
                                               doc_mask=mask, cos=cos),
                 "keyword": _keyword_lists(view, query, pool, mask)}
        refs = find_references(query) if isinstance(query, str) else []
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        who: dict[int, list[str]] = {}
        for di in np.flatnonzero(mask).tolist():
            per = {s: got[di] for s, got in lists.items() if di in got}
            if per:
                per["hybrid"] = combsum(per, HYBRID_LISTS)
            per.update(_reference_list(view, di, refs, cos))
            if not per:
                continue
            dv = view.docs[di]
            texts = _PassageTexts(view, di, per, EVIDENCE_ROTATION)
            ids, _, w = fuse_within_budget(per, texts.chars, budget, EVIDENCE_ROTATION, first="reference",
                                            shares=EVIDENCE_SHARES, shingles=texts.shingles,
                                            max_overlap=float(self.settings.evidence_overlap))
            texts.keep()
            # the order is the turns'; the score shown with a passage is its cosine with the query
            # (1 / turn would read "1.000" for every strategy's best passage)
            out[di] = (ids, np.asarray(cos[dv.start + ids], dtype=np.float32))
            # the hybrid list is made of semantic and BM25: name the strategies themselves
            who[di] = ["+".join(x for x in names.split("+") if x != "hybrid") for names in w]
        return out, who

    def to_evidence(self, res: QueryResult, strategy: str, doc_index: int, view: CorpusView | None = None) -> list[Evidence]:
        """The Evidence list of one strategy for one document of a :class:`QueryResult`."""
        view = view or self.view
        got = res.ranked.get(strategy, {}).get(doc_index)
        if got is None:
            return []
        ids, sc = got
        pre = EVIDENCE_PREFIX[strategy]
        if strategy == "flat":
            fv = self.flat(view)
            return [chunk_evidence(view, fv, doc_index, int(c), float(s), f"{pre}{r + 1}") for r, (c, s) in enumerate(zip(ids, sc))]
        out = []
        who = res.combined_strategies.get(doc_index, []) if strategy == "combined" else []
        for r, (nid, s) in enumerate(zip(ids.tolist(), sc.tolist())):
            ev = node_evidence(view, doc_index, int(nid), who[r] if who else strategy, s, f"{pre}{r + 1}")
            out.append(ev)
        return out

    def search(self, query: str, strategy: str = "combined", *, doc_ids: Sequence[str] | None = None,
               top_k: int | None = None) -> dict[str, list[Evidence]]:
        """Evidence per document for one strategy: ``{doc_id: [Evidence, ...]}`` best first.

        Raises:
            RetrievalError: unknown strategy or document, or ``top_k`` < 1.
        """
        view = self.view
        res = self.rank(query, [strategy], doc_ids=doc_ids, top_k=top_k, view=view)
        return {view.docs[di].doc_id: self.to_evidence(res, strategy, di, view) for di in sorted(res.ranked.get(strategy, {}))}
