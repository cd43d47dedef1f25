"""The embedded offline LLM backend: extractive, embedding-based, no server, no key.

Every task of the :class:`~docmaster_core.llm.base.LLM` facade is answered from the
sentence embedder (all-MiniLM-L6-v2 by default) and results are labelled
``backend="offline"``:

* summaries: extractive; the sentences closest to the text's embedding centroid
  (centrality), greedily, in reading order, never more than ``max_words`` words;
* section summaries: central sentences among the children's summaries (each child
  weighs the same in the centroid), the centroid pulled towards the section title;
* anchor-pair labels: must-link iff cosine >= :data:`PAIR_THRESHOLD`;
* paragraph grouping: average-linkage agglomerative clustering of the paragraph
  embeddings with cosine-distance threshold :data:`GROUP_DISTANCE`; extractive
  30-50 word group summaries;
* filter decisions: the condition is scored against every evidence sentence; the
  score ``0.5 * max + 0.5 * mean(top 3)`` of the cosines is compared with
  :data:`DECIDE_THRESHOLD` (settable). Instructions inside document text are just
  sentences to score, so prompt injection cannot change a decision;
* answers: the evidence sentences most similar to the question, quoted with their
  evidence ids as citations.

Calibration (all-MiniLM-L6-v2; text blocks of >= 30 words from the first 8 pages
of the 88 PDFs in ``../shared/corpus/pdf``, 2,426 blocks, 9,781 sentences):

* pairs: cosine of adjacent blocks of one document (same topic, n = 2,339) has
  median 0.51; blocks >= 3 pages apart in one document (n = 6,451) median 0.37;
  blocks of different documents median 0.12. The equal-error threshold between
  adjacent and >= 3-pages-apart blocks is 0.44 (35 % error each way: paragraph
  topics inside one paper overlap), so must-link iff cos >= 0.44, and paragraphs are
  grouped while their average cosine is >= 0.44 (distance threshold 0.56);
* decisions: 12 conditions (e.g. "papers that use reinforcement learning", "a user
  manual for a household appliance") x 87 documents, positives hand-assigned from
  the titles (45 positive, 999 negative); evidence = the 8 blocks closest to the
  condition. The threshold with the best balanced accuracy is 0.43: true-positive
  rate 0.93, true-negative rate 0.92;
* ``ANSWER_MIN_COS`` = 0.25 is a heuristic floor (not calibrated) that keeps
  unrelated sentences out of answers.

Results are cached in the workspace response cache when one is given (model name
``offline/<embedder name>``, thresholds in the key), so re-runs skip the embedder.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import EmbeddingError
from ..model import Answer, Citation, Decision, Evidence
from .base import UsageTracker
from ..text.words import (answer_sentences, count_words, ends_its_paragraph, is_cut_prose, is_empty_label, is_toc_entry,
                          normalize_ws, split_sentences,
                          truncate_words)
from .cache import LLMCache, make_key
from .extractive import norm_key, condition_core, continues, extractive_summary, join_sentences, lexical_vectors

__all__ = [
    "OfflineLLM",
    "OFFLINE_VERSION",
    "PAIR_THRESHOLD",
    "GROUP_DISTANCE",
    "DECIDE_THRESHOLD",
    "ANSWER_MIN_COS",
    "extractive_summary",
    "join_sentences",
    "condition_core",
    "join_cut_sentences",
]

#: Version of the offline algorithms; part of every offline cache key.
OFFLINE_VERSION = "offline-v2"

#: Version of the extractive summary rule, part of each summary's cache key.
SUMMARY_VERSION = 3

#: Must-link iff cos(e_a, e_b) >= this (calibrated, see the module docstring).
PAIR_THRESHOLD = 0.44
#: Cosine distance (1 - cos) below which paragraphs are merged (average linkage):
#: 1 - PAIR_THRESHOLD, i.e. a group's average cosine is a must-link cosine.
GROUP_DISTANCE = 0.56
#: Filter decision threshold on 0.5*max + 0.5*mean(top-3) sentence cosine (calibrated).
DECIDE_THRESHOLD = 0.43
#: Evidence sentences below this cosine to the question are not quoted in answers.
ANSWER_MIN_COS = 0.25
#: An answer quotes, beside its best sentence and those of its passage and the adjacent ones, only sentences
#: covering at least this share of the best's weighted question terms
#: (:func:`~docmaster_core.text.answer_units.rank_answer_units`): a contract's parties paragraph, which holds only
#: the names the question was routed by, is no answer beside its notice clause (newcomer 15 read such a sentence
#: first, the answer being in reading order). Not for a question about several documents, whose sentences are
#: chosen per document (``SEVERAL_RELATIVE_COVERAGE``).
ANSWER_RELATIVE_COVERAGE = 0.25

NO_ANSWER_TEXT = "The retrieved passages contain no sentence that answers this question (offline extractive mode)."


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")  # a blank line between two paragraphs of a passage


#: A question about several documents lists a document whose sentence covers at least this share
#: of the best sentence's coverage (:func:`several_coverage`).
SEVERAL_RELATIVE_COVERAGE = 0.6


def several_coverage(question: str, units: Sequence[str]) -> np.ndarray:
    """float (n,): the share of the question's term weight each sentence covers, a term
    weighing ``log(1 + n / (1 + df))`` over the ``n`` sentences (the words most sentences
    share weigh least: "party" in a contract) and counting when a word of the sentence begins
    with its stem ("competitive" for "compet"); stems under 4 letters are left out. Zeros
    when the question has no such term."""
    from ..text.answer_units import profile_question, terms_of

    asked = [t for t in profile_question(question).terms if len(t) >= 4]
    if not asked or not units:
        return np.zeros(len(units))
    has = np.array([[any(w.startswith(t) for w in terms_of(u)) for t in asked] for u in units], dtype=bool)
    w = np.log1p(len(units) / (1.0 + has.sum(axis=0)))
    return has.astype(float) @ w / float(w.sum())


def join_cut_sentences(evidence: Sequence[Evidence], units: list[str], owner: list[int]
                       ) -> tuple[list[str], list[int], dict[int, list[tuple[int, str]]]]:
    """Join a sentence the parser cut at a page or node break: the last unit of a passage that
    does not end like a sentence ("... the Party which was not subject to the Change of Control
    may") and the first unit of the document's next node, when that is given too and starts in
    lower case ("terminate this Agreement upon six (6) months advance written notification.").

    Args:
        evidence: The passages (``doc_id``, ``node_id``).
        units: Answer units in passage order, length n.
        owner: Evidence index of each unit, length n (a passage's units next to each other).

    Returns:
        The units and owners with each such pair joined into one unit (owned by the first
        passage), and ``{unit index: [(evidence index, piece), (evidence index, piece)]}`` for
        the joined units.
    """
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, j in enumerate(owner):
        first.setdefault(j, i)
        last[j] = i
    at = {(e.doc_id, e.node_id): j for j, e in enumerate(evidence)}
    joined: dict[int, int] = {}  # last unit of a passage -> first unit of the next node's passage
    for j, e in enumerate(evidence):
        k = at.get((e.doc_id, e.node_id + 1))
        if j not in last or k is None or k not in first:
            continue
        a, b = units[last[j]], units[first[k]]
        head = b.lstrip("\"'\u201c\u2018")  # not "(": "(f) is materially false" is an item of a list
        if not a.rstrip("\"'\u201d\u2019)]").endswith((".", "!", "?", ";", ":")) and head[:1].islower():
            joined[last[j]] = first[k]
    if not joined:
        return units, owner, {}
    taken = set(joined.values())
    out_u: list[str] = []
    out_o: list[int] = []
    parts: dict[int, list[tuple[int, str]]] = {}
    for i, (u, j) in enumerate(zip(units, owner)):
        if i in taken:  # quoted with the piece before it
            continue
        if i in joined:
            b = joined[i]
            parts[len(out_u)] = [(j, u), (owner[b], units[b])]
            u = f"{u} {units[b]}"
        out_u.append(u)
        out_o.append(j)
    return out_u, out_o, parts


class OfflineLLM:
    """The LLM facade without a server: extractive and embedding-based (SPEC F8).

    Args:
        embedder: Sentence embedder; ``None`` = :func:`docmaster_core.embedding.embedders.get_embedder`
            on first use.
        cache: Optional response cache (results are deterministic; the cache only
            saves embedder time and pins results across runs).
        decide_threshold: Filter threshold on the evidence score (cosine units).
        pair_threshold: Must-link threshold on the pair cosine.
        group_distance: Cosine-distance threshold of the paragraph clustering.
        answer_min_cos: Minimum cosine of an answer sentence to the question.
        answer_max_sentences: Sentences quoted per answer.
        embedding_cache_size: Texts kept in the in-memory embedding LRU (0 = off;
            20,000 x 384 float32 is about 31 MB).
        summary_vectors: Sentence vectors for extractive summaries: ``"lexical"``
            (default; :func:`lexical_vectors`, no model, so summaries cost almost
            nothing beside the node embeddings) or ``"embedding"`` (the sentence
            embedder; better centrality, roughly doubles ingest time on CPU).

    Raises:
        EmbeddingError: from the embedder, on first use, when it cannot load.
    """

    backend_name = "offline"
    is_offline = True
    max_concurrency = 1

    def __init__(
        self,
        embedder=None,
        *,
        cache: LLMCache | None = None,
        decide_threshold: float = DECIDE_THRESHOLD,
        pair_threshold: float = PAIR_THRESHOLD,
        group_distance: float = GROUP_DISTANCE,
        answer_min_cos: float = ANSWER_MIN_COS,
        answer_max_sentences: int = 4,
        embedding_cache_size: int = 20000,
        summary_vectors: str = "lexical",
    ):
        self._embedder = embedder
        self.cache = cache
        self.decide_threshold = float(decide_threshold)
        self.pair_threshold = float(pair_threshold)
        self.group_distance = float(group_distance)
        self.answer_min_cos = float(answer_min_cos)
        self.answer_max_sentences = int(answer_max_sentences)
        self.embedding_cache_size = int(embedding_cache_size)
        if summary_vectors not in ("lexical", "embedding"):
            raise ValueError(f"summary_vectors must be 'lexical' or 'embedding', got {summary_vectors!r}")
        self.summary_vectors = summary_vectors
        self.usage = UsageTracker()
        self._vecs: OrderedDict[str, np.ndarray] = OrderedDict()
        self._vec_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OfflineLLM(decide_threshold={self.decide_threshold}, pair_threshold={self.pair_threshold})"

    # ------------------------------------------------------------------ plumbing
    def check_ready(self) -> None:
        """Nothing to check: the offline backend needs no key and no server."""

    def check_reachable(self) -> None:
        """Nothing to probe: the offline backend runs in this process."""

    @property
    def embedder(self):
        """The sentence embedder (loaded lazily)."""
        if self._embedder is None:
            from ..embedding.embedders import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    @property
    def model_key(self) -> str:
        """Model name used in cache keys: ``offline/<embedder name>``."""
        return f"offline/{getattr(self.embedder, 'name', type(self.embedder).__name__)}/{self.summary_vectors}"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts, float32 (n, d); repeated texts come from a bounded in-memory LRU.

        The LRU (``embedding_cache_size`` texts) makes repeated evidence cheap, e.g.
        the same passages judged against several conditions or configurations.
        """
        dim = int(getattr(self.embedder, "dim", 384))
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        with self._vec_lock:
            found = {t: self._vecs[t] for t in dict.fromkeys(texts) if t in self._vecs}
            for t in found:
                self._vecs.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            new = np.asarray(self.embedder.encode(missing), dtype=np.float32)
            if new.ndim != 2 or new.shape[0] != len(missing):
                raise EmbeddingError(f"embedder returned shape {new.shape} for {len(missing)} texts")
            with self._vec_lock:
                for t, v in zip(missing, new):
                    found[t] = v
                    if self.embedding_cache_size > 0:
                        self._vecs[t] = v
                while len(self._vecs) > self.embedding_cache_size:
                    self._vecs.popitem(last=False)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    def _summary_encode(self, texts: Sequence[str]) -> np.ndarray:
        """Sentence vectors used by the extractive summaries (see ``summary_vectors``)."""
        if self.summary_vectors == "lexical":
            return lexical_vectors(texts)
        return self._encode(texts)

    def _cached_many(
        self, task: str, payloads: list[Any], compute: Callable[[list[int]], list[Any]]
    ) -> list[Any]:
        """Look payloads up in the cache, compute the misses in one batch, store them."""
        n = len(payloads)
        if self.cache is None:
            return compute(list(range(n)))
        model = self.model_key
        keys = [make_key(task, model, OFFLINE_VERSION, p) for p in payloads]
        hits = self.cache.get_many(keys)
        out: list[Any] = [hits.get(k) for k in keys]
        miss = [i for i, k in enumerate(keys) if k not in hits]
        if miss:
            vals = compute(miss)
            for i, v in zip(miss, vals):
                out[i] = v
            self.cache.put_many([(keys[i], task, model, OFFLINE_VERSION, out[i]) for i in miss])
        for _ in range(n - len(miss)):
            self.usage.record(task, None, cached=True)
        return out

    # ------------------------------------------------------------------ summaries
    def summarize(self, text: str, *, doc_id: str | None = None, max_words: int = 50) -> str:
        """Extractive summary of at most ``max_words`` words; short text is its own summary."""
        return self.summarize_many([text], doc_id=doc_id, max_words=max_words)[0]

    def summarize_many(self, texts: Sequence[str], *, doc_id: str | None = None, max_words: int = 50) -> list[str]:
        """:meth:`summarize` for many texts with one embedder call.

        Returns:
            One summary per text (``""`` for blank text), each <= ``max_words`` words.
        """
        if max_words < 1:
            raise ValueError("max_words must be >= 1")
        norm = [normalize_ws(t) for t in texts]
        out = [t if count_words(t) <= max_words else None for t in norm]
        todo = [i for i, v in enumerate(out) if v is None]
        if todo:
            # "v": the summary rule's version (2: a long sentence's later windows are no summary start; 3: nor
            # are they added to fill a short summary, unless right after the piece they continue)
            payloads = [{"text": norm[i], "max_words": max_words, "v": SUMMARY_VERSION} for i in todo]

            def compute(idx: list[int]) -> list[str]:
                sent_lists = [split_sentences(norm[todo[j]]) for j in idx]
                flat = [s for sl in sent_lists for s in sl if len(sl) > 1]
                emb = self._summary_encode(flat)
                res, pos = [], 0
                for sl in sent_lists:
                    if len(sl) <= 1:
                        res.append(truncate_words(sl[0] if sl else "", max_words))
                        continue
                    res.append(extractive_summary(sl, emb[pos : pos + len(sl)], max_words))
                    pos += len(sl)
                return res

            for i, v in zip(todo, self._cached_many("summarize", payloads, compute)):
                out[i] = v
        return [v or "" for v in out]

    def summarize_section(
        self, title: str, child_summaries: list[str], *, doc_id: str | None = None, max_words: int = 80
    ) -> str:
        """Section summary: central sentences among the children's summaries (<= ``max_words`` words).

        With no child summaries, the title is returned.
        """
        return self.summarize_section_many([(title, child_summaries)], doc_id=doc_id, max_words=max_words)[0]

    def summarize_section_many(
        self, items: Sequence[tuple[str, list[str]]], *, doc_id: str | None = None, max_words: int = 80
    ) -> list[str]:
        """:meth:`summarize_section` for many sections with one embedder call."""
        if max_words < 1:
            raise ValueError("max_words must be >= 1")
        titles = [normalize_ws(t) for t, _ in items]
        children = [[normalize_ws(s) for s in ch if s and s.strip()] for _, ch in items]
        out: list[str | None] = []
        for t, ch in zip(titles, children):
            if not ch:
                out.append(truncate_words(t, max_words) if t else "")
            elif sum(count_words(s) for s in ch) <= max_words:
                out.append(join_sentences(ch))
            else:
                out.append(None)
        todo = [i for i, v in enumerate(out) if v is None]
        if todo:
            payloads = [{"title": titles[i], "children": children[i], "max_words": max_words, "v": SUMMARY_VERSION}
                        for i in todo]

            def compute(idx: list[int]) -> list[str]:
                sent_lists, weight_lists, cont_lists = [], [], []
                for j in idx:
                    sl, wl, cl = [], [], []
                    for c in children[todo[j]]:
                        cs = split_sentences(c)
                        sl.extend(cs)
                        wl.extend([1.0 / len(cs)] * len(cs))  # every child counts equally
                        # a child's later windows of a long sentence; its first piece continues no other child
                        cl.extend([k > 0 and continues(cs[k - 1], cs[k]) for k in range(len(cs))])
                    sent_lists.append(sl)
                    weight_lists.append(wl)
                    cont_lists.append(cl)
                heads = [titles[todo[j]] or " " for j in idx]
                emb = self._summary_encode(heads + [s for sl in sent_lists for s in sl])
                res, pos = [], len(heads)
                for k, (sl, wl, cl) in enumerate(zip(sent_lists, weight_lists, cont_lists)):
                    title_vec = emb[k] if titles[todo[idx[k]]] else None
                    res.append(
                        extractive_summary(
                            sl, emb[pos : pos + len(sl)], max_words, query=title_vec, query_weight=0.3,
                            weights=np.asarray(wl), continued=cl,
                        )
                    )
                    pos += len(sl)
                return res

            for i, v in zip(todo, self._cached_many("summarize_section", payloads, compute)):
                out[i] = v
        return [v or "" for v in out]

    # ------------------------------------------------------------------ index tasks
    def label_pairs(
        self,
        pairs: list[tuple[str, str]],
        *,
        cosines: np.ndarray | None = None,
        doc_id: str | None = None,
    ) -> list[bool]:
        """Must-link iff the pair cosine >= :attr:`pair_threshold` (0 calls).

        Args:
            pairs: k text pairs.
            cosines: Optional float array (k,) of pair cosines; computed with the
                embedder when ``None``.

        Raises:
            ValueError: when ``cosines`` does not have shape (k,).
        """
        k = len(pairs)
        if k == 0:
            return []
        if cosines is not None:
            cos = np.asarray(cosines, dtype=np.float64).reshape(-1)
            if cos.shape[0] != k:
                raise ValueError(f"cosines has {cos.shape[0]} values for {k} pairs")
        else:
            emb = self._encode([a or " " for a, _ in pairs] + [b or " " for _, b in pairs])
            cos = np.einsum("ij,ij->i", emb[:k], emb[k:]).astype(np.float64)
        return [bool(c >= self.pair_threshold) for c in cos]

    def group_paragraphs(
        self, texts: list[str], *, embeddings: np.ndarray | None = None, doc_id: str | None = None
    ) -> list[tuple[list[int], str]]:
        """Hyper-edge groups by average-linkage clustering of paragraph embeddings.

        Paragraphs whose cosine distance (1 - cos, average linkage) stays below
        :attr:`group_distance` form one group. Summaries are extractive, 30-50 words
        (fewer only when the members have fewer words).

        Args:
            texts: n paragraph texts.
            embeddings: Optional float32 array (n, d); computed when ``None``.

        Returns:
            Groups ``(indices ascending, summary)`` ordered by their first index; a
            partition of ``range(n)``.

        Raises:
            ValueError: when ``embeddings`` does not have n rows.
        """
        n = len(texts)
        if n == 0:
            return []
        if embeddings is None:
            emb = self._encode([t or " " for t in texts])
        else:
            emb = np.asarray(embeddings, dtype=np.float32)
            if emb.ndim != 2 or emb.shape[0] != n:
                raise ValueError(f"embeddings shape {emb.shape} does not match {n} texts")
        labels = self._cluster(emb)
        groups: dict[int, list[int]] = {}
        for i, lab in enumerate(labels):
            groups.setdefault(int(lab), []).append(i)
        members = sorted(groups.values(), key=lambda g: g[0])
        payloads = [{"texts": [normalize_ws(texts[i]) for i in g], "min_words": 30, "max_words": 50,
                     "v": SUMMARY_VERSION} for g in members]

        def compute(idx: list[int]) -> list[str]:
            split = [[split_sentences(t) for t in payloads[j]["texts"]] for j in idx]
            sent_lists = [[s for cs in texts_ for s in cs] for texts_ in split]
            # a text's later windows of a long sentence; a text's first piece continues no other text
            cont_lists = [[k > 0 and continues(cs[k - 1], cs[k]) for cs in texts_ for k in range(len(cs))]
                          for texts_ in split]
            emb_s = self._summary_encode([s for sl in sent_lists for s in sl])
            res, pos = [], 0
            for sl, cl in zip(sent_lists, cont_lists):
                res.append(extractive_summary(sl, emb_s[pos : pos + len(sl)], 50, min_words=30, continued=cl))
                pos += len(sl)
            return res

        summaries = self._cached_many("group_paragraphs", payloads, compute)
        return [(g, s) for g, s in zip(members, summaries)]

    def _cluster(self, emb: np.ndarray) -> np.ndarray:
        """Average-linkage labels on cosine distance; shape (n,), int."""
        n = emb.shape[0]
        if n == 1:
            return np.zeros(1, dtype=np.int64)
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        unit = emb / np.where(norms == 0, 1.0, norms)
        dist = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)
        np.fill_diagonal(dist, 0.0)
        from sklearn.cluster import AgglomerativeClustering

        model = AgglomerativeClustering(
            n_clusters=None, metric="precomputed", linkage="average", distance_threshold=self.group_distance
        )
        return model.fit(dist).labels_

    # ------------------------------------------------------------------ filter and QA
    def _units(self, evidence: Sequence[Evidence]) -> tuple[list[str], np.ndarray]:
        """Evidence sentences and the index of their evidence item, shape (n_units,), int64."""
        units, owner = [], []
        for j, e in enumerate(evidence):
            for s in split_sentences(e.text, max_words=60):
                units.append(s)
                owner.append(j)
        return units, np.asarray(owner, dtype=np.int64)

    def _answer_units(self, evidence: Sequence[Evidence]
                      ) -> tuple[list[str], np.ndarray, dict[int, list[tuple[int, str]]]]:
        """Like :meth:`_units`, for answers (sentences within each paragraph: a passage given
        with what its last paragraph announces holds several): a passage's leading line that is just its
        section heading (a TITLE node's heading above its summary, or the heading run
        into the first sentence) is not quoted, and a bare heading is no answer
        sentence (unless no passage has anything else). A sentence the parser cut at a page or
        node break is one unit when both passages are given (:func:`join_cut_sentences`).

        Returns:
            The units, int64 (n_units,) evidence index of each, and ``{unit: [(evidence
            index, piece), ...]}`` for units joined from pieces of two passages.
        """
        units, owner = [], []
        for j, e in enumerate(evidence):
            text = e.text or ""
            title = normalize_ws(e.section_path[-1]) if e.section_path else ""
            if title:
                head, _, rest = text.partition("\n")
                if rest.strip() and norm_key(head) == norm_key(title):
                    text = rest
                else:
                    flat = normalize_ws(text)
                    if flat.startswith(title + " ") and count_words(flat) > count_words(title) + 3:
                        text = flat[len(title) + 1 :]
                if norm_key(text) == norm_key(title) and e.node_type == "TITLE":
                    continue
            for para in _PARAGRAPH_BREAK.split(text):  # a sentence never runs over a paragraph break
                for s in answer_sentences(para):
                    units.append(s)
                    owner.append(j)
        if not units:
            units, own = self._units(evidence)
            return units, own, {}
        units, owner, parts = join_cut_sentences(evidence, units, owner)
        return units, np.asarray(owner, dtype=np.int64), parts

    def decide(self, condition: str, evidence: list[Evidence], *, doc_id: str | None = None) -> Decision:
        """Score-threshold filter decision (0 calls).

        Score = ``0.5 * max + 0.5 * mean(top-3)`` of the cosines between the condition
        (framing stripped, see :func:`condition_core`) and every evidence sentence;
        ``decision = score >= decide_threshold``. The rationale quotes the best
        sentence. ``evidence_ids`` are the items whose best sentence reaches the
        threshold (for a negative decision: the single closest item). Negated
        conditions ("not about X") are not understood by this backend.
        """
        if not evidence:
            return Decision(False, "No evidence was retrieved for this document.", [], 0.0, 0, self.backend_name)
        payload = {
            "condition": condition,
            "evidence": [[e.evidence_id, e.text] for e in evidence],
            "threshold": self.decide_threshold,
        }

        def compute(_: list[int]) -> list[dict[str, Any]]:
            return [self._decide(condition, evidence)]

        d = self._cached_many("decide", [payload], compute)[0]
        return Decision(
            decision=d["decision"],
            rationale=d["rationale"],
            evidence_ids=list(d["evidence_ids"]),
            score=float(d["score"]),
            tokens=0,
            backend=self.backend_name,
        )

    def _decide(self, condition: str, evidence: Sequence[Evidence]) -> dict[str, Any]:
        units, owner = self._units(evidence)
        if not units:
            return {"decision": False, "rationale": "The evidence has no text.", "evidence_ids": [], "score": 0.0}
        emb = self._encode([condition_core(condition)] + units)
        cos = emb[1:] @ emb[0]
        top = np.sort(cos)[::-1][:3]
        score = float(0.5 * top[0] + 0.5 * top.mean())
        best_unit = int(np.argmax(cos))
        best_item = np.full(len(evidence), -np.inf)
        np.maximum.at(best_item, owner, cos)
        thr = self.decide_threshold
        decision = score >= thr
        order = np.argsort(-best_item, kind="stable")
        if decision:
            ids = [evidence[int(j)].evidence_id for j in order if best_item[j] >= thr]
            ids = ids or [evidence[int(owner[best_unit])].evidence_id]
        else:
            ids = [evidence[int(owner[best_unit])].evidence_id]
        best_id = evidence[int(owner[best_unit])].evidence_id
        quote = truncate_words(units[best_unit], 40)
        rationale = (
            f"Offline score {score:.2f} {'>=' if decision else '<'} threshold {thr:.2f}; "
            f'closest sentence [{best_id}] (cos {float(cos[best_unit]):.2f}): "{quote}"'
        )
        return {"decision": bool(decision), "rationale": rationale, "evidence_ids": ids, "score": float(np.clip(score, 0.0, 1.0))}

    def answer(self, question: str, evidence: list[Evidence], *, doc_id: str | None = None,
               one_document: bool = False, several: bool = False) -> Answer:
        """Extractive answer: the evidence sentences closest to the question, cited.

        Up to ``answer_max_sentences`` sentences, best supported first (term coverage,
        answer type and cosine, :func:`~docmaster_core.qa.answering.rank_answer_units`;
        only sentences with cosine >= ``answer_min_cos`` or covering half the question's terms), each followed by its evidence id (``[E3]``); one citation
        per evidence item used. With no such sentence the answer says so and cites
        nothing. With ``one_document`` (a question about one thing over documents it did not
        name, :func:`~docmaster_core.text.answer_units.asks_about_several`), only sentences of
        the best sentence's document are quoted: other documents' sentences sharing its words
        (another paper's batch size) are padding. With ``several`` (a question about several
        documents: "Which of these papers ...?") each document's best sentence comes first, in the
        order of the documents' best sentences, and up to one sentence per document (at most
        ``2 * answer_max_sentences``) is quoted, so the answer names the documents that answer.
        """
        if not evidence:
            return Answer("No passages were retrieved, so the question cannot be answered from the documents.", [], 0, self.backend_name)
        payload = {
            "question": question,
            "evidence": [[e.evidence_id, e.text] for e in evidence],
            "min_cos": self.answer_min_cos,
            "max_sentences": self.answer_max_sentences,
            # answer algorithm version: v2 drops section headings and repeated sentences,
            # v3 orders sentences by support (qa_answering.rank_answer_units), v4 quotes whole
            # sentences (long ones split at semicolons, a short heading kept with its sentence) in
            # reading order, v5 quotes every sentence taken from a passage, v6/v7 exempt non-prose, v8 4 sentences,
            # v9 table-of-contents lines last, v10 place answers ("laws of the State of Indiana"),
            # v11 derivational stems ("termination" / "terminate"), v12 more generic verbs ("end", "carry"),
            # v13 a term or a period asks for a length of time, v15 a paragraph's last sentence without its stop,
            # v21 a clause-list item is whole ("(ii) all offers ...;", "and (b) product liability ..."), and a
            # PDF's U+037E (Greek question mark) ends a clause like ";"; v22 "now" is no topic term, v23 a list
            # item by a letter or roman enumerator only ("(30) days before ..." is cut); v24 a term without an
            # end answers "how long", a price may be a percentage; v26 plurals of stop words ("types") and
            # question-frame verbs ("happens") are no terms; v28 a question about one thing is quoted from
            # one document (text.answer_units.asks_about_several); v30 only when that document holds half the
            # passages (qa.ask.about_one_document), whose passages are then searched alone; v33 a question
            # about several documents quotes each one's best sentence first; v34 a form's empty label
            # ("Supplier Name:") is quoted only when nothing else answers; v36 a question about several documents
            # quotes only sentences holding the names it asks about ("... the State of California"); v37 not names
            # given as examples or alternatives ("benchmarks (e.g. Natural Questions)"); v38 a range that holds the
            # question's number ("$3,500,001 to $5,000,000" for $4,000,000) fits, one that does not, hardly; v39
            # money compared with money only; v40-49 capitals with a digit are names ("BM25"), two documents named
            # apart are answered each, a paragraph ending in ":" comes with what it announces; v50-52 a question
            # about several documents lists those whose sentence covers its weighted terms; "non", "contain a ...
            # clause" and the documents' own noun ("which of these contracts") are no terms; v53 one citation per
            # page of a passage; v54 "which model is used" prefers a sentence naming a versioned model ("GPT-4"); v55
            # irregular verb forms count as their lemma ("paid" / "pay"), "if", "until", "after" ... are no terms; v56
            # a word English never uses as a noun ("owe", "barred") that the documents lack is the asker's own; v58
            # a contents line with spaced leaders cut before its page number is no answer; v59 "how many datasets make
            # up ..." counts datasets, a headerless table's "column 3:" label is no number; v60-61 a hardware question
            # ("on what hardware ...") is answered by the sentences naming hardware, however far in meaning; v62 the
            # answer type is read after a scene-setting phrase ("Under the ... agreement, how much ..."); v64 "how
            # often" a frequency, "how old" an age, "how long did X take" a length of time; v67 what a sentence ending
            # in ":" announces is not quoted again when another passage's same line was; v69 a value the filing
            # redacted ("[***] percent") is none the passages give, a law clause may describe its place; v70 a
            # sentence whose subject is a pronoun is covered and quoted with the sentence before it, "perplexity"
            # asks a number;
            # v71 no reference-list entry (unless citations are asked), the sentence quoted for a pronoun not counted;
            # v72-73 a list item after a bullet and a formula's "where T is ..." are whole sentences, a word broken at
            # a passage's end is joined; v74-75 an end date answers "how long does the agreement last"; v83-87 a
            # sentence stating a bound ("shall not exceed $1,000,000") answers a question asking for one ("the cap");
            # v88-89 "how much notice": the number beside the noun; -able words share their verb's stem; light verbs
            # are no terms; a sentence cut at a node break is quoted whole from both passages
            "answer_version": 90,
            "meta": [[e.node_type, list(e.section_path)] for e in evidence],
            **({"one_document": True} if one_document else {}),
            **({"several": True} if several else {}),
        }

        def compute(_: list[int]) -> list[dict[str, Any]]:
            return [self._answer(question, evidence, one_document, several)]

        d = self._cached_many("answer", [payload], compute)[0]
        by_id = {e.evidence_id: e for e in evidence}
        cites = [
            Citation(
                evidence_id=eid,
                doc_id=by_id[eid].doc_id,
                node_id=by_id[eid].node_id,
                page=by_id[eid].page_of(q),
                section_path=list(by_id[eid].section_path),
                quote=q,
            )
            for eid, q in d["citations"]
            if eid in by_id
        ]
        if not cites and d["text"] == NO_ANSWER_TEXT:
            return Answer(d["text"], [], 0, self.backend_name, outcome="not_found", reason="no sentence is close enough")
        return Answer(d["text"], cites, 0, self.backend_name)

    def _answer(self, question: str, evidence: Sequence[Evidence], one_document: bool = False,
                several: bool = False) -> dict[str, Any]:
        units, owner, parts = self._answer_units(evidence)
        if not units:
            return {"text": NO_ANSWER_TEXT, "citations": []}
        emb = self._encode([normalize_ws(question)] + units)
        cos = emb[1:] @ emb[0]
        picked: list[int] = []
        seen: set[str] = set()
        words = 0
        from ..text.answer_units import rank_answer_units, refers_back  # support order: coverage, type, cosine

        # adjacent passages of one document (a paragraph split across nodes) are one context for the coverage floor
        chain = sorted(range(len(evidence)), key=lambda j: (evidence[j].doc_id, evidence[j].node_id))
        group, g = [0] * len(evidence), 0
        for a, b in zip([None] + chain, chain):
            if a is not None and (evidence[a].doc_id != evidence[b].doc_id
                                  or evidence[b].node_id - evidence[a].node_id > 1):
                g += 1
            group[b] = g
        ranked = [int(i) for i in rank_answer_units(question, units, [evidence[int(j)].node_type for j in owner], cos,
                                                    owner, min_cos=self.answer_min_cos,
                                                    relative_coverage=None if several else ANSWER_RELATIVE_COVERAGE,
                                                    context=[group[int(j)] for j in owner])]
        # prose is quoted in whole sentences: a piece of prose cut from its sentence (a paragraph split across
        # nodes) or a table-of-contents line only when nothing else answers; table rows, form fields and
        # formulas are no prose
        # (a paragraph's last sentence whose source omits the stop, "... the laws of Hong Kong", is whole)
        whole = [i for i in ranked if (not is_cut_prose(units[i]) or ends_its_paragraph(
            units[i], evidence[int(owner[i])].text)) and not is_toc_entry(units[i]) and not is_empty_label(units[i])]
        order = whole or ranked
        from ..text.answer_units import names_hardware, profile_question

        if profile_question(question).answer_type == "hardware":  # the sentences that name the hardware, if any
            order = [i for i in order if names_hardware(units[i])] or order
        if order and one_document:  # one thing asked: quoted from the best sentence's document
            doc = evidence[int(owner[order[0]])].doc_id
            order = [i for i in order if evidence[int(owner[i])].doc_id == doc]
        max_sentences, max_words = self.answer_max_sentences, 150
        if order and several:  # several documents asked about: each one's best sentence first
            # ... from the sentences that hold the names the question asks about ("governed by the laws of the
            # State of California": a Delaware clause is no answer), when any sentence holds them
            from ..text.answer_units import question_names, terms_of

            names = question_names(question)
            if names:
                order = [i for i in order if set(names) <= set(terms_of(units[i]))] or order
            # ... and a document is listed for a sentence that says much of what the question asks about:
            # one close in meaning only ("the entire agreement" for "a non-compete clause") or sharing only
            # its common words ("each party shall pay its own fees" for "limit a party's total liability to
            # the amounts paid") would list every document (several_coverage)
            cov = several_coverage(question, units)
            if cov.size and cov.max() > 0:
                order = [i for i in order if cov[i] >= SEVERAL_RELATIVE_COVERAGE * cov.max()]
            first: dict[str, int] = {}
            for i in order:
                first.setdefault(evidence[int(owner[i])].doc_id, i)
            if len(first) > 1:
                lead = list(first.values())
                order = lead + [i for i in order if i not in set(lead)]
                max_sentences = min(2 * self.answer_max_sentences, max(self.answer_max_sentences, len(lead)))
                max_words = 75 * max_sentences // 2
        context = 0  # sentences quoted only for what a pronoun refers to: not counted as answer sentences
        for i in order:
            if len(picked) - context >= max_sentences:
                break
            key = norm_key(units[i])  # the same sentence from two passages is quoted once
            if key in seen or (picked and words + count_words(units[i]) > max_words):
                continue
            prev = i - 1  # a sentence whose subject is a pronoun ("It achieved ...") comes with the one it names
            if refers_back(units, owner, i) and prev not in picked and norm_key(units[prev]) not in seen:
                seen.add(norm_key(units[prev]))
                picked.append(prev)
                words += count_words(units[prev])
                context += 1
            seen.add(key)
            picked.append(i)
            words += count_words(units[i])
            nxt = i + 1  # what a sentence ending in ":" announces comes with it (when it is no cut piece of prose)
            if units[i].rstrip().endswith(":") and nxt < len(units) and owner[nxt] == owner[i] and nxt not in picked \
                    and norm_key(units[nxt]) not in seen and not is_cut_prose(units[nxt]) \
                    and not is_toc_entry(units[nxt]):  # (quoted already from another passage: once)
                seen.add(norm_key(units[nxt]))
                picked.append(nxt)
                words += count_words(units[nxt])
        if not picked:
            return {"text": NO_ANSWER_TEXT, "citations": []}
        # reading order: documents in the order of their best sentence, then passage (node) and sentence order
        first_doc = {}
        for r, i in enumerate(picked):
            first_doc.setdefault(evidence[int(owner[i])].doc_id, r)
        picked.sort(key=lambda i: (first_doc[evidence[int(owner[i])].doc_id], evidence[int(owner[i])].node_id, i))
        text = " ".join(f"{units[i]} " + " ".join(f"[{evidence[j].evidence_id}]" for j, _ in parts.get(
            i, [(int(owner[i]), "")])) for i in picked)
        cites: dict[tuple[str, int], list[str]] = {}
        for i in picked:  # a passage's quote: the sentences the answer took from it on one page, in reading order
            for j, piece in parts.get(i, [(int(owner[i]), units[i])]):  # a joined sentence: each piece its passage
                e = evidence[j]
                cites.setdefault((e.evidence_id, e.page_of(piece)), []).append(piece)
        return {"text": text, "citations": [[k[0], truncate_words(" ".join(v), 150)] for k, v in cites.items()]}

    def answer_stream(self, question: str, evidence: list[Evidence], *, doc_id: str | None = None) -> Iterator[str]:
        """The :meth:`answer` text in pieces of a few words (joined they equal the text)."""
        text = self.answer(question, evidence, doc_id=doc_id).text
        toks = text.split(" ")
        for i in range(0, len(toks), 4):
            chunk = " ".join(toks[i : i + 4])
            yield chunk if i + 4 >= len(toks) else chunk + " "
