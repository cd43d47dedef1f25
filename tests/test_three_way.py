"""Three-way filter decisions: between the sure-no and the sure-yes evidence score a
document is *uncertain*; the run, the CLI table, the JSON and the CSV export say so."""
from __future__ import annotations

import csv
import io
from collections import Counter

import numpy as np
import pytest

from docmaster_core.filtering.decider import DEFAULT_CALIBRATION, LexicalStats, OfflineCalibration, uncertain_band
from docmaster_core.filtering.offline import calibrated_document_decisions
from docmaster_core.filtering.run import DocumentResult, FilterRun
from docmaster_core.model import Evidence

CONDITION = "Does the contract cap liability at the fees paid?"


def _collection(n_docs: int = 40, seed: int = 0):
    """A collection whose documents' evidence cosines spread from unrelated (~0.3) to
    clear matches (~0.8); the text of the strongest ones names the condition's terms."""
    rng = np.random.default_rng(seed)
    strength = np.sort(rng.uniform(0.30, 0.80, n_docs))[::-1]
    ev_by_doc, cos_by_doc = [], []
    for i, s in enumerate(strength):
        text = ("Liability is capped at the fees paid under this agreement." if s > 0.65
                else "The parties agree to the schedule of deliveries.")
        evs = [Evidence(f"C{k + 1}", f"doc{i}", k + 1, "combined", float(s), text, 1) for k in range(3)]
        ev_by_doc.append(evs)
        cos_by_doc.append(np.full(3, s, dtype=np.float32) - np.float32([0.0, 0.01, 0.02]))
    stats = LexicalStats(n_docs, Counter({"liability": 8, "capped": 8, "fees": 10, "paid": 10}))
    return ev_by_doc, cos_by_doc, stats


def test_uncertain_band_contains_the_cut():
    calib = DEFAULT_CALIBRATION
    assert uncertain_band(2.0, calib) == (calib.sure_no_z, calib.sure_yes_z)
    lo, hi = uncertain_band(9.0, calib)  # a cut above sure_yes_z: kept documents are never "sure no"
    assert lo == calib.sure_no_z and hi == 9.0
    assert uncertain_band(3.0, calib, "prior") == (3.0, 3.0)  # a small collection has no band
    with pytest.raises(ValueError):
        OfflineCalibration(sure_no_z=5.0, sure_yes_z=1.0)


def test_uncertain_documents_lie_between_the_thresholds():
    ev, cos, stats = _collection()
    decisions, cut = calibrated_document_decisions(CONDITION, ev, cos, DEFAULT_CALIBRATION, stats)
    z = np.array([d.evidence_score for d in decisions])
    unsure = np.array([d.uncertain for d in decisions])
    assert cut.sure_no <= cut.threshold <= cut.sure_yes
    assert 0 < unsure.sum() < len(decisions) and cut.uncertain == unsure.sum()
    # exactly the eligible documents inside the band are uncertain
    inside = (z >= cut.sure_no) & (z < cut.sure_yes) & cut.eligible
    assert np.array_equal(unsure, inside)
    # the decision of an uncertain document is still the cut's: three-way flags change no decision
    plain, _ = calibrated_document_decisions(CONDITION, ev, cos, OfflineCalibration(sure_no_z=-1e9, sure_yes_z=-1e9), stats)
    assert [d.decision for d in decisions] == [d.decision for d in plain]
    assert not any(d.uncertain for d in plain if d.decision)  # a band below every score marks none kept
    assert all("Uncertain" in d.rationale for d in decisions if d.uncertain)
    d = next(d for d in decisions if d.uncertain)
    assert d.to_dict()["uncertain"] is True and cut.to_dict()["uncertain"] == cut.uncertain


def test_run_counts_and_export_show_uncertain_documents():
    from ui.filtering import export_csv, ranked_rows

    ev, cos, stats = _collection()
    decisions, cut = calibrated_document_decisions(CONDITION, ev, cos, DEFAULT_CALIBRATION, stats)
    docs = [DocumentResult(f"doc{i}", f"doc{i}.pdf", {"combined": dec}, {"combined": ev[i]})
            for i, dec in enumerate(decisions)]
    run = FilterRun(CONDITION, "combined", ["combined"], {}, docs, {}, {}, "offline-calibrated", cuts={"combined": cut})
    counts = run.three_way()
    assert counts["uncertain"] == cut.uncertain and sum(counts.values()) == len(docs)
    assert counts["kept"] == sum(d.decision and not d.uncertain for d in decisions)
    out = run.to_dict()
    assert out["three_way"]["combined"] == counts
    norm = out  # the app renders the engine's dict as it is
    rows = list(csv.DictReader(io.StringIO(export_csv({"A": norm}))))
    assert sum(r["uncertain"] == "true" for r in rows) == counts["uncertain"]
    assert {"sure", "uncertain"} <= {r["certainty"] for r in ranked_rows(norm)}
    # an uncertain decision reads "yes?" / "no?" in the kept column, in view in the half-width table
    from ui.filtering import is_kept_cell

    for r in ranked_rows(norm):
        assert r["kept"].endswith("?") == (r["certainty"] == "uncertain"), r
    assert sum(is_kept_cell(r["kept"]) for r in ranked_rows(norm)) == sum(d.decision is True for d in decisions)
    # a decision your review answer made says so
    mine = {**norm, "documents": [{**d, "decisions": {"combined": {**d["decisions"]["combined"], "decided_by": "user"}}}
                                  if i == 0 else d for i, d in enumerate(norm["documents"])]}
    first = next(r for r in ranked_rows(mine) if r["doc_id"] == norm["documents"][0]["doc_id"])
    assert first["kept"] in ("✓ you", "✗ you") and is_kept_cell(first["kept"]) == (first["kept"] == "✓ you")


def test_rows_below_the_similarity_floor_say_so():
    """A document whose passages fail the dense floor ranks after all others even with a
    higher score; its row says why (issue 24: ranks that contradict the score column)."""
    from ui.filtering import floor_ranks_words, ranked_rows

    def doc(doc_id, score, rank, dec):
        return {"doc_id": doc_id, "file": f"{doc_id}.pdf", "evidence": {},
                "decisions": {"combined": {"decision": dec, "rationale": "r", "evidence_score": score, "rank": rank}}}

    raw = {"strategy": "combined", "condition": "c", "backend": "offline-calibrated",
           "cuts": {"combined": {"rule": "best_fraction", "threshold": 3.0, "kept": 1, "of": 3, "best": 9.0,
                                 "eligible": 2}},
           "documents": [doc("d1", -0.2, 3, False), doc("d2", 9.0, 1, True), doc("d3", -0.4, 2, False)]}
    rows = {r["file"]: r for r in ranked_rows(raw)}
    assert rows["d1.pdf"]["certainty"] == "sure: no passage close enough"  # as the count line counts it
    assert rows["d3.pdf"]["certainty"] == "sure" and rows["d2.pdf"]["certainty"] == "sure"
    # the caption under the table names those ranks, since the certainty column lies behind a scroll
    assert floor_ranks_words(ranked_rows(raw)) == "rank 3"
    raw["cuts"]["combined"]["eligible"] = 1
    assert floor_ranks_words(ranked_rows(raw)) == "ranks 2-3"


def test_a_sure_keep_is_on_topic_in_meaning_and_in_words():
    """Absolute relevance (issue 32): a kept document is sure only when its closest passage
    is close in meaning *and* it holds the condition's distinctive words."""
    ev, cos, stats = _collection()
    n = len(ev)
    best = np.array([float(c.max()) for c in cos])
    words = np.where(np.arange(n) % 2 == 0, 1.0, 0.0)  # every other document holds the words
    calib = OfflineCalibration(sure_yes_z=3.0)  # the toy collection's best scores are about 4.5
    plain, _ = calibrated_document_decisions(CONDITION, ev, cos, calib, stats)
    got, cut = calibrated_document_decisions(CONDITION, ev, cos, calib, stats, term_share=words)
    assert [d.decision for d in got] == [d.decision for d in plain]  # many on topic: same keeps
    sure = [i for i, d in enumerate(got) if d.decision and not d.uncertain]
    assert sure and all(words[i] == 1.0 and best[i] >= calib.abs_cos for i in sure)
    # a kept document above sure-yes with the meaning but not the words is uncertain, and says why
    why = [d for i, d in enumerate(got) if d.decision and d.uncertain and words[i] == 0.0
           and d.evidence_score >= cut.sure_yes]
    assert why and all("not both" in d.rationale for d in why)


def test_with_one_document_on_topic_only_it_is_kept():
    """When a single document is about the condition, documents kept only relative to a
    collection that is not about it are dropped as uncertain (issue 32)."""
    ev, cos, stats = _collection()
    n = len(ev)
    low = [np.minimum(c, np.float32(0.45)) for c in cos]  # nothing is close in meaning ...
    share = np.zeros(n)
    share[3] = 1.0  # ... and one document (not the best-scoring one) holds the words
    base, _ = calibrated_document_decisions(CONDITION, ev, low, DEFAULT_CALIBRATION, stats)
    got, cut = calibrated_document_decisions(CONDITION, ev, low, DEFAULT_CALIBRATION, stats, term_share=share)
    assert sum(d.decision for d in base) > 1 and base[3].decision
    assert [i for i, d in enumerate(got) if d.decision] == [3] and cut.kept == 1 and cut.one_on_topic
    assert got[3].uncertain  # the words without the meaning: uncertain
    assert got[3].rank == 1  # the kept document ranks first, the dropped ones after it
    dropped = [d for i, d in enumerate(got) if base[i].decision and i != 3]
    assert dropped and all(d.uncertain and "Only one document of this collection is about the condition" in d.rationale for d in dropped)
    assert not any("similarity floor" in d.rationale for d in dropped)  # they did pass the floor
    # nothing on topic: nothing kept
    none, cut0 = calibrated_document_decisions(CONDITION, ev, low, DEFAULT_CALIBRATION, stats, term_share=np.zeros(n))
    assert not any(d.decision for d in none) and cut0.none_meets and not cut0.one_on_topic


def test_a_lone_document_on_topic_is_kept_uncertain():
    """A document that is the only one on topic, in meaning and in words, is kept but not
    sure: its score compares it with documents not about the condition, and a lone document
    may use the words in another sense (a 10-K's lease notes for "an apartment lease";
    issue 32)."""
    ev, cos, stats = _collection()
    n = len(ev)
    low = [np.minimum(c, np.float32(0.45)) for c in cos]
    low[3] = np.maximum(cos[3], np.float32(0.8))  # only document 3 is close in meaning ...
    share = np.zeros(n)
    share[3] = 1.0  # ... and holds the words
    got, cut = calibrated_document_decisions(CONDITION, ev, low, DEFAULT_CALIBRATION, stats, term_share=share)
    assert cut.one_on_topic and [i for i, d in enumerate(got) if d.decision] == [3]
    assert got[3].uncertain and "only document of this collection about the condition" in got[3].rationale
    assert "not both" not in got[3].rationale
    # with a second document on topic the same document is a sure keep again
    share[5] = 1.0
    low[5] = np.maximum(cos[5], np.float32(0.7))
    two, cut2 = calibrated_document_decisions(CONDITION, ev, low, DEFAULT_CALIBRATION, stats, term_share=share)
    assert not cut2.one_on_topic and two[3].decision and not two[3].uncertain


def test_scores_equal_but_for_float_noise_rank_by_position():
    """Ranks do not depend on the last float32 bits of the cosines (a Ray shard against the
    whole view): scores within 1e-4 z rank by position, eligible documents first."""
    from docmaster_core.filtering.offline import _ranks

    z = np.array([-0.6744911, 2.0, -0.6744905, 5.0, 9.0])
    z2 = np.array([-0.6744909, 2.0, -0.6744906, 5.0, 9.0])  # the same run scored elsewhere
    eligible = np.array([True, True, True, True, False])
    assert _ranks(z, eligible).tolist() == _ranks(z2, eligible).tolist() == [3, 2, 4, 1, 5]


def test_a_rationale_quotes_the_sentence_that_holds_the_conditions_words():
    """The closest passage is quoted by its sentence holding most of the condition's words, not
    by its first 30 words (a newcomer's quote stopped at "The Services Term of this Agreement shall
    be", before "automatically renewed ... unless written notice is given")."""
    from docmaster_core.filtering.offline import readable_rationale
    from docmaster_core.model import Evidence

    text = ("6.1 Term. (a) The Services Term of this Agreement shall begin on the Effective Date and shall be for "
            "an initial period of two years, during which the services described in Exhibit A are provided by "
            "the consultant. The Services Term of this Agreement shall be automatically renewed for successive "
            "two-year terms unless written notice is given by either party.")
    best = Evidence("C1", "d", 3, "combined", 0.6, text, page=3, section_path=["6. Term"])
    why = readable_rationale(False, 1.6, 2.1, 5, 15, [best], best, ["renewed", "notice"], "kept from a score of 2.1")
    # an uncertain decision's support is said against the cut, never "strong" beside "Uncertain: check ..."
    # (a newcomer read "strong support" and "Uncertain" in one note and did not know which to believe)
    sure = readable_rationale(True, 6.0, 2.1, 1, 15, [best], best, ["renewed"], "kept from a score of 2.1")
    unsure = readable_rationale(True, 6.0, 2.1, 1, 15, [best], best, ["renewed"], "kept from a score of 2.1",
                                uncertain=True)
    assert "strong support" in sure and "strong support" not in unsure and "above the cut, but uncertain" in unsure
    assert why.endswith('"The Services Term of this Agreement shall be automatically renewed for successive two-year '
                        'terms unless written notice is given by either party."')
