"""The offline filter decision: a collection-calibrated evidence score (SPEC F6, F8).

With no LLM, a document's decision for a condition is computed from the evidence a
strategy retrieved for it, exactly as an LLM would see it (the same rule decides the
evidence of every strategy, flat chunks included). Two signals are read from the
evidence:

* dense: ``d = mean of the top-m cosines`` between the condition and the evidence
  passages (m = 3);
* lexical: ``l = sum over condition terms t of idf(t) * tf(t) (k1 + 1) / (tf(t) + k1)``
  over the evidence texts (the BM25 term weight, Robertson and Zaragoza 2009, k1 = 1.2,
  no length normalisation), where ``idf(t) = ln((N - df + 0.5) / (df + 0.5) + 1)`` is
  computed over the documents of the workspace (body text, reference lists excluded)
  and the condition terms are its words minus stop words (hyphenated words also count
  joined, so "GPT-3" matches "gpt3" and "GPT-3"). Named benchmarks, models and
  formal terms ("ImageNet", "GPT-4", "lemma") are what the small embedder blurs.

A fixed threshold does not transfer between conditions: the typical cosine of a
condition with unrelated text depends on its wording. Filtering runs over a collection,
so both signals are standardised with the median and the MAD (robust z-scores, scales
floored at ``dense_scale_floor`` and ``lex_scale_floor``)::

    z(doc) = (d - med d) / max(1.4826 MAD d, dense_scale_floor)
           + lam * (l - med l) / max(1.4826 MAD l, lex_scale_floor)
           [+ document-level signals, combined strategy only, :mod:`~docmaster_core.filtering.evidence`]

The median and MAD are taken over the condition's *neighbourhood*: the ``pool`` (44)
documents of the run that score best on that signal (all of them in a smaller
collection). Documents added far below it, e.g. unrelated ones, then move neither
statistic, so the decisions of the documents already there do not flip: doubling the
88-document corpus with 88 unrelated PDFs changed 0.66 % of the combined decisions with
the pool and 9.33 % with statistics over the whole collection (docs/results/filter.md,
``scripts/stability_filter.py``). The price: a document must score above the median of
the 44 best to be kept, so in a collection where far more than ~40 documents match a
condition the rule keeps too few (measured only up to 176 documents and 20 matches;
raise ``pool`` for such collections).

z is the document's *evidence score*; it ranks the collection. The cut (``cut``):

* ``best_fraction`` (default): keep the documents whose evidence is at least ``rel_rho``
  times as strong as the best-supported document's, and above the neighbourhood::

      keep  z >= max(rel_z_min, rel_rho * max z)   and  d >= floor

  How many documents satisfy a condition varies from 1 to a third of a collection, and
  the z of the true matches varies with it (a few outstanding matches reach z 10-17, a
  third of the collection matching gives z 1.5-3.5): a fixed z threshold is either too
  strict for the second or too loose for the first. Anchoring the cut to the strongest
  evidence adapts to both. ``rel_rho`` = 0.35 and ``rel_z_min`` = 0.5 were chosen by
  leave-one-condition-out over the 24 public conditions P1-P12, Q1-Q12 (the choice in
  23 of 24 folds); docs/results/filter.md for the figures.
* ``zscore`` (the rule before): keep ``z >= z_threshold and d >= floor``, an outlier
  rule that keeps only the top few documents when many match.

Three-way decisions: a cut is one guess at how many documents match, and the documents
near it are the ones it gets wrong. Between a *sure-no* and a *sure-yes* evidence score
a document is **uncertain** (:func:`uncertain_band`)::

    uncertain  min(thr, sure_no_z) <= z < max(thr, sure_yes_z)   (eligible documents only)

Its decision stays the cut's (so F1 of the decisions is unchanged), and the run reports
it as uncertain: offline, these are the documents a person should look at; with an LLM,
the ones worth asking about. ``sure_yes_z`` = 6 and ``sure_no_z`` = 0.25 were chosen on
the 34 public conditions (P, Q over the 88-document corpus, V over 59 CUAD contracts),
pooled, as the scores above which the kept documents had precision >= 0.8 and below which
fewer than 15 % of the matches fell (docs/results/filter.md).

Absolute relevance (issue 32) then asks each document without the others
(:func:`on_topic`, :func:`clearly_on_topic`): a kept document is *sure* only when it is
on topic both in meaning (its closest passage) and in words (the condition's distinctive
terms); with one of the two it is uncertain, with neither it is uncertain and "little
support". When no document of the run is on topic nothing is kept ("no document meets
this condition"); when exactly one is, only it may be kept (the others' scores were
measured against a collection that is not about the condition).

The floor keeps a collection without any relevant document from producing matches
that are only relatively better, and a document whose best passages are only weakly
similar from being kept on keywords alone. A run ranks the documents that pass it first
(:mod:`~docmaster_core.filtering.offline`), so the kept documents are always the top of the ranking.

Small collections (fewer than ``min_collection`` documents with evidence): a median and
a MAD over 2-7 documents are meaningless (with one match among three documents the
match *is* a third of the sample), so the same z-score is taken against *prior*
statistics instead of the collection's::

    z(doc) = (d - prior_dense_median) / prior_dense_scale
           + prior_lam * (l - prior_lex_median) / lex_scale_floor
    decision = z >= prior_z_threshold  and  d >= floor

The priors are the typical collection statistics of the 88-document corpus (median
over the 12 public conditions of the per-condition dense median 0.28 and scale 0.08;
lexical median 0.5). ``prior_z_threshold`` and ``prior_lam`` were chosen on conditions
P1, P3, ..., P11 by simulating random sub-collections of 2-7 documents (half of them
holding at least one match), and checked on P2, ..., P12 (see docs/results/filter.md): the former
fixed rule ``d >= 0.55`` rejected clear matches whose dense score was 0.40-0.53
(macro-F1 0.31 / 0.22 on the two halves against 0.89 / 0.57 for this rule).

Calibration: the parameters were chosen on half of the public labelled conditions
(P1, P3, P5, P7, P9, P11 of ``../shared/eval``), one setting for all strategies (it is
one decider), maximising the mean F1 over the five strategies; the other half is
reported separately (see docs/results/filter.md and ``scripts/eval_all.sh``). Instructions inside
document text are only text to embed and count: they cannot change a decision beyond
their similarity to the condition.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from ..text.terms import tokens, token_counts

__all__ = [
    "OfflineCalibration",
    "DEFAULT_CALIBRATION",
    "calibration_from_settings",
    "LexicalStats",
    "lexical_stats",
    "dense_score",
    "lexical_score",
    "robust_z",
    "calibrated_decisions",
    "cut_threshold",
    "uncertain_band",
    "on_topic",
    "clearly_on_topic",
]

@dataclass(frozen=True)
class OfflineCalibration:
    """Parameters of the offline decision rule (see the module docstring).

    Attributes:
        top_m: Evidence cosines averaged into the dense score d.
        lam: Weight of the lexical z-score.
        cut: ``"best_fraction"`` (keep z >= max(rel_z_min, rel_rho * max z)) or
            ``"zscore"`` (keep z >= z_threshold); see the module docstring.
        rel_rho: Fraction of the best document's evidence score a kept document needs.
        rel_z_min: Minimum evidence score (z units) of a kept document (best_fraction cut).
        related_weight: Weight of related-work / background passages in the combined
            strategy's evidence (:mod:`~docmaster_core.filtering.evidence`): someone else's work, so 0.25 by
            default (0 ignores them; 1 counts them fully, which ranked the public
            conditions slightly better, AP 0.791 vs 0.784, but lets a paper whose
            only mention of a topic is in its related work pass). Reference lists
            always count 0.
        pool: The robust statistics of each signal are taken over the ``pool``
            best-scoring documents of the run (None: over all of them).
        z_threshold: Minimum combined robust z-score (``zscore`` cut).
        floor: Minimum dense score d (cosine units).
        dense_scale_floor: Lower bound of the dense scale (cosine units).
        lex_scale_floor: Lower bound of the lexical scale (idf-weighted term units).
        min_collection: Collections with fewer documents than this use the prior rule.
        prior_dense_median: Prior median of d for small collections (cosine units).
        prior_dense_scale: Prior scale of d for small collections (cosine units).
        prior_lex_median: Prior median of l for small collections.
        prior_lam: Weight of the lexical z-score in the prior rule.
        prior_z_threshold: Minimum prior z-score in small collections.
        k1: BM25 term-frequency saturation.
        sure_yes_z: Evidence score from which a kept document is sure (three-way
            decisions; :func:`uncertain_band`).
        sure_no_z: Evidence score below which a dropped document is sure.
        abs_cos: Absolute relevance (issue 32): a document is *on topic* when its best
            evidence passage has cosine >= ``abs_cos`` with the condition, or when
            ``abs_terms`` of the condition's distinctive terms occur in its body
            (:func:`~docmaster_core.filtering.evidence.distinctive_share`). A kept document
            that is not on topic is uncertain at most; when no document of the run is on
            topic, no document meets the condition and none is kept.
        abs_terms: Share of the distinctive terms that makes a document on topic.
        distinct_df: A condition term is distinctive when at most this share of the
            collection's documents hold it.
    """

    top_m: int = 3
    lam: float = 1.0
    cut: str = "best_fraction"
    rel_rho: float = 0.35
    rel_z_min: float = 0.5
    related_weight: float = 0.25
    pool: int | None = 44
    z_threshold: float = 3.75
    floor: float = 0.30
    dense_scale_floor: float = 0.02
    lex_scale_floor: float = 2.0
    min_collection: int = 8
    prior_dense_median: float = 0.28
    prior_dense_scale: float = 0.08
    prior_lex_median: float = 0.5
    prior_lam: float = 0.5
    prior_z_threshold: float = 3.0
    k1: float = 1.2
    sure_yes_z: float = 6.0
    sure_no_z: float = 0.25
    abs_cos: float = 0.50
    abs_terms: float = 0.5
    distinct_df: float = 0.5

    def to_dict(self) -> dict[str, float | str]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def __post_init__(self) -> None:
        if self.cut not in ("best_fraction", "zscore"):
            raise ValueError(f"cut must be 'best_fraction' or 'zscore', got {self.cut!r}")
        if not 0.0 < self.rel_rho <= 1.0:
            raise ValueError(f"rel_rho must be in (0, 1], got {self.rel_rho!r}")
        if self.sure_no_z > self.sure_yes_z:
            raise ValueError(f"sure_no_z ({self.sure_no_z!r}) must not exceed sure_yes_z ({self.sure_yes_z!r})")


DEFAULT_CALIBRATION = OfflineCalibration()


def calibration_from_settings(settings) -> OfflineCalibration:
    """The :class:`OfflineCalibration` of a :class:`~docmaster_core.config.FilterSettings`
    (the settings tree's ``filter`` section; the other parameters keep their defaults).

    Raises:
        ValueError: an inconsistent combination (see :class:`OfflineCalibration`).
    """
    return replace(DEFAULT_CALIBRATION, **settings.model_dump())



@dataclass
class LexicalStats:
    """Document frequencies over a collection's body text.

    Attributes:
        n_docs: Number of documents N.
        df: Token -> number of documents containing it.
    """

    n_docs: int
    df: Counter

    def idf(self, term: str) -> float:
        """ln((N - df + 0.5) / (df + 0.5) + 1) (BM25 idf, always > 0)."""
        df = self.df.get(term, 0)
        return math.log((self.n_docs - df + 0.5) / (df + 0.5) + 1.0)


def lexical_stats(view) -> LexicalStats:
    """The (cached) :class:`LexicalStats` of a corpus view; reference lists are left out."""

    def build() -> LexicalStats:
        df: Counter = Counter()
        for dv in view.docs:
            seen: set[str] = set()
            bm = view.back_matter[dv.rows]
            for n in dv.tree.nodes:
                if not bm[n.id]:
                    seen.update(tokens(n.content))
            df.update(seen)
        return LexicalStats(len(view.docs), df)

    return view.aux("lexical_stats", build)


def dense_score(cosines: np.ndarray, top_m: int) -> float:
    """Mean of the ``top_m`` largest cosines (0 for no evidence)."""
    c = np.asarray(cosines, dtype=np.float64)
    return float(np.sort(c)[::-1][:top_m].mean()) if c.size else 0.0


def lexical_score(terms: Sequence[str], texts: Sequence[str], stats: LexicalStats, k1: float = 1.2,
                  weights: Sequence[float] | None = None) -> tuple[float, list[str]]:
    """BM25-weighted count of the condition terms in the evidence texts.

    Args:
        terms: Condition terms (:func:`condition_terms`).
        texts: Evidence texts.
        stats: Document frequencies of the collection.
        k1: BM25 saturation.
        weights: Optional weight per text (a term occurrence counts ``weights[i]``;
            e.g. a related-work passage 0.25, see :mod:`~docmaster_core.tree.roles`); default 1 each.

    Returns:
        ``(score, matched terms)``.
    """
    if not terms or not texts:
        return 0.0, []
    tf: Counter = Counter()
    want = set(terms)
    for i, t in enumerate(texts):
        w = 1.0 if weights is None else float(weights[i])
        if w <= 0:
            continue
        counts = token_counts(t)
        for term in want:
            for _ in range(counts.get(term, 0)):
                tf[term] += w  # one addition per occurrence: the same float sum as token by token
    s = 0.0
    hit = []
    for term in terms:
        f = tf.get(term, 0)
        if f:
            s += stats.idf(term) * f * (k1 + 1.0) / (f + k1)
            hit.append(term)
    return s, hit


def robust_z(x: np.ndarray, scale_floor: float, mask: np.ndarray | None = None,
             pool: int | None = None) -> tuple[np.ndarray, float, float]:
    """``(x - median) / max(1.4826 MAD, scale_floor)`` with statistics over ``mask``.

    Args:
        x: float (D,) values.
        scale_floor: Lower bound of the scale.
        mask: Optional bool (D,) values the statistics are taken over.
        pool: When set, the statistics are taken over the ``pool`` largest values of
            ``mask`` only (the condition's neighbourhood), so documents added far below
            it (unrelated ones) do not move them.

    Returns:
        ``(z float64 (D,), median, scale)``.
    """
    x = np.asarray(x, dtype=np.float64)
    sel = x if mask is None else x[mask]
    if pool is not None and sel.size > pool:
        sel = np.partition(sel, sel.size - pool)[sel.size - pool:]
    med = float(np.median(sel)) if sel.size else 0.0
    mad = float(np.median(np.abs(sel - med))) if sel.size else 0.0
    scale = max(1.4826 * mad, scale_floor)
    return (x - med) / scale, med, scale


def cut_threshold(z: np.ndarray, calib: OfflineCalibration = DEFAULT_CALIBRATION,
                  present: np.ndarray | None = None) -> float:
    """The evidence score a document needs to be kept (collection mode; see the module docstring).

    Args:
        z: float (D,) evidence scores of the collection.
        calib: The rule's parameters (``cut``, ``rel_rho``, ``rel_z_min``, ``z_threshold``).
        present: Optional bool (D,) documents that had evidence (the others cannot set
            the maximum).

    Returns:
        The threshold in z units: ``max(rel_z_min, rel_rho * max z)`` for the
        best_fraction cut, ``z_threshold`` for the zscore cut.
    """
    if calib.cut == "zscore":
        return float(calib.z_threshold)
    z = np.asarray(z, dtype=np.float64)
    sel = z if present is None else z[np.asarray(present, dtype=bool)]
    top = float(sel.max()) if sel.size else 0.0
    return float(max(calib.rel_z_min, calib.rel_rho * top))


def uncertain_band(thr: float, calib: OfflineCalibration = DEFAULT_CALIBRATION, mode: str = "collection"
                   ) -> tuple[float, float]:
    """The evidence scores between which a document is *uncertain* (three-way decisions).

    Args:
        thr: The cut's threshold (z units) in this run.
        calib: The rule's parameters (``sure_no_z``, ``sure_yes_z``).
        mode: ``"collection"`` or ``"prior"``; a small collection (prior mode) has no
            band of its own: its scores are not comparable with the band's calibration.

    Returns:
        ``(sure_no, sure_yes)`` in z units: an eligible document with
        ``sure_no <= z < sure_yes`` is uncertain; the band always contains the cut
        (``sure_no <= thr <= sure_yes``), so a document kept by the cut is never "sure no"
        and a dropped one never "sure yes". In prior mode both equal ``thr`` (no band).
    """
    if mode == "prior":
        return float(thr), float(thr)
    return float(min(thr, calib.sure_no_z)), float(max(thr, calib.sure_yes_z))


def calibrated_decisions(d: np.ndarray, l: np.ndarray, calib: OfflineCalibration = DEFAULT_CALIBRATION,
                         present: np.ndarray | None = None, extra_z: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray, dict[str, float | str]]:
    """Decisions from the dense and lexical evidence scores of a collection.

    Args:
        d: float (D,) dense scores (:func:`dense_score`).
        l: float (D,) lexical scores (:func:`lexical_score`), or (D, P) one column per
            part of a compound condition: then the lexical z is the minimum over the
            parts' z-scores (a soft AND; the prior mode uses the smallest raw score).
        calib: The rule's parameters.
        present: Optional bool (D,) documents that had evidence; the others are decided
            False and do not enter the statistics.
        extra_z: Optional float (D,) further evidence already in z units (the
            document-level signals of :mod:`~docmaster_core.filtering.evidence`), added to z in the
            collection mode; ignored in the prior mode.

    Returns:
        ``(decision bool (D,), z float64 (D,), stats)``; ``stats`` holds the medians and
        scales of both signals, the ``mode`` (``"collection"``, or ``"prior"`` for a
        collection smaller than ``calib.min_collection``), the ``cut`` rule, the
        ``threshold`` z a document needed, and ``sure_no`` / ``sure_yes``
        (:func:`uncertain_band`).
    """
    d = np.asarray(d, dtype=np.float64)
    l2 = np.asarray(l, dtype=np.float64).reshape(d.shape[0], -1)
    ok = np.ones(d.shape[0], dtype=bool) if present is None else np.asarray(present, dtype=bool)
    if ok.sum() < calib.min_collection:
        z = ((d - calib.prior_dense_median) / calib.prior_dense_scale
             + calib.prior_lam * (l2.min(axis=1) - calib.prior_lex_median) / calib.lex_scale_floor)
        dec = ok & (z >= calib.prior_z_threshold) & (d >= calib.floor)
        lo, hi = uncertain_band(calib.prior_z_threshold, calib, "prior")
        return dec, z, {"mode": "prior", "dense_median": calib.prior_dense_median, "dense_scale": calib.prior_dense_scale,
                        "lex_median": calib.prior_lex_median, "lex_scale": calib.lex_scale_floor,
                        "cut": "prior", "threshold": calib.prior_z_threshold, "sure_no": lo, "sure_yes": hi}
    zd, md, sd = robust_z(d, calib.dense_scale_floor, ok, calib.pool)
    parts = [robust_z(l2[:, p], calib.lex_scale_floor, ok, calib.pool) for p in range(l2.shape[1])]
    zl = np.min([p[0] for p in parts], axis=0)
    ml, sl = parts[0][1], parts[0][2]
    z = zd + calib.lam * zl
    if extra_z is not None:
        z = z + np.asarray(extra_z, dtype=np.float64)
    thr = cut_threshold(z, calib, ok)
    dec = ok & (z >= thr) & (d >= calib.floor)
    lo, hi = uncertain_band(thr, calib)
    return dec, z, {"mode": "collection", "dense_median": md, "dense_scale": sd, "lex_median": ml, "lex_scale": sl,
                    "cut": calib.cut, "threshold": thr, "sure_no": lo, "sure_yes": hi}


def on_topic(best_cos: np.ndarray, term_share: np.ndarray, calib: OfflineCalibration = DEFAULT_CALIBRATION
             ) -> np.ndarray:
    """Absolute relevance of each document to a condition (issue 32).

    The evidence score compares a document with the others, so some document always
    comes out on top, even for a condition nothing in the collection is about. This
    asks the question without the others: does the document's closest passage mean
    something close to the condition, or does the document use the condition's
    distinctive words at all?::

        on_topic = best_cos >= abs_cos  or  term_share >= abs_terms

    Args:
        best_cos: float (D,) cosine of each document's closest evidence passage with the
            condition (0 without evidence).
        term_share: float (D,) share of the condition's distinctive terms in the body
            (:func:`~docmaster_core.filtering.evidence.distinctive_share`).
        calib: ``abs_cos`` and ``abs_terms``.

    Returns:
        bool (D,). The thresholds were set on the public sets (P, Q, V and ten
        conditions written to be met by no document, docs/results/evidence.md): every
        public condition has an on-topic match; they do not catch a condition whose
        words a collection uses in another sense (two of the ten).
    """
    return (np.asarray(best_cos, dtype=np.float64) >= calib.abs_cos) | \
        (np.asarray(term_share, dtype=np.float64) >= calib.abs_terms)


def clearly_on_topic(best_cos: np.ndarray, term_share: np.ndarray, calib: OfflineCalibration = DEFAULT_CALIBRATION
                     ) -> np.ndarray:
    """Documents on topic *both* in meaning and in words (issue 32): the condition a *sure*
    keep needs::

        clearly_on_topic = best_cos >= abs_cos  and  term_share >= abs_terms

    :func:`on_topic` takes either signal, and each alone is fooled by a collection that
    uses the condition's words in another sense (a supply contract that "will ship and
    deliver the Products" is close in meaning to "the supplier must deliver aircraft
    engines by ship" without holding "aircraft" or "engines"; a fact-checking paper holds
    "rules" and "hockey" without being about ice hockey). A kept document with only one
    of the two is uncertain. Measured on the public sets (offline rule, combined
    strategy; docs/results/evidence.md): the precision of sure keeps rose on P and Q and
    stayed on V, with fewer sure keeps.

    Args:
        best_cos: float (D,) cosine of each document's closest evidence passage.
        term_share: float (D,) distinctive share of each document
            (:func:`~docmaster_core.filtering.evidence.distinctive_share`).
        calib: ``abs_cos`` and ``abs_terms``.

    Returns:
        bool (D,).
    """
    return (np.asarray(best_cos, dtype=np.float64) >= calib.abs_cos) & \
        (np.asarray(term_share, dtype=np.float64) >= calib.abs_terms)
