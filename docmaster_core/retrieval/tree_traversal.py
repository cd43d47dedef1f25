"""Document-tree traversal retrieval (SPEC F6, strategy 1; DocMaster Sec. 2.4 (i)).

"Searches title nodes first and then retrieves content under the most relevant
sections." Each section (a TITLE node, plus a pseudo-section for the content that
hangs directly under ROOT, e.g. an abstract) is scored against the query by

    sigma(t, q) = lam * cos(e_title(t), e_q) + (1 - lam) * cos(c(t), e_q)

where ``c(t)`` is the unit centroid of the content-node embeddings in the section's
subtree (a stand-in for the embedding of the section summary, which is composed
bottom-up from the same children), and ``lam`` = 0.5 by default. The best
``n_sections`` sections of each document are taken (more, best first, while they hold
fewer than ``top_k`` content nodes); the content nodes under them are
ranked by ``0.5 * (sigma(section) + cos(e_v, e_q))`` and the ``top_k`` best become
evidence. Reference lists and acknowledgements are never chosen as sections.

Relies on the document-tree contract that nodes are stored in pre-order, so the
subtree of node ``i`` is the id range ``[i, i + size(i))``.
"""
from __future__ import annotations

import numpy as np

from ..store.docinfo import load_arrays, save_arrays

from ..model import NodeType
from .corpus import TYPE_CODES, CorpusView

__all__ = ["SectionIndex", "section_index", "section_scores", "tree_search"]

_TITLE = TYPE_CODES[NodeType.TITLE]
_ROOT = TYPE_CODES[NodeType.ROOT]


class SectionIndex:
    """Section vectors of a corpus view (built once per view, cached on it).

    Attributes:
        rows: int64 (S,) view rows of the sections: every TITLE row and every ROOT row
            (the ROOT entry stands for the content directly under ROOT).
        title_emb: float32 (S, d) embedding of the heading (ROOT: the document title).
        centroid: float32 (S, d) unit centroid of the content embeddings of the section
            (zero row when the section has no content).
        size: int64 (N,) subtree size of every view row.
        direct_parent_section: int64 (N,) view row of each row's nearest enclosing
            TITLE/ROOT (itself for TITLE/ROOT rows).
        has_content: bool (S,) the section has content (non-zero centroid).
        back: bool (S,) the section is back matter (references, acknowledgements).
    """

    def __init__(self, view: CorpusView):
        n = view.emb.shape[0]
        d = view.emb.shape[1]
        size = np.ones(n, dtype=np.int64)
        enc = np.arange(n, dtype=np.int64)
        rows, cents = [], []
        for dv in view.docs:
            s, e, sec, cent = _doc_sections(view, dv)
            size[dv.rows] = s
            enc[dv.rows] = e + dv.start
            rows.append(sec + dv.start)
            cents.append(cent)
        self.size = size
        self.direct_parent_section = enc
        self.rows = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
        self.title_emb = np.asarray(view.emb[self.rows], dtype=np.float32)
        cent = np.concatenate(cents).astype(np.float32) if cents else np.zeros((0, d), np.float32)
        norms = np.linalg.norm(cent, axis=1, keepdims=True)
        self.centroid = np.where(norms > 0, cent / np.maximum(norms, 1e-12), 0.0).astype(np.float32)
        self.has_content = norms[:, 0] > 0
        self.back = view.back_matter[self.rows]


def _doc_parents(view: CorpusView, dv) -> np.ndarray:
    """int64 (n,) parent node id of every node of one document (-1 for ROOT), from the view's
    ``doc_cache``, ``collection/docinfo/parents`` or the tree."""
    key = ("parents", dv.doc_id, dv.n_nodes)
    par = view.doc_cache.get(key)
    if par is None:
        got = load_arrays(view.ws_path, "parents", dv.doc_id, str(dv.n_nodes))
        par = got["parents"] if got is not None else None
        if par is None or par.shape != (dv.n_nodes,):
            par = np.asarray(dv.tree.parents())
            save_arrays(view.ws_path, "parents", dv.doc_id, str(dv.n_nodes), parents=par)
        view.doc_cache.put(key, par, par.nbytes + 100)
    return par


def _doc_sections(view: CorpusView, dv) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One document's part of a :class:`SectionIndex`, in its own node ids.

    Kept in the view's ``doc_cache`` (shared with the candidate views of a filter at scale,
    :func:`~.corpus.sub_view`), so a document's sections are computed once per process, not
    once per filter (issue 37: 0.65 s of a warm 5k filter rebuilt them for its candidates).

    Returns:
        ``(size, enclosing, sections, centroid_sums)``: int64 (n,) subtree size of every node;
        int64 (n,) node id of each node's nearest enclosing TITLE/ROOT (itself for those);
        int64 (S_d,) node ids of the sections (TITLE and ROOT nodes, in id order); float32
        (S_d, d) sum of the content embeddings under each section (ROOT: the content directly
        under it).
    """
    key = ("sections", dv.doc_id, dv.n_nodes)
    got = view.doc_cache.get(key)
    if got is not None:
        return got
    par = _doc_parents(view, dv)
    m = dv.n_nodes
    s = np.ones(m, dtype=np.int64)
    for i in range(m - 1, 0, -1):  # pre-order: children after parents
        s[par[i]] += s[i]
    tc = view.type_code[dv.rows]
    is_sec = (tc == _TITLE) | (tc == _ROOT)
    enc = np.arange(m, dtype=np.int64)
    for i in range(1, m):
        if not is_sec[i]:
            p = int(par[i])
            enc[i] = enc[p] if not is_sec[p] else p
    sec = np.flatnonzero(is_sec).astype(np.int64)
    d = view.emb.shape[1]
    e = np.asarray(view.emb[dv.rows], dtype=np.float32) * (~is_sec)[:, None]
    e = np.vstack([e, np.zeros((1, d), np.float32)])
    cent = np.zeros((sec.size, d), dtype=np.float32)
    sub = [j for j, r in enumerate(sec.tolist()) if r != 0]  # ROOT: only content directly under it
    if sub:
        idx = np.ravel([[int(sec[j]), int(sec[j] + s[sec[j]])] for j in sub])
        cent[sub] = np.add.reduceat(e, idx, axis=0)[0::2]
    if sec.size and sec[0] == 0:
        direct = np.flatnonzero((enc == 0) & ~is_sec)
        if direct.size:
            cent[0] = e[direct].sum(axis=0)
    got = (s, enc, sec, cent)
    view.doc_cache.put(key, got, s.nbytes + enc.nbytes + sec.nbytes + cent.nbytes + 200)
    return got


def section_index(view: CorpusView) -> SectionIndex:
    """The cached :class:`SectionIndex` of a view."""
    return view.aux("section_index", lambda: SectionIndex(view))


def section_scores(view: CorpusView, q: np.ndarray, lam: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """sigma(t, q) for every section of the view.

    Args:
        q: float32 (d,) unit query.
        lam: Weight of the heading cosine against the content-centroid cosine.

    Returns:
        ``(rows, sigma)``: int64 (S,) view rows and float32 (S,) scores. Sections with no
        content score ``lam * cos(title)`` only; back-matter sections get -inf.
    """
    si = section_index(view)
    q = np.asarray(q, dtype=np.float32)
    ct = si.title_emb @ q
    cc = si.centroid @ q
    sig = np.where(si.has_content, lam * ct + (1 - lam) * cc, lam * ct).astype(np.float32)
    sig[si.back] = -np.inf
    return si.rows, sig


def tree_search(view: CorpusView, q: np.ndarray, settings, *, top_k: int | None = None,
                doc_mask: np.ndarray | None = None, cos: np.ndarray | None = None,
                n_sections: int = 3, lam: float = 0.5) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Strategy 1: per-document evidence from the best sections (DocMaster Sec. 2.4 (i)).

    Args:
        view: The corpus view.
        q: float32 (d,) unit query vector.
        settings: RetrievalSettings (``top_k``).
        top_k: Content nodes per document (default ``settings.top_k``).
        doc_mask: Optional bool (D,) documents to search.
        cos: Optional precomputed float32 (N,) node cosines.
        n_sections: Sections chosen per document.
        lam: Heading weight in sigma.

    Returns:
        ``{doc_index: (node_ids int64, scores float32)}`` best first.
    """
    from .semantic import node_cosines

    k = top_k or settings.top_k
    if cos is None:
        cos = node_cosines(view, q)
    si = section_index(view)
    rows, sig = section_scores(view, q, lam)
    sec_doc = view.doc_of[rows]
    content = (view.type_code != _TITLE) & (view.type_code != _ROOT) & ~view.back_matter
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    order = np.lexsort((-sig, sec_doc))
    bounds = np.r_[0, np.flatnonzero(np.diff(sec_doc[order])) + 1, order.size]
    for a, b in zip(bounds[:-1], bounds[1:]):
        di = int(sec_doc[order[a]])
        if doc_mask is not None and not doc_mask[di]:
            continue
        dv = view.docs[di]
        cand_rows: list[np.ndarray] = []
        cand_sig: list[np.ndarray] = []
        taken = 0
        got: set[int] = set()
        for j in order[a:b]:
            if not np.isfinite(sig[j]) or (taken >= n_sections and len(got) >= k):
                break
            r = int(rows[j])
            if r == dv.start:  # ROOT pseudo-section: content directly under ROOT
                sub = np.arange(dv.start + 1, dv.start + dv.n_nodes)
                sub = sub[si.direct_parent_section[sub] == dv.start]
            else:
                sub = np.arange(r + 1, r + int(si.size[r]))
            sub = sub[content[sub]]
            if sub.size == 0:
                continue
            taken += 1
            got.update(sub.tolist())
            cand_rows.append(sub)
            cand_sig.append(np.full(sub.size, sig[j], dtype=np.float32))
        if not cand_rows:
            continue
        cr = np.concatenate(cand_rows)
        cs = np.concatenate(cand_sig)
        sc = 0.5 * (cs + cos[cr])
        # a node under two chosen sections (nested) keeps its best score
        o = np.lexsort((-sc, cr))
        cr, sc = cr[o], sc[o]
        first = np.r_[True, cr[1:] != cr[:-1]]
        cr, sc = cr[first], sc[first]
        best = np.argsort(-sc, kind="stable")[:k]
        out[di] = (view.node_of[cr[best]].astype(np.int64), sc[best].astype(np.float32))
    return out
