"""The offline filter decisions of a run: evidence scores, ranks and the cut (SPEC F6).

For every strategy of a filter run, :func:`offline_decisions` turns the retrieved
evidence into each document's *evidence score* (the robust z of
:mod:`.decider`; for ``combined`` with the structure-aware signals of
:mod:`~docmaster_core.filtering.evidence` and section-role weights of :mod:`~docmaster_core.tree.roles`), its rank, and the
suggested :class:`Cut`. The calibrated decider's decisions are the documents at or
above the cut; an LLM run keeps the scores and ranks beside the model's decisions, so
the collection can always be ranked and the cut moved without retrieving again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..model import Decision, Evidence
from .decider import (
    OfflineCalibration,
    calibrated_decisions,
    dense_score,
    lexical_score,
    lexical_stats,
    clearly_on_topic,
    on_topic,
)
from .evidence import condition_names, distinctive_share, document_signals, lacks_names, lexical_parts
from ..text.terms import condition_terms, tokens
from ..text.words import split_sentences
from ..tree.roles import ROLES, evidence_weight, role_weight, view_roles

__all__ = ["Cut", "calibrated_document_decisions", "offline_decisions"]


@dataclass
class Cut:
    """The suggested cut of one strategy's ranking in a filter run.

    Attributes:
        rule: ``"best_fraction"``, ``"zscore"`` or ``"prior"`` (small collection).
        threshold: Evidence score (z units) a document needed to be kept (besides
            passing the dense floor).
        kept: Documents at or above the cut.
        of: Documents ranked.
        best: The best document's evidence score.
        eligible: bool (D,) documents, in run order, whose best passages pass the dense
            floor (and, when one document is on topic, are on topic): only those can be
            kept, and they rank first (not serialised).
        sure_no, sure_yes: The uncertain band (z units, :func:`~docmaster_core.filtering.decider.uncertain_band`).
        uncertain: Documents in the band (kept and dropped ones together).
        none_meets: No document of the run is on topic (:func:`~docmaster_core.filtering.decider.on_topic`):
            no document meets the condition, none is kept, and the documents the cut
            would have kept are uncertain.
        one_on_topic: Exactly one document of the run is on topic: only it may be kept,
            and it is uncertain (nothing on topic to compare it with); the other
            documents the cut would have kept are uncertain drops.

    ``to_dict`` adds ``eligible`` (how many documents passed the dense floor: ranks
    ``1..eligible``; the others rank after them whatever their score).
    """

    rule: str
    threshold: float
    kept: int
    of: int
    best: float
    eligible: np.ndarray | None = field(default=None, repr=False)
    sure_no: float | None = None
    sure_yes: float | None = None
    uncertain: int = 0
    none_meets: bool = False
    one_on_topic: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = {"rule": self.rule, "threshold": round(self.threshold, 4), "kept": self.kept, "of": self.of,
               "best": round(self.best, 4), "uncertain": self.uncertain, "none_meets": self.none_meets,
               "one_on_topic": self.one_on_topic}
        if self.eligible is not None:  # ranks above this count passed the dense floor; the rest rank after them
            out["eligible"] = int(np.asarray(self.eligible).sum())
        if self.sure_no is not None and self.sure_yes is not None:
            out.update(sure_no=round(self.sure_no, 4), sure_yes=round(self.sure_yes, 4))
        return out


def _ranks(z: np.ndarray, eligible: np.ndarray, tie: float = 1e-4) -> np.ndarray:
    """1-based ranks, int64 (D,): the eligible documents (those the rule may keep) first,
    each group by descending score, so that the kept documents are always ranks 1..N.

    Scores within ``tie`` (z units) of their neighbour in the sorted order are a tie and
    rank by position: cosines of the same rows differ in their last float32 bits with the
    BLAS blocking (a Ray shard's rows against the whole view's, another CPU's kernels), and
    that noise, scaled by the robust z, must not reorder two documents whose scores are
    equal in all but those bits (near-duplicate documents), so the ranks do not depend on
    where the documents were scored.
    """
    z = np.asarray(z, dtype=np.float64)
    el = np.asarray(eligible, dtype=bool)
    first = np.lexsort((-z, ~el))  # eligible first, then by score
    zs, es = z[first], el[first]
    group = np.cumsum(np.r_[True, (es[1:] != es[:-1]) | (np.abs(np.diff(zs)) > tie)])
    order = first[np.lexsort((first, group))]  # within a tie, by position
    r = np.empty(order.size, dtype=np.int64)
    r[order] = np.arange(1, order.size + 1)
    return r


def calibrated_document_decisions(condition: str, ev_by_doc: list[list[Evidence]], cos_by_doc: list[np.ndarray],
                                  calib: OfflineCalibration, stats, extra_z: np.ndarray | None = None,
                                  role_aware: bool = False, term_share: np.ndarray | None = None,
                                  topic_cos: np.ndarray | None = None, names: Sequence[str] = (),
                                  lacks_name: np.ndarray | None = None,
                                  roles_by_doc: Sequence[np.ndarray] | None = None) -> tuple[list[Decision], Cut]:
    """Offline decisions of one strategy for a collection (:mod:`.decider`).

    Args:
        condition: The condition text.
        ev_by_doc: One evidence list per document (the collection of the run).
        cos_by_doc: Per document, float32 (n_i,) cosines of its evidence with the condition.
        calib: The rule's parameters.
        stats: :class:`~docmaster_core.filtering.decider.LexicalStats` of the workspace.
        extra_z: Optional float (D,) document-level evidence in z units added to the
            evidence score (the combined strategy's :mod:`~docmaster_core.filtering.evidence` signals).
        role_aware: Weigh each passage by its section role
            (:func:`~docmaster_core.tree.roles.evidence_weight`): a related-work
            passage's cosine and words count ``related_weight`` (0.25 by default:
            someone else's work), a reference-list passage's 0; for a compound condition the
            lexical support is taken per part (:func:`~docmaster_core.filtering.evidence.lexical_parts`)
            and the weakest part counts.
        term_share: Optional float (D,) share of the condition's distinctive terms in
            each document's body: with it, absolute relevance is checked
            (:func:`~docmaster_core.filtering.decider.on_topic`): a kept document that is
            not on topic is uncertain, and when no document is on topic none is kept
            (``Cut.none_meets``).
        topic_cos: Optional float (D,) best cosine of each document's evidence over every
            strategy of the run, for absolute relevance (whether a document is about the
            condition does not depend on the strategy deciding it: flat chunks mix topics
            and are rarely as close as a node); default: this strategy's own best cosine.
        names: The names the condition requires
            (:func:`~docmaster_core.filtering.evidence.condition_names`), for the rationale.
        lacks_name: Optional bool (D,): the document never uses one of ``names``
            (:func:`~docmaster_core.filtering.evidence.lacks_names`). Such a document is
            not on topic and is not kept (an uncertain drop when its score would have kept
            it); when every document lacks one, none is kept. Used with ``term_share``.
        roles_by_doc: Optional, per document, int8 (n_nodes,) role codes of its nodes
            (:func:`~docmaster_core.tree.roles.view_roles`, indexed by node id): with
            ``role_aware``, a passage's weight comes from its node's role, so that a table of
            contents and an empty section ("Mine Safety Disclosures: Not applicable.") count 0
            as a reference list does; a flat chunk (node id -1) is weighed by its section path.

    Returns:
        ``(decisions, cut)``: one :class:`Decision` per document (0 tokens, backend
        ``"offline-calibrated"``, ``evidence_score`` and ``rank`` set; cited ids are
        among the document's evidence ids) and the :class:`Cut` that was applied.
    """
    terms = condition_terms(condition)
    texts = [[e.text for e in evs] for evs in ev_by_doc]
    if role_aware:
        w_by_doc = [_evidence_weights(evs, None if roles_by_doc is None else roles_by_doc[i], calib.related_weight)
                    for i, evs in enumerate(ev_by_doc)]
        d = np.array([dense_score((np.asarray(c) * w)[w > 0], calib.top_m) for c, w in zip(cos_by_doc, w_by_doc)])
        part_terms = lexical_parts(condition)
    else:
        w_by_doc = [None] * len(ev_by_doc)
        d = np.array([dense_score(c, calib.top_m) for c in cos_by_doc])
        part_terms = [terms]
    lex = [lexical_score(terms, t, stats, calib.k1, weights=w) for t, w in zip(texts, w_by_doc)]
    if len(part_terms) > 1:  # a compound condition: lexical support of every part (soft AND)
        l = np.array([[lexical_score(pt, t, stats, calib.k1, weights=w)[0] for pt in part_terms]
                      for t, w in zip(texts, w_by_doc)])
    else:
        l = np.array([x[0] for x in lex])
    present = np.array([len(c) > 0 for c in cos_by_doc], dtype=bool)
    dec, z, st = calibrated_decisions(d, l, calib, present, extra_z=extra_z)
    if present.any() and not present.all():  # documents without evidence rank last
        z = np.where(present, z, float(z[present].min()) - 1.0)
    eligible = above_floor = present & (d >= calib.floor)
    ranks = _ranks(z, eligible)
    thr = float(st["threshold"])
    unsure = eligible & (z >= st["sure_no"]) & (z < st["sure_yes"])
    topical = np.ones(len(z), dtype=bool)
    none_meets = lone_topic = False
    dropped_off_topic = np.zeros(len(z), dtype=bool)
    if term_share is not None:
        best_cos = np.array([float(np.max(c)) if len(c) else 0.0 for c in cos_by_doc])
        if topic_cos is not None:
            best_cos = np.maximum(best_cos, np.asarray(topic_cos, dtype=np.float64))
        topical = on_topic(best_cos, term_share, calib) & present
        if lacks_name is not None:  # "governed by the laws of Japan" over contracts that never name Japan
            topical = topical & ~np.asarray(lacks_name, dtype=bool)
        if not topical.any():  # nothing in the collection is about the condition: keep nothing
            none_meets = True
            unsure = unsure | dec
            dec = np.zeros_like(dec)
        else:
            if topical.sum() == 1:
                # one document is about the condition: the others' scores were measured against a
                # collection that is not, so only it may be kept (the others become uncertain drops)
                lone_topic = True
                dropped_off_topic = dec & ~topical
                dec = dec & topical
                # ... and it is uncertain: its score was measured against documents that are not
                # about the condition, and a lone document holding the words may use them in
                # another sense (a 10-K's lease notes for "an apartment lease")
                unsure = unsure | dropped_off_topic | dec
            # sure only on topic in meaning and in words; with one of the two (or neither) uncertain
            unsure = unsure | (dec & ~clearly_on_topic(best_cos, term_share, calib))
            if lacks_name is not None:  # a document that never uses a name the condition requires is not kept
                unnamed = dec & np.asarray(lacks_name, dtype=bool)
                dropped_off_topic = dropped_off_topic | unnamed
                dec = dec & ~unnamed
                unsure = unsure | unnamed
    if dropped_off_topic.any():  # the kept documents stay ranks 1..N: the dropped ones rank after the eligible
        eligible = eligible & ~dropped_off_topic
        ranks = _ranks(z, eligible)
    cut = Cut(str(st["cut"]), thr, int(dec.sum()), int(len(z)), float(z[present].max()) if present.any() else 0.0,
              eligible=eligible, sure_no=float(st["sure_no"]), sure_yes=float(st["sure_yes"]), uncertain=int(unsure.sum()),
              none_meets=none_meets, one_on_topic=lone_topic)
    out = []
    for i, (evs, c) in enumerate(zip(ev_by_doc, cos_by_doc)):
        if not evs:
            out.append(Decision(False, "No evidence was retrieved for this document.", [], 0.0, 0, "offline-calibrated",
                                evidence_score=float(z[i]), rank=int(ranks[i])))
            continue
        # the passages that count most first: a related-work passage ranks by its weighted cosine
        order = np.argsort(-(np.asarray(c) * w_by_doc[i]) if role_aware else -np.asarray(c), kind="stable")
        best = next((evs[int(j)] for j in order if evs[int(j)].text.strip()), evs[int(order[0])])
        hits = lex[i][1]
        rule = _rule_sentence(st["mode"], calib, thr, cut.best, int(present.sum())) if not none_meets else \
            "no score keeps a document here, because no document of this collection is about the condition"
        weak = None if above_floor[i] else (d[i], calib.floor)
        conf = float(1.0 / (1.0 + np.exp(-(z[i] - thr))))
        if dec[i]:
            # the passages that carry the decision: top cosines, then passages holding the condition's keywords
            ids = [evs[int(j)].evidence_id for j in order[: calib.top_m]]
            if hits:
                kw = set(hits)
                ids += [e.evidence_id for e in evs if e.evidence_id not in ids and kw & set(tokens(e.text))][:3]
        else:
            ids = [best.evidence_id]
        rationale = readable_rationale(bool(dec[i]), float(z[i]), thr, int(ranks[i]), len(z),
                                       [evs[int(j)] for j in order[: calib.top_m]], best, hits, rule, weak,
                                       on_topic=bool(topical[i]), uncertain=bool(unsure[i]))
        missing_name = lacks_name is not None and bool(lacks_name[i])
        named = ", ".join(f'"{t}"' for t in names)
        if none_meets and missing_name and lacks_name is not None and bool(np.all(np.asarray(lacks_name)[present])):
            rationale = (f"No document of this collection meets the condition: none mentions {named}, which it names, "
                         "so nothing is kept. " + rationale)
        elif none_meets:
            rationale = ("No document of this collection meets the condition: none holds a passage close in meaning "
                         "to it or uses its distinctive words, so nothing is kept. " + rationale)
        elif missing_name and (dropped_off_topic[i] or not dec[i]):
            rationale += (f" It never mentions {named}, which the condition names, so it is not kept"
                          + (" although its score would have kept it." if dropped_off_topic[i] else "."))
        elif dropped_off_topic[i]:
            rationale += (" Only one document of this collection is about the condition (holds a passage close in "
                          "meaning to it or its distinctive words); this one scores high only against documents that "
                          "are not about it either, so it is not kept.")
        elif lone_topic and dec[i]:
            rationale += (" It is the only document of this collection about the condition (a passage close in "
                          "meaning to it or its distinctive words), so its score was measured against documents that "
                          "are not; it may use the words in another sense.")
        elif not topical[i] and dec[i]:
            rationale += (" Its closest passage is only loosely similar to the condition and it uses few of the "
                          "condition's distinctive words, so it is uncertain at most.")
        if unsure[i] and st["sure_no"] <= z[i] < st["sure_yes"]:
            rationale += (f" Uncertain: its score lies between {st['sure_no']:.2g} and {st['sure_yes']:.2g}, "
                          "where the cut is often wrong; check this document.")
        elif unsure[i] and dec[i] and topical[i] and not lone_topic:
            rationale += (" Uncertain: it is close to the condition in meaning or uses its distinctive words, "
                          "not both; check this document.")
        elif unsure[i]:
            rationale += " Uncertain: check this document."
        out.append(Decision(bool(dec[i]), rationale, ids, conf, 0, "offline-calibrated",
                            evidence_score=float(z[i]), rank=int(ranks[i]), uncertain=bool(unsure[i])))
    return out, cut


def _evidence_weights(evs: Sequence[Evidence], roles: np.ndarray | None, related_weight: float) -> np.ndarray:
    """float (n,) weight of each passage as the document's own evidence: 0 for back matter, a table
    of contents or an empty section, ``related_weight`` for related work, else 1; by the node's role
    code in ``roles`` (int8, indexed by node id) when given, else (and for a flat chunk) by the
    section path (:func:`~docmaster_core.tree.roles.evidence_weight`)."""
    return np.array([role_weight(ROLES[int(roles[e.node_id])], related_weight)
                     if roles is not None and 0 <= e.node_id < len(roles)
                     else evidence_weight(e.section_path, related_weight) for e in evs], dtype=np.float64)


def _strength(z: float, thr: float) -> str:
    """How strong a document's support is, in words, from its evidence score and the cut."""
    if thr > 0 and z >= 1.5 * thr:
        return "strong"
    if z >= thr:
        return "enough"
    if thr > 0 and z >= 0.5 * thr:
        return "some, but not enough"
    return "little"


def _rule_sentence(mode: str, calib: OfflineCalibration, thr: float, best: float, n_present: int) -> str:
    """The cut explained in one clause (what score a document needed and why)."""
    if mode == "prior":
        return (f"a document needs a score of {thr:g}, judged against typical corpus statistics because a "
                f"collection of {n_present} documents is too small to compare within")
    if calib.cut == "best_fraction":
        return (f"a document is kept from a score of {thr:.1f}: {calib.rel_rho:g} times the best document's score "
                f"{best:.1f}, and never below {calib.rel_z_min:g}")
    return f"a document is kept from a score of {thr:.1f}"


def readable_rationale(kept: bool, score: float, thr: float, rank: int, n: int, top: Sequence[Evidence],
                       best: Evidence, hits: Sequence[str], rule: str,
                       weak: tuple[float, float] | None = None, on_topic: bool = True, uncertain: bool = False) -> str:
    """A filter decision explained for a person, in two or three sentences.

    Says whether the document is kept and how strong its support is, which passages
    support the condition and from which sections, which of the condition's words they
    contain, what its evidence score is against the cut, and quotes the closest passage.

    Args:
        kept: The decision.
        score: The document's evidence score (how far its support stands above a typical
            document of the collection, in robust standard deviations).
        thr: The score needed to be kept.
        rank: 1-based rank of the document; ``n`` documents in all.
        top: The passages that count most (best first).
        best: The closest passage (quoted).
        hits: Condition words found in the passages.
        rule: The cut in one clause (:func:`_rule_sentence`).
        weak: ``(mean cosine, floor)`` when the passages are too weakly similar to be kept.
        on_topic: False when the document is not on topic in absolute terms
            (:func:`~docmaster_core.filtering.decider.on_topic`): its support is then
            called "little" whatever its rank.
        uncertain: The decision is uncertain (the sentence after says why): its support is
            then said against the cut ("above the cut, uncertain"), never "strong", which
            read as a contradiction beside "Uncertain: check this document".

    Returns:
        The rationale text (plain text, no markup).
    """
    sections: list[str] = []
    for e in top:
        name = " ".join((e.section_path[-1] if e.section_path else "the opening text").split())
        name = name if len(name) <= 50 else name[:49].rstrip() + "…"
        if name not in sections:
            sections.append(name)
    pages = sorted({int(e.page) for e in top if e.page})
    where = ", ".join(f"\"{x}\"" for x in sections[:3]) + (" and others" if len(sections) > 3 else "")
    verdict = "Kept" if kept else "Not kept"
    strength = (_strength(score, thr) if on_topic else "little") + " support"
    if uncertain:
        strength = f"support {'above' if score >= thr else 'below'} the cut, but uncertain"
    out = (f"{verdict}, rank {rank} of {n}: {strength}. Its {len(top)} closest passage"
           f"{'s are' if len(top) != 1 else ' is'} in {where or 'the document'}"
           + (f" (p. {', '.join(map(str, pages[:5]))})" if pages else "")
           + (f" and mention {', '.join(hits[:6])}" if hits else "; none of the condition's words appear in them")
           + f". Evidence score {score:.1f} (0 = typical for this collection, higher = stronger support); {rule}.")
    if weak is not None:
        out += (f" Its passages are only weakly similar to the condition (average similarity {weak[0]:.2f}, "
                f"needed {weak[1]:g}), so it ranks after every document with closer passages.")
    # the page first, the evidence id after it in words ("[T2] p.5" read as a code to a newcomer)
    return out + (f" Closest passage, p. {best.page} (evidence {best.evidence_id}): "
                  f"\"{_quoted_sentence(best.text, hits)}\"")


def _quoted_sentence(text: str, hits: Sequence[str], max_words: int = 40) -> str:
    """The sentence of a passage a rationale quotes: the one holding most of the condition's
    words found (``hits``), the first on a tie, at most ``max_words`` words (a newcomer could
    not overrule a decision whose quote stopped before the deciding words)."""
    sents = split_sentences(" ".join((text or "").split())) or [text or ""]
    kw = set(hits)
    pick = max(enumerate(sents), key=lambda p: (len(kw & set(tokens(p[1]))), -p[0]))[1]
    words = pick.split()
    return " ".join(words[:max_words]) + (" …" if len(words) > max_words else "")


def offline_decisions(retr, view, condition: str, docs: list,
                      cos_by: dict[str, list[np.ndarray]], strategies: Sequence[str], calib: OfflineCalibration,
                      doc_ids: Sequence[str] | None = None, score_passages: int | None = None
                      ) -> tuple[dict[str, list[Decision]], dict[str, Cut]]:
    """The offline decisions, evidence scores and cuts of every strategy of a run.

    Args:
        retr: The :class:`~docmaster_core.retrieval.retriever.Retriever` (its embedder
            encodes the condition's parts).
        view: The corpus view.
        condition: The condition text.
        docs: The run's :class:`~docmaster_core.filtering.run.DocumentResult` list (view
            order) with their ``evidence`` filled.
        cos_by: ``{strategy: [float32 (n_i,) evidence cosines per document]}``.
        strategies: Strategies to decide.
        calib: The rule's parameters.
        doc_ids: The run's documents (None: all of the view).
        score_passages: When set, the evidence score of ``combined`` is computed from
            the first ``score_passages`` passages of its evidence (the budgeted evidence
            takes every strategy's best passages first, :func:`~docmaster_core.retrieval.combine.fuse_within_budget`):
            the rule was calibrated on top-k evidence, and scoring all 8,000 characters
            lowered its leave-one-condition-out F1 (docs/results/evidence.md). The
            decision's cited passages and rationale come from the same first passages.

    The ``combined`` strategy adds the document-level, structure-aware signals of
    :mod:`~docmaster_core.filtering.evidence` (role-weighted lexical support over the body, soft-AND dense
    support of the condition's parts) to its evidence score, in the collection mode.

    Returns:
        ``({strategy: [Decision per document of docs]}, {strategy: Cut})``.
    """
    stats = lexical_stats(view)
    mask_all = view.doc_mask(doc_ids)
    share = distinctive_share(view, condition, stats, calib.distinct_df, calib.related_weight)[np.flatnonzero(mask_all)]
    names = condition_names(condition, stats, calib.distinct_df)
    lacking = lacks_names(view, names, calib.related_weight)[np.flatnonzero(mask_all)] if names else None
    extra = None
    if "combined" in strategies and len(docs) >= calib.min_collection:
        mask = view.doc_mask(doc_ids)
        sig = document_signals(view, lambda texts: retr.embedder.encode(list(texts)), condition, stats,
                               top_m=calib.top_m, related_weight=calib.related_weight, k1=calib.k1,
                               dense_scale_floor=calib.dense_scale_floor, lex_scale_floor=calib.lex_scale_floor,
                               doc_mask=mask, pool=calib.pool)
        extra = (sig.dense_z + calib.lam * sig.lexical_z)[np.flatnonzero(mask)]
    roles = view_roles(view)
    roles_by_doc = [roles[view.docs[j].rows] for j in np.flatnonzero(mask_all)]
    out, cuts = {}, {}
    topic_cos = np.array([max((float(np.max(cos_by[s][i])) for s in strategies if len(cos_by[s][i])), default=0.0)
                          for i in range(len(docs))])
    for s in strategies:
        n = score_passages if (s == "combined" and score_passages) else None
        out[s], cuts[s] = calibrated_document_decisions(condition, [r.evidence[s][:n] for r in docs],
                                                        [c[:n] for c in cos_by[s]], calib,
                                                        stats, extra_z=extra if s == "combined" else None,
                                                        role_aware=s == "combined", term_share=share,
                                                        topic_cos=topic_cos, names=names, lacks_name=lacking,
                                                        roles_by_doc=roles_by_doc)
    return out, cuts
