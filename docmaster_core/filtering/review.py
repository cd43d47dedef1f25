"""Rank-order review with a certified stopping rule: an oracle decides, a test says when to stop.

No rule computed from the evidence scores alone decides well across collections
(docs/results/filter.md), so a decision that must be right is made by an *oracle* that
reads the document: the LLM, or the user on the Filter page. The review asks the oracle
about as few documents as a recall guarantee allows:

1. **Screening in rank order.** The oracle is asked about the documents in the run's
   ranking (best evidence first), in batches of ``b``; every answer is kept.
2. **A stopping test when a batch adds no match** (Callaghan and Mueller-Hansen 2020,
   "Statistical stopping criteria for automated screening in systematic reviews",
   Systematic Reviews 9:273). With ``F`` matches found so far and ``R`` documents not
   yet reviewed, the recall of the found set is below the target ``tau`` exactly when at
   least ``K = floor(F (1 - tau) / tau) + 1`` matches remain unreviewed. Under that null
   hypothesis the number of matches ``X`` in a uniform sample of ``n`` of the ``R``
   documents drawn *without replacement* is hypergeometric, and
   ``P(X = 0) = C(R - K, n) / C(R, n)``. The sample size is the smallest ``n`` with
   ``P(X = 0) <= alpha_j``; the sample is asked in a random order; when it holds no
   match the null hypothesis is rejected at level ``alpha_j`` and the review stops,
   *certified*.
3. **A match in the sample resumes screening** in rank order (re-ranked by what the
   oracle said so far when document features are given: :class:`Feedback`); the next test spends
   what is left of ``delta``: ``alpha_j = delta w (1 - w)^(j - 1)`` for the j-th test
   (``w = 1/2``: ``delta / 2, delta / 4, ...``), so the tests together err with
   probability at most ``delta`` (union bound). When the sample would be the whole rest,
   the oracle is asked about everything (recall 1, exact).

Guarantee: when the review stops certified, the set of documents the oracle answered
"match" has recall ``>= tau`` of the documents the oracle would call a match, with
probability ``>= 1 - delta`` over the samples, *relative to the oracle's answers* (a
wrong oracle stays wrong; each document is asked at most once, so its answer is fixed).
Precision relative to the oracle is 1: only "match" answers are kept. No normal
approximation is involved: the test is exact for any collection size.

What it costs, with a perfect ranking (the floor): on 59 documents with 10 matches,
``tau = 0.9`` and ``delta = 0.1`` the test needs about 34 of the 49 others, so ~75 % of
the documents are asked; the share falls with size (35 % at 1,000 documents and 50
matches, 3 % at 100,000 and 1,000). :func:`planned_calls` computes it for a collection.

The review is a pure function of the answers known so far (:func:`replay`): given the
ranking, the seed and the answers, it replays the rule from the start, using a known
answer wherever the rule asks for it, and returns what it asks next. So the app can
reload the user's stored answers and resume, an LLM run and a user can share answers,
and answers given out of order are used when the rule reaches them.
"""
from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np
from scipy.stats import hypergeom

__all__ = [
    "MAX_BATCH",
    "ReviewTargets",
    "ReviewTest",
    "ReviewState",
    "required_sample",
    "remaining_upper_bound",
    "Feedback",
    "replay",
    "run_review",
    "planned_calls",
    "DocumentReview",
    "review_documents",
]


@dataclass(frozen=True)
class ReviewTargets:
    """Targets and knobs of a review.

    Attributes:
        recall: Recall target tau in (0, 1] (of the oracle's answers); 1 asks everything
            that cannot be ruled out exactly.
        delta: Failure probability in (0, 1): the certified recall holds with
            probability ``>= 1 - delta``.
        batch: Documents per screening batch ``b``; a test begins when the last ``b``
            screened documents hold no match. None: the stopping run is
            ``L = max(3, ceil(N / 40))`` documents (:meth:`stop_run`), screened in batches of
            ``min(L, MAX_BATCH)`` (:meth:`batch_size`).
        seed: Seed of the verification samples (the same seed and answers give the same
            review, so a re-run is answered from the stored answers and caches).
        first_share: Share ``w`` of ``delta`` the first test spends; test j spends
            ``delta w (1 - w)^(j - 1)``.
        max_calls: Most documents the oracle is asked about (None: no limit); a review
            stopped by it is *not certified* and says so.

    Raises:
        ValueError: a target or knob out of range.
    """

    recall: float = 0.9
    delta: float = 0.1
    batch: int | None = None
    seed: int = 0
    first_share: float = 0.5
    max_calls: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.recall <= 1.0:
            raise ValueError(f"recall target must be in (0, 1], got {self.recall!r}")
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {self.delta!r}")
        if self.batch is not None and self.batch < 1:
            raise ValueError(f"review batch must be >= 1, got {self.batch!r}")
        if not 0.0 < self.first_share < 1.0:
            raise ValueError(f"first_share must be in (0, 1), got {self.first_share!r}")
        if self.max_calls is not None and self.max_calls < 1:
            raise ValueError(f"max_calls must be >= 1, got {self.max_calls!r}")

    def stop_run(self, n_docs: int) -> int:
        """``L``: a stopping test begins when the last ``L`` screened documents hold no match.

        ``L = max(3, ceil(N / 40))``, or ``batch`` when it is given. The run is checked after
        every batch (:meth:`batch_size`), so it is a *sliding* window over the screening
        order: screening stops ``L`` documents after the last match, not up to ``2 L`` as
        when only aligned batches of ``L`` were checked.
        """
        return int(self.batch) if self.batch is not None else max(3, math.ceil(n_docs / 40))

    def batch_size(self, n_docs: int) -> int:
        """The screening batch ``b`` for ``n_docs`` documents: ``min(L, MAX_BATCH)``
        (:meth:`stop_run`), or ``batch`` when it is given.

        Measured (docs/results/review.md): on 5,000 copies of the corpus the documents
        asked at recall 0.9 fell 26.1 -> 23.6 % (P) and 29.9 -> 26.5 % (Q, 10 seeds); on synthetic
        5,000-document collections (smooth and clustered rankings, with and without
        feedback) within the seed noise of aligned batches. Collections of up to 800
        documents are unchanged (``L <= 20``). A smaller *stopping run* was not kept: it
        starts tests while matches are still being found, and their failures halve the
        level of every later test (+9 to +18 points asked on the synthetic collections).
        """
        return int(self.batch) if self.batch is not None else min(MAX_BATCH, self.stop_run(n_docs))

    def alpha(self, j: int) -> float:
        """Level of the j-th test (1-based): ``delta w (1 - w)^(j - 1)``."""
        return self.delta * self.first_share * (1.0 - self.first_share) ** (j - 1)

    def to_dict(self) -> dict[str, Any]:
        return {"recall": self.recall, "delta": self.delta, "batch": self.batch, "seed": self.seed,
                "first_share": self.first_share, "max_calls": self.max_calls}


#: Largest default screening batch (:meth:`ReviewTargets.batch_size`); the stopping run is checked
#: after every batch.
MAX_BATCH = 20


def min_remaining(found: int, recall: float) -> int:
    """``K = floor(F (1 - tau) / tau) + 1``: the fewest unreviewed matches that put the recall of
    ``F`` found matches below ``tau`` (Callaghan and Mueller-Hansen 2020)."""
    # a small tolerance keeps floor(10 * 0.1 / 0.9 ...) exact where F (1 - tau) / tau is an integer
    return int(math.floor(found * (1.0 - recall) / recall + 1e-9)) + 1


def required_sample(remaining: int, k: int, alpha: float) -> int:
    """Smallest sample size ``n`` whose all-no outcome rejects "at least ``k`` matches remain".

    Args:
        remaining: ``R``, documents not reviewed.
        k: ``K``, the matches the null hypothesis puts among them.
        alpha: Level of the test.

    Returns:
        The smallest ``n`` in ``[0, R]`` with ``P(X = 0) <= alpha`` for
        ``X ~ Hypergeom(R, K, n)`` (exact, ``scipy.stats.hypergeom``); 0 when ``K > R``
        (the null hypothesis is impossible), ``R`` when only the whole rest rejects it.
    """
    if k > remaining:
        return 0
    if k <= 0:
        return remaining
    lo, hi = 0, remaining  # P(X = 0) falls as n grows: bisect for the first n at or below alpha
    if hypergeom.pmf(0, remaining, k, remaining) > alpha:
        return remaining
    while lo < hi:
        mid = (lo + hi) // 2
        if hypergeom.pmf(0, remaining, k, mid) <= alpha:
            hi = mid
        else:
            lo = mid + 1
    return int(lo)


def remaining_upper_bound(remaining: int, sampled: int, matches: int, alpha: float) -> int:
    """Upper confidence bound (level ``1 - alpha``) on the matches among ``remaining`` documents
    after a uniform sample without replacement of ``sampled`` of them held ``matches``.

    Returns:
        The largest ``K`` with ``P(X <= matches) > alpha``, ``X ~ Hypergeom(R, K, n)``.
    """
    if remaining <= 0:
        return 0
    if hypergeom.cdf(matches, remaining, remaining, sampled) > alpha:
        return int(remaining)
    lo, hi = int(matches), int(remaining)  # P(X <= matches) falls as K grows: bisect for the last K above alpha
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if hypergeom.cdf(matches, remaining, mid, sampled) > alpha:
            lo = mid
        else:
            hi = mid - 1
    return int(lo)


@dataclass
class ReviewTest:
    """One stopping test of a review.

    Attributes:
        remaining: ``R``, documents not reviewed when the test began.
        found: ``F``, matches found before the sample.
        k: ``K``, the matches the null hypothesis puts among the rest.
        alpha: The test's level.
        size: ``n``, the sample size (``R``: the whole rest is asked).
        sample: int (n,) document indices of the sample, in the order they are asked.
        outcome: ``"passed"`` (no match in the sample: certified), ``"failed"`` (a match:
            screening resumes), ``"open"`` (answers still missing) or ``"everything"``
            (the whole rest asked).
    """

    remaining: int
    found: int
    k: int
    alpha: float
    size: int
    sample: np.ndarray
    outcome: str = "open"

    def to_dict(self) -> dict[str, Any]:
        return {"remaining": self.remaining, "found": self.found, "k": self.k, "alpha": round(self.alpha, 6),
                "size": self.size, "outcome": self.outcome}


@dataclass
class ReviewState:
    """Where a review stands: what the rule asks next and what it can promise.

    Attributes:
        n_docs: Documents in the review.
        targets: The targets.
        pending: int (m,) document indices the rule wants answered next, in the order
            to ask them (empty when the review is over).
        phase: ``"screening"`` (rank order), ``"checking"`` (a stopping test's sample),
            ``"certified"``, ``"everything"`` (every document answered or ruled out exactly),
            ``"budget"`` (stopped by ``max_calls``), ``"stuck"`` (answers the rule needs are
            missing and will not come, e.g. the LLM could not decide them).
        consumed: int (c,) document indices whose answers the rule used, in order.
        found: Matches among the consumed answers (``F``).
        matches: Every document answered "match" (the kept set; may include answers given
            out of the rule's order).
        tests: The stopping tests so far.
        recall_bound: A lower confidence bound on the recall of ``matches`` (level
            ``1 - delta``), when one is known (certified, or a partial sample); else None.
        estimated_recall: A point estimate of that recall from the last sample, or None.
        still_needed: Answers the open test still needs before it can certify (0 when none).
        answered: Documents with a known answer (what the oracle was asked, counting
            answers given out of the rule's order).
    """

    n_docs: int
    targets: ReviewTargets
    pending: np.ndarray
    phase: str
    consumed: np.ndarray
    found: int
    matches: np.ndarray
    tests: list[ReviewTest] = field(default_factory=list)
    recall_bound: float | None = None
    estimated_recall: float | None = None
    still_needed: int = 0
    answered: int = 0

    @property
    def done(self) -> bool:
        """The review is over (nothing pending)."""
        return self.phase in ("certified", "everything", "budget", "stuck")

    @property
    def certified(self) -> bool:
        """The recall target holds with probability ``>= 1 - delta`` (relative to the oracle)."""
        return self.phase in ("certified", "everything")

    def promise(self, noun: str = "the oracle's") -> str:
        """One line saying what the review guarantees, in plain words."""
        t = self.targets
        asked = f"{self.answered} of {self.n_docs} documents checked"
        if self.phase == "everything":
            return f"every document checked or ruled out exactly: recall 1.0 relative to {noun} answers; {asked}"
        if self.phase == "certified":
            return (f"recall >= {t.recall:g} with probability >= {1 - t.delta:g} relative to {noun} answers; {asked}")
        est = "" if self.estimated_recall is None else f"; estimated recall {self.estimated_recall:.2f}"
        bound = "" if self.recall_bound is None else f" (recall >= {self.recall_bound:.2f} with probability >= {1 - t.delta:g})"
        goal = f"goal: at least {t.recall:g} of the matches found, with probability {1 - t.delta:g}"
        if self.phase == "screening":
            run = t.stop_run(self.n_docs)
            return (f"not certified yet ({goal}): reading the documents in order of evidence; after {run} in a row "
                    f"with no match, a random check of the rest; {asked}")
        if self.phase == "checking":
            test = self.tests[-1] if self.tests else None
            what = (f"a random check of {test.size} of the {test.remaining} documents not read" if test is not None
                    and test.outcome != "everything" else "every document not read")
            return (f"not certified yet ({goal}): {what}; it certifies if none of them matches, and a match sends "
                    f"the review back to reading in order; {self.still_needed} more answers needed{bound}; {asked}")
        why = {"budget": "stopped at the call limit", "stuck": "answers the check needs are missing"}.get(
            self.phase, "in progress")
        return (f"not certified (goal: at least {t.recall:g} of the matches found): {why}{bound}{est}; {asked}; "
                f"{self.still_needed} more answers needed to certify")

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.n_docs, "phase": self.phase, "certified": self.certified,
                "checked": self.answered, "used": int(self.consumed.size), "found": self.found, "matches": int(self.matches.size),
                "pending": int(self.pending.size), "still_needed": self.still_needed,
                "recall_bound": None if self.recall_bound is None else round(self.recall_bound, 4),
                "estimated_recall": None if self.estimated_recall is None else round(self.estimated_recall, 4),
                "targets": self.targets.to_dict(), "tests": [x.to_dict() for x in self.tests],
                "promise": self.promise()}


#: Scores of fitted feedback models, least recently used first (:meth:`Feedback.scores`).
_FITS: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_MAX_FITS = 512
_FIT_LOCK = threading.Lock()


@dataclass
class Feedback:
    """Relevance feedback for the screening order: active learning on the oracle's answers.

    Screening tools for systematic reviews re-rank the unscreened documents after each
    batch with a classifier trained on the answers so far (ASReview; the stopping rule of
    Callaghan and Mueller-Hansen 2020 was designed for such prioritised screening): a
    match found deep in the ranking, e.g. by a stopping test's sample, pulls documents like
    it to the front. Here a logistic regression (L2, balanced classes; ``sklearn``) is fit
    on the reviewed documents' features plus their prior rank and scores the unreviewed
    ones; screening takes them best first. The features are what each document's evidence
    for the condition means (its mean embedding) and says (the TF-IDF of its words, the
    features ASReview's default model learns from): a condition whose matches span topics
    ("uses attention or Transformer layers") shares words across them that the embeddings
    of their topics do not. The stopping test is unaffected: its sample is
    uniform over the unreviewed documents whatever the order, so the guarantee holds.

    Attributes:
        features: float32 (N, d) one row per document in the review's index space: the
            mean embedding of its evidence for the condition
            (:meth:`~docmaster_core.retrieval.corpus.CorpusView.evidence_vectors`; the
            mean of all its nodes when there is none); rows are L2-normalised here.
        term_counts: scipy sparse (N, V) or None: term occurrences in each document's
            evidence (:func:`~docmaster_core.retrieval.keyword.evidence_term_counts`).
            Weighted here over the N documents by TF-IDF (``1 + ln tf`` times the smoothed
            ``idf = ln((1 + N) / (1 + df)) + 1``; terms in one document only or in more
            than 90 % of them dropped), rows L2-normalised; a document's embedding part and
            term part then share its unit norm equally (a document without terms keeps
            its embedding at norm 1).
        prior_weight: Scale of the prior feature ``1 - rank / N`` (the evidence ranking)
            beside the unit-norm features.
        C: Inverse regularisation strength of the logistic regression.

    The defaults (3, 10) were chosen on the P conditions over 5,000 copies of the
    corpus (a plateau of 25-27 % of documents asked for weights 2-5 and C 10-100, 2
    seeds) and checked unchanged on Q and on the 59 and 88 document collections
    (docs/results/review.md, 10-20 seeds: P 36.8 % -> 26.1 %, Q 36.8 % -> 29.9 % at
    5,000; the small collections within a point, the guarantee kept everywhere), with the
    documents' mean node embeddings as features; their mean *evidence* embedding took P
    23.5 -> 22.4 % and Q 26.5 -> 25.4 % (10 seeds; same parameters, still on P's plateau),
    and the evidence's TF-IDF beside it took P 22.4 -> 20.9 % and Q 25.4 -> 24.1 % (10 seeds;
    Q10, whose matches span topics, 43.8 -> 37.1 %; docs/results/review.md).

    Raises:
        ValueError: ``features`` is not a 2-D array, or ``term_counts`` has another
            number of rows.
    """

    features: np.ndarray
    term_counts: Any = None
    prior_weight: float = 3.0
    C: float = 10.0
    _digest: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        x = np.asarray(self.features, dtype=np.float32)
        if x.ndim != 2:
            raise ValueError(f"feedback features must be a 2-D array (documents x dimensions), got shape {x.shape}")
        norm = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norm > 0, norm, 1.0)
        h = hashlib.blake2b(digest_size=16)
        if self.term_counts is not None:
            t = _tfidf(self.term_counts)
            if t.shape[0] != x.shape[0]:
                raise ValueError(f"feedback term counts have {t.shape[0]} rows for {x.shape[0]} documents")
            share = 1.0 / np.sqrt(1.0 + (t.getnnz(axis=1) > 0)).astype(np.float32)
            x = x * share[:, None]
            t = t.multiply(share[:, None]).tocsr().astype(np.float32)
            self.term_counts = t
            for a in (t.data, t.indices, t.indptr):
                h.update(np.ascontiguousarray(a).tobytes())
        self.features = np.ascontiguousarray(x, dtype=np.float32)
        h.update(self.features.tobytes())
        self._digest = h.hexdigest()

    @classmethod
    def from_evidence(cls, view, doc_ids: list[str], evidence: Mapping[str, Iterable[int]]) -> "Feedback":
        """The feedback of a review of ``doc_ids`` (rows in that order) from each
        document's evidence nodes for the condition (``{doc_id: [node ids]}``): their mean
        embedding (:meth:`~docmaster_core.retrieval.corpus.CorpusView.evidence_vectors`;
        the whole document's without evidence) and their term counts
        (:func:`~docmaster_core.retrieval.keyword.evidence_term_counts`).

        Raises:
            RetrievalError: a document is not in the view ``view`` (a
                :class:`~docmaster_core.retrieval.corpus.CorpusView`).
        """
        from ..retrieval.keyword import evidence_term_counts

        evidence = {d: list(v) for d, v in evidence.items()}
        return cls(view.evidence_vectors(doc_ids, evidence), evidence_term_counts(view, doc_ids, evidence))

    def scores(self, order: np.ndarray, reviewed: np.ndarray, labels: np.ndarray, todo: np.ndarray
               ) -> np.ndarray | None:
        """Scores of the ``todo`` documents (higher first), or None while the reviewed
        documents do not hold both a match and a non-match.

        Args:
            order: int (N,) the prior ranking (document indices, best first).
            reviewed: int (r,) reviewed document indices; ``labels`` int (r,) their 1 / 0.
            todo: int (m,) documents to score.
        """
        labels = np.asarray(labels)
        if reviewed.size == 0 or labels.min() == labels.max():
            return None
        # replay() re-runs the rule from the start after every answer (and the app after every
        # click): the same features and prefix of reviewed documents give the same model, so
        # it is fit once per process
        key = (self._digest, self.prior_weight, self.C, np.asarray(order, np.int64).tobytes(),
               np.asarray(reviewed, np.int64).tobytes(), labels.astype(np.int8).tobytes(),
               np.asarray(todo, np.int64).tobytes())
        with _FIT_LOCK:
            if key in _FITS:
                _FITS.move_to_end(key)
                return _FITS[key]
        from sklearn.linear_model import LogisticRegression

        n = order.size
        prior = np.empty(n, dtype=np.float32)
        prior[order] = 1.0 - np.arange(n, dtype=np.float32) / max(n, 1)
        x = np.hstack([self.features, self.prior_weight * prior[:, None]])
        if self.term_counts is not None and self.term_counts.shape[1]:
            from scipy import sparse

            x = sparse.hstack([sparse.csr_matrix(x), self.term_counts], format="csr")
        model = LogisticRegression(C=self.C, class_weight="balanced", max_iter=200)
        model.fit(x[reviewed], labels)
        out = model.decision_function(x[todo])
        with _FIT_LOCK:
            _FITS[key] = out
            while len(_FITS) > _MAX_FITS:
                _FITS.popitem(last=False)
        return out


def _tfidf(counts) -> Any:
    """scipy CSR float32 (N, V'): the TF-IDF rows of :attr:`Feedback.term_counts`
    (terms with ``2 <= df <= 0.9 N`` kept; scikit-learn's ``TfidfTransformer``: sublinear tf,
    smoothed idf, rows L2-normalised)."""
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfTransformer

    c = sparse.csr_matrix(counts, dtype=np.float32)
    c.eliminate_zeros()
    df = np.bincount(c.indices, minlength=c.shape[1])
    c = c[:, np.flatnonzero((df >= 2) & (df <= 0.9 * c.shape[0]))]
    if not c.shape[1]:  # no term shared by two documents: nothing to weight
        return sparse.csr_matrix(c, dtype=np.float32)
    return sparse.csr_matrix(TfidfTransformer(sublinear_tf=True).fit_transform(c), dtype=np.float32)


def _labels(n_docs: int, answers: Mapping[int, bool] | np.ndarray) -> np.ndarray:
    """int8 (N,) 1 match, 0 no match, -1 unknown."""
    if isinstance(answers, np.ndarray):
        lab = np.asarray(answers, dtype=np.float64)
        if lab.shape != (n_docs,):
            raise ValueError(f"answers must have shape ({n_docs},), got {lab.shape}")
        return np.where(np.isnan(lab), -1, (lab > 0.5).astype(np.int8)).astype(np.int8)
    out = np.full(n_docs, -1, dtype=np.int8)
    for i, v in answers.items():
        if not 0 <= int(i) < n_docs:
            raise ValueError(f"answer for document index {i} outside 0..{n_docs - 1}")
        if v is not None:
            out[int(i)] = 1 if v else 0
    return out


def replay(order: np.ndarray, answers: Mapping[int, bool] | np.ndarray, targets: ReviewTargets,
           deferred: Iterable[int] = (), feedback: Feedback | None = None) -> ReviewState:
    """Replay the review rule over the known answers and say what it asks next.

    Args:
        order: int (N,) document indices in rank order (best first), a permutation of
            ``0..N-1``.
        answers: The oracle's answers so far: ``{doc index: bool}``, or float (N,) with
            1 / 0 / NaN (unknown).
        targets: The targets.
        deferred: Document indices the oracle put off (the user's *Skip*, an LLM call
            that failed): screening passes over them (they stay unreviewed and may be
            drawn into a sample); a sample that holds one lists it last, and cannot
            certify without its answer.
        feedback: Re-rank the unreviewed documents before each screening batch by the
            answers of the reviewed ones (:class:`Feedback`); None: the ``order`` as given.

    Returns:
        The :class:`ReviewState`.

    Raises:
        ValueError: ``order`` is not a permutation, or an answer index is out of range.
    """
    order = np.asarray(order, dtype=np.int64)
    n = int(order.size)
    if n == 0 or not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError("the review needs the documents' ranking as a permutation of 0..N-1")
    lab = _labels(n, answers)
    later = np.zeros(n, dtype=bool)
    later[[int(i) for i in deferred if 0 <= int(i) < n]] = True
    tau, b, run = targets.recall, targets.batch_size(n), targets.stop_run(n)
    consumed = np.zeros(n, dtype=bool)
    seq: list[int] = []
    screened: list[int] = []
    tests: list[ReviewTest] = []
    pos = 0

    def state(pending, phase, still=0, bound=None, est=None) -> ReviewState:
        return ReviewState(n, targets, np.asarray(pending, dtype=np.int64), phase, np.asarray(seq, dtype=np.int64),
                           int((lab[np.asarray(seq, dtype=np.int64)] == 1).sum()) if seq else 0,
                           np.flatnonzero(lab == 1), tests, bound, est, still, answered)

    answered = int((lab >= 0).sum())

    def budget_left() -> int:
        return (targets.max_calls - answered) if targets.max_calls is not None else n

    while True:
        # ---- screening: the next batch in rank order (deferred documents passed over)
        batch: list[int] = []
        fb = None
        if feedback is not None and seq:
            done = np.asarray(seq, dtype=np.int64)
            todo = order[~consumed[order] & ~(later[order] & (lab[order] < 0))]
            fb = feedback.scores(order, done, lab[done], todo) if todo.size else None
        if fb is not None:  # best feedback score first; the prior order breaks ties
            batch = todo[np.argsort(-fb, kind="stable")[:b]].tolist()
        else:
            while len(batch) < b and pos < n:
                d = int(order[pos])
                pos += 1
                if not consumed[d] and not (later[d] and lab[d] < 0):
                    batch.append(d)
        if not batch:  # nothing left to screen: every document not deferred was answered
            rest = np.flatnonzero(~consumed)
            if rest.size == 0:
                return state([], "everything")
            if (lab[rest] >= 0).all():
                for d in rest.tolist():
                    consumed[d] = True
                    seq.append(d)
                return state([], "everything")
            return state(rest[lab[rest] < 0], "stuck", still=int((lab[rest] < 0).sum()))
        unknown = [d for d in batch if lab[d] < 0]
        if unknown:
            if budget_left() <= 0:
                return _stopped(state, lab, consumed, tests, targets)
            return state(unknown[:max(budget_left(), 0)], "screening", still=len(unknown))
        for d in batch:
            consumed[d] = True
            seq.append(d)
        screened.extend(batch)
        # read on until L documents screened since the last test hold no match
        if len(screened) < run or (lab[screened[-run:]] == 1).any():
            continue
        # ---- a stopping test
        rest = np.flatnonzero(~consumed)
        found = int((lab[consumed] == 1).sum())
        k = min_remaining(found, tau)
        alpha = targets.alpha(len(tests) + 1)
        if k > rest.size:
            tests.append(ReviewTest(int(rest.size), found, k, alpha, 0, np.zeros(0, np.int64), "passed"))
            return state([], "certified", bound=found / (found + rest.size) if found else None)
        size = required_sample(int(rest.size), k, alpha)
        if size >= rest.size:
            test = ReviewTest(int(rest.size), found, k, alpha, int(rest.size), rest, "everything")
            tests.append(test)
            miss = rest[lab[rest] < 0]
            if miss.size:
                if budget_left() <= 0:
                    return _stopped(state, lab, consumed, tests, targets)
                # deferred documents last
                miss = np.concatenate([miss[~later[miss]], miss[later[miss]]])
                return state(miss, "checking", still=int(miss.size))
            for d in rest.tolist():
                consumed[d] = True
                seq.append(d)
            return state([], "everything")
        rng = np.random.default_rng([targets.seed, len(tests) + 1])
        sample = rng.permutation(rest)[:size]
        test = ReviewTest(int(rest.size), found, k, alpha, int(size), sample)
        tests.append(test)
        hit = np.flatnonzero(lab[sample] == 1)
        upto = sample[: int(hit[0]) + 1] if hit.size else sample
        missing = upto[lab[upto] < 0]
        if missing.size:
            # the answers missing before the first match; consume what is known up to the first gap
            if budget_left() <= 0:
                return _stopped(state, lab, consumed, tests, targets)
            missing = np.concatenate([missing[~later[missing]], missing[later[missing]]])
            known_no = int((lab[sample] == 0).sum())
            ub = remaining_upper_bound(int(rest.size), known_no, 0, alpha) if known_no else None
            est = None if ub is None else _recall(found, 0.0)
            return state(missing, "checking", still=int(missing.size),
                         bound=None if ub is None or found == 0 else found / (found + ub), est=est)
        for d in upto.tolist():
            consumed[d] = True
            seq.append(d)
        if hit.size:
            test.outcome = "failed"
            screened.clear()
            continue
        test.outcome = "passed"
        ub = remaining_upper_bound(int(rest.size), int(size), 0, alpha)
        return state([], "certified", bound=found / (found + ub) if found else None, est=_recall(found, 0.0))


def _recall(found: int, missed: float) -> float | None:
    return found / (found + missed) if found + missed > 0 else None


def _stopped(state, lab: np.ndarray, consumed: np.ndarray, tests: list[ReviewTest], targets: ReviewTargets
             ) -> ReviewState:
    """The state of a review stopped by ``max_calls``: not certified, with a recall estimate
    from the last sample's answers when there is one."""
    found = int((lab[consumed] == 1).sum())
    bound = est = None
    if tests:
        t = tests[-1]
        asked = t.sample[lab[t.sample] >= 0]
        if asked.size:
            hits = int((lab[asked] == 1).sum())
            ub = remaining_upper_bound(t.remaining, int(asked.size), hits, t.alpha)
            bound = found / (found + ub) if found else None
            est = _recall(found, hits / asked.size * (t.remaining - asked.size))
    still = 0
    if tests and tests[-1].outcome == "open":
        t = tests[-1]
        still = int((lab[t.sample] < 0).sum())
    return state([], "budget", still=still, bound=bound, est=est)


def run_review(order: np.ndarray, targets: ReviewTargets, ask: Callable[[np.ndarray], np.ndarray],
               known: np.ndarray | None = None, chunk: int | None = None, feedback: Feedback | None = None
               ) -> ReviewState:
    """Run a review to its end with an oracle that answers in batches (the LLM, a label file).

    Args:
        order: int (N,) document indices in rank order.
        targets: The targets.
        ask: Called with int64 (m,) document indices; returns float (m,) answers: 1.0
            match, 0.0 no match, NaN no answer (the document is deferred; a check that
            needs it ends the review ``"stuck"``).
        known: Optional float (N,) answers already known (1 / 0 / NaN), e.g. the user's
            stored answers, which outrank the oracle's and are never asked again.
        chunk: Most documents asked per call of ``ask`` (None: everything the rule
            wants next). A check's sample is asked in chunks and the asking stops at a
            chunk holding a match, so a match costs at most ``chunk - 1`` answers the rule
            does not use (1: none); a screening batch is always asked whole.
        feedback: Screening re-ranked by the answers so far (:class:`Feedback`).

    Returns:
        The final :class:`ReviewState`; every document is asked at most once.
    """
    order = np.asarray(order, dtype=np.int64)
    lab = np.full(order.size, np.nan) if known is None else np.asarray(known, dtype=np.float64).copy()
    failed: set[int] = set()
    while True:
        st = replay(order, lab, targets, deferred=failed, feedback=feedback)
        if st.done:
            return st
        need = np.array([d for d in st.pending.tolist() if d not in failed], dtype=np.int64)
        if need.size == 0:  # only deferred documents are needed and they will not be answered
            st.phase = "stuck"
            st.pending = np.zeros(0, np.int64)
            return st
        step = need.size if chunk is None or st.phase != "checking" else max(1, int(chunk))
        for start in range(0, need.size, step):  # a check's sample in chunks: stop at its first match
            part = need[start:start + step]
            got = np.asarray(ask(part), dtype=np.float64)
            for d, v in zip(part.tolist(), got.tolist()):
                if np.isnan(v):
                    failed.add(d)
                else:
                    lab[d] = v
            if st.phase == "checking" and np.nansum(got) > 0:
                break


def planned_calls(n_docs: int, matches: int, targets: ReviewTargets) -> int:
    """Answers a review needs when the ``matches`` documents rank first (a perfect ranking):
    the floor of what certifying the recall target costs on ``n_docs`` documents.

    Raises:
        ValueError: ``matches`` outside ``0..n_docs`` or no documents.
    """
    if n_docs < 1 or not 0 <= matches <= n_docs:
        raise ValueError(f"need 0 <= matches <= n_docs and n_docs >= 1, got {matches}, {n_docs}")
    y = np.zeros(n_docs)
    y[:matches] = 1.0
    st = run_review(np.arange(n_docs), targets, lambda idx: y[idx], chunk=1)
    return st.answered


@dataclass
class DocumentReview:
    """A review over named documents: :class:`ReviewState` with document ids.

    Attributes:
        doc_ids: The documents in rank order (best evidence first); the review's document
            index i is ``doc_ids[i]``.
        state: The :class:`ReviewState` (its indices are positions in ``doc_ids``).
        answers: ``{doc_id: (label, source)}`` the review was replayed over.
    """

    doc_ids: list[str]
    state: ReviewState
    answers: dict[str, tuple[bool, str]]

    def pending_ids(self) -> list[str]:
        """The documents the rule wants answered next, in order."""
        return [self.doc_ids[i] for i in self.state.pending.tolist()]

    def match_ids(self) -> list[str]:
        """Every document answered "match" (the kept set)."""
        return [self.doc_ids[i] for i in self.state.matches.tolist()]

    def checking(self) -> bool:
        """True while the rule is checking a random sample (a stopping test) rather than
        screening in rank order."""
        return self.state.phase == "checking"


def review_documents(ranking: list[str], answers: Mapping[str, tuple[bool, str]], targets: ReviewTargets,
                     deferred: Iterable[str] = (), feedback: Feedback | None = None) -> DocumentReview:
    """Replay the review over documents named by id (see :func:`replay`).

    Args:
        ranking: doc_ids in rank order (best evidence first), each once.
        answers: ``{doc_id: (label, source)}`` known answers; ids not in ``ranking`` are
            ignored (the review covers the ranked documents only).
        targets: The targets.
        deferred: doc_ids put off (skipped).
        feedback: Document features in ranking order (:class:`Feedback`, e.g.
            :meth:`Feedback.from_evidence`): screening is re-ranked by the answers; None:
            the ranking as given.

    Raises:
        ValueError: an empty ranking or a doc_id twice in it.
    """
    ranking = list(ranking)
    if not ranking or len(set(ranking)) != len(ranking):
        raise ValueError("the review needs a ranking naming each document once")
    pos = {d: i for i, d in enumerate(ranking)}
    lab = {pos[d]: bool(v[0]) for d, v in answers.items() if d in pos}
    st = replay(np.arange(len(ranking)), lab, targets, deferred=[pos[d] for d in deferred if d in pos],
                feedback=feedback)
    return DocumentReview(ranking, st, {d: v for d, v in answers.items() if d in pos})
