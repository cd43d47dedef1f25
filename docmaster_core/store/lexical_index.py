"""One persisted lexical (BM25) index over a workspace's collection store (issue 25).

``collection/lexical/`` holds

* ``bm25/``: a `bm25s <https://github.com/xhluca/bm25s>`_ index (``BM25`` with
  ``k1`` = 1.2, ``b`` = 0.75, Lucene idf) whose document ``r`` is row ``r`` of the
  collection store (:mod:`.collection`). A row's tokens are
  :func:`~docmaster_core.text.terms.tokens` of its node's stored content; the ROOT node
  and reference-list / acknowledgement rows (the store's back-matter flag) are indexed
  empty, so they never match. It is read memory-mapped.
* ``tf_*.npy``: the same token counts as a CSR matrix (rows x vocabulary, float32 counts,
  columns = the bm25s vocabulary ids), memory-mapped: a filter's per-document term
  counts of the condition's terms come from here instead of tokenising the trees again.
* ``df.json``: the document frequency of every token over the documents' body text (all
  rows but the back matter), i.e. exactly the statistics
  :func:`docmaster_core.filtering.decider.lexical_stats` computes by walking every tree;
  a filter over candidate documents reads them from here instead.
* ``info.json``: the store generation, row count and document list it was built for.

The index is *derived*: when the store changed (documents added or removed) it is
rebuilt from the stored node texts on next use (bm25s has no incremental update; a
rebuild reads every node once, see docs/results/scale.md for its cost). Writers take
the collection lock; the new index is written to a temporary folder and moved into
place, then ``info.json`` is replaced atomically, so a reader never sees a half-written
index.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .collection import Collection, collection_lock, write_json_atomic
from .readahead import willneed_rows
from ..errors import RetrievalError
from ..text.terms import tokens

__all__ = ["LexicalIndex", "lexical_index", "K1", "B"]

#: BM25 parameters of the node index (those of :mod:`docmaster_core.retrieval.keyword`).
K1, B = 1.2, 0.75
_FORMAT = 2


def _bm25s():
    try:
        import bm25s
    except ImportError as e:  # pragma: no cover - install problem
        raise RetrievalError("bm25s is not installed (pip install -r requirements.txt)") from e
    return bm25s


def _docs_key(coll: Collection) -> str:
    h = hashlib.sha256()
    for d in coll.doc_ids:
        h.update(d.encode())
        h.update(b"\0")
    h.update(np.asarray(coll.starts, dtype=np.int64).tobytes())
    return h.hexdigest()[:24]


def _info(d: Path) -> dict:
    try:
        return json.loads((d / "info.json").read_text())
    except (OSError, ValueError):
        return {}


@dataclass
class LexicalIndex:
    """The loaded lexical index of a collection snapshot.

    Attributes:
        bm25: The ``bm25s.BM25`` node index (memory-mapped score matrix), one document
            per store row.
        n_docs: Documents N the document frequencies are counted over.
        df: Token -> number of documents whose body contains it.
        rows: Store rows R covered.
    """

    bm25: object
    n_docs: int
    df: Counter
    rows: int

    tf_indptr: np.ndarray | None = None
    tf_indices: np.ndarray | None = None
    tf_data: np.ndarray | None = None

    def term_counts(self, rows: np.ndarray, terms: Sequence[str]) -> np.ndarray:
        """How often each term occurs in each row (the stored token counts).

        Args:
            rows: int64 (n,) store rows.
            terms: T terms.

        Returns:
            float64 (n, T) counts (0 for an unknown term, the ROOT node and back matter).
        """
        out = np.zeros((len(rows), len(terms)), dtype=np.float64)
        cols = {self.bm25.vocab_dict[t]: j for j, t in enumerate(terms) if t in self.bm25.vocab_dict}
        if not cols or self.tf_indptr is None:
            return out
        want = np.array(sorted(cols), dtype=np.int64)
        where = np.array([cols[c] for c in want], dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        willneed_rows(self.tf_indptr, rows, np.full(rows.size, 2))  # read at once (memory-mapped)
        starts = np.asarray(self.tf_indptr[rows], dtype=np.int64)
        lens = np.asarray(self.tf_indptr[rows + 1], dtype=np.int64) - starts
        total = int(lens.sum())
        if total == 0:
            return out
        # the rows' entries read at once, nothing around them (the arrays are memory-mapped)
        willneed_rows(self.tf_indices, starts, lens)
        willneed_rows(self.tf_data, starts, lens)
        first = np.r_[0, np.cumsum(lens)[:-1]]
        pos = np.repeat(starts - first, lens) + np.arange(total)
        idx = np.asarray(self.tf_indices[pos], dtype=np.int64)
        keep = np.isin(idx, want)
        row_of = np.repeat(np.arange(rows.size), lens)[keep]
        out[row_of, where[np.searchsorted(want, idx[keep])]] = np.asarray(self.tf_data[pos[keep]], dtype=np.float64)
        return out

    def node_scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 score of every store row for a bag of query terms.

        Args:
            terms: Query tokens (e.g. :func:`~docmaster_core.text.terms.condition_terms`).

        Returns:
            float32 (R,) scores, 0 where no term occurs (or no term is known).
        """
        known = [t for t in dict.fromkeys(terms) if t in self.bm25.vocab_dict]
        if not known or self.rows == 0:
            return np.zeros(self.rows, dtype=np.float32)
        return np.asarray(self.bm25.get_scores(known), dtype=np.float32)


def _build(ws, coll: Collection, out: Path) -> tuple[int, Counter]:
    """Tokenise every row of ``coll`` from the stored node texts and write the bm25s
    index to ``out``; returns ``(n_docs, df)``."""
    bm25s = _bm25s()
    vocab: dict[str, int] = {}
    corpus_ids: list[list[int]] = []
    df: Counter = Counter()
    meta = coll.meta
    for i, doc_id in enumerate(coll.doc_ids):
        a, b = int(coll.starts[i]), int(coll.starts[i + 1])
        rows = ws.node_columns(doc_id, ("content",))[: b - a]
        back = np.asarray(meta["back"][a:b], dtype=bool)
        seen: set[str] = set()
        for j, (content,) in enumerate(rows):
            if back[j]:
                corpus_ids.append([])
                continue
            toks = tokens(content or "")
            seen.update(toks)
            corpus_ids.append([vocab.setdefault(t, len(vocab)) for t in toks] if j else [])
        corpus_ids.extend([] for _ in range(b - a - len(rows)))
        df.update(seen)
    vocab.setdefault("", len(vocab))  # bm25s scores empty rows through the empty token
    lengths = np.fromiter((len(set(x)) for x in corpus_ids), dtype=np.int64, count=len(corpus_ids))
    indptr = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    for r, ids in enumerate(corpus_ids):
        if ids:
            u, c = np.unique(np.asarray(ids, dtype=np.int32), return_counts=True)
            indices[indptr[r]:indptr[r + 1]] = u
            data[indptr[r]:indptr[r + 1]] = c
    np.save(out / "tf_indptr.npy", indptr)
    np.save(out / "tf_indices.npy", indices)
    np.save(out / "tf_data.npy", data)
    retr = bm25s.BM25(k1=K1, b=B)
    retr.index((corpus_ids, vocab), show_progress=False, create_empty_token=False)
    retr.save(str(out / "bm25"))
    (out / "df.json").write_text(json.dumps({"n_docs": len(coll.doc_ids), "df": df}))
    return len(coll.doc_ids), df


def lexical_index(ws, coll: Collection) -> LexicalIndex:
    """The lexical index of ``coll``, (re)built first when it is missing or stale.

    Args:
        ws: The :class:`~docmaster_core.store.workspace.Workspace` (node texts).
        coll: Its :class:`~docmaster_core.store.collection.Collection` snapshot.

    Returns:
        The :class:`LexicalIndex` (bm25s score matrix memory-mapped).

    Raises:
        RetrievalError: bm25s is not installed.
        OSError: the index cannot be written (read-only workspace).
    """
    bm25s = _bm25s()
    d = coll.path / "lexical"
    want = {"format": _FORMAT, "generation": coll.generation, "rows": coll.rows, "docs": _docs_key(coll)}

    def load(info: dict) -> LexicalIndex:
        idx = bm25s.BM25.load(str(d / "bm25"), mmap=True)
        dfj = json.loads((d / "df.json").read_text())
        tf = [np.load(d / f"tf_{n}.npy", mmap_mode="r") for n in ("indptr", "indices", "data")]
        return LexicalIndex(idx, int(dfj["n_docs"]), Counter(dfj["df"]), int(info["rows"]), *tf)

    info = _info(d)
    if {k: info.get(k) for k in want} == want:
        return load(info)
    with collection_lock(coll.path):
        info = _info(d)
        if {k: info.get(k) for k in want} == want:
            return load(info)
        tmp = coll.path / f".lexical.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        _build(ws, coll, tmp)
        old = coll.path / f".lexical.{os.getpid()}.old"
        shutil.rmtree(old, ignore_errors=True)
        if d.exists():
            os.replace(d, old)
        os.replace(tmp, d)
        shutil.rmtree(old, ignore_errors=True)
        write_json_atomic(d / "info.json", want)
        from .docinfo import prune

        prune(coll.path.parent, coll.doc_ids)  # derived per-document arrays of removed documents
        return load(want)
