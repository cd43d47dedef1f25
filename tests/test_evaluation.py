"""Evaluation built into the product: filter P/R/F1 and benchmark evidence-page recall@k."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from docmaster_core.config import RetrievalSettings
from docmaster_core.errors import RetrievalError
from docmaster_core.evaluation.harness import (
    eval_filter,
    eval_retrieval,
    load_bench,
    load_filter_cases,
    pages_at_k,
    prf,
    ranking_quality,
)
from docmaster_core.retrieval.retriever import Retriever
from docmaster_core.store.workspace import Workspace
from support.toy import TOY_DOCS, add_toy_document, build_toy_workspace

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
BENCH = SHARED / "corpus" / "bench"


def test_prf_conventions():
    t = np.array([1, 1, 0, 0, 1], bool)
    p = np.array([1, 0, 1, 0, 1], bool)
    r = prf(t, p)
    assert (r["tp"], r["fp"], r["fn"]) == (2, 1, 1)
    assert r["precision"] == pytest.approx(2 / 3) and r["recall"] == pytest.approx(2 / 3)
    assert r["f1"] == pytest.approx(2 / 3)
    assert prf(np.zeros(4, bool), np.zeros(4, bool))["f1"] == 1.0  # nothing to find, nothing claimed
    assert prf(np.zeros(4, bool), np.array([1, 0, 0, 0], bool))["f1"] == 0.0
    assert prf(np.array([1, 0], bool), np.zeros(2, bool))["recall"] == 0.0


def test_keep_all_baseline_and_prevalence_bands():
    from docmaster_core.evaluation.harness import keep_all_baseline, keep_all_f1, prevalence_bands

    assert keep_all_f1(100, 50) == pytest.approx(2 * 0.5 / 1.5)
    assert keep_all_f1(10, 0) == 0.0
    conds = {"rare": {"n": 100, "positives": 2, "combined": {"f1": 0.8}},
             "mid": {"n": 100, "positives": 20, "combined": {"f1": 0.6}},
             "common": {"n": 100, "positives": 70, "combined": {"f1": 0.9}}}
    base = keep_all_baseline(conds)
    assert base["per_condition"]["common"] == pytest.approx(2 * 0.7 / 1.7)
    assert base["macro_f1"] == pytest.approx(np.mean([keep_all_f1(100, k) for k in (2, 20, 70)]))
    bands = prevalence_bands(conds, ["combined"])
    assert [b["conditions"] for b in bands.values()] == [["rare"], ["mid"], ["common"]]
    assert bands[">30%"]["combined"] == 0.9 and bands["<10%"]["keep_all"] == pytest.approx(2 * 0.02 / 1.02)


def test_ranking_quality_by_hand():
    y = np.array([1, 0, 1, 0, 0], bool)
    # ranking by score: pos, neg, pos, neg, neg -> AP = (1/1 + 2/3) / 2; best cut after rank 3: F1 = 2*2/(3+2)
    r = ranking_quality(y, np.array([0.9, 0.8, 0.7, 0.1, 0.0]))
    assert r["ap"] == pytest.approx((1 + 2 / 3) / 2)
    assert r["best_f1"] == pytest.approx(0.8)
    perfect = ranking_quality(y, np.array([0.9, 0.1, 0.8, 0.2, 0.0]))
    assert perfect == {"ap": 1.0, "best_f1": 1.0}
    # ties are broken against the decider: all-equal scores give AP = base rate-ish, not 1
    assert ranking_quality(y, np.zeros(5))["ap"] < 0.5
    assert ranking_quality(np.zeros(3, bool), np.arange(3.0)) == {"ap": 1.0, "best_f1": 1.0}


def test_pages_at_k():
    assert pages_at_k([3, 3, 1, 3, 7, 2], 3) == [3, 1, 7]
    assert pages_at_k([5], 3) == [5]


def test_load_filter_cases_inline_and_with_conditions(tmp_path):
    cases = tmp_path / "cases.tsv"
    cases.write_text("file\tcondition\tlabel\tpage\na.pdf\tC1\t1\t3\nb.pdf\tC1\t0\t\n")
    conds = tmp_path / "conds.tsv"
    conds.write_text("condition\ttext\nC1\tDoes it  rain?\nC2\tunused\n")
    cs, texts = load_filter_cases(cases, conds)
    assert [(c.file, c.condition, c.label) for c in cs] == [("a.pdf", "C1", 1), ("b.pdf", "C1", 0)]
    assert texts == {"C1": "Does it rain?"}
    inline = tmp_path / "inline.tsv"
    inline.write_text("file\tcondition\tlabel\na.pdf\tIs it about cats?\t1\n")
    cs, texts = load_filter_cases(inline)
    assert texts == {"Is it about cats?": "Is it about cats?"}
    bad = tmp_path / "bad.tsv"
    bad.write_text("file\tcondition\tlabel\na.pdf\tC1\tyes\n")
    with pytest.raises(RetrievalError, match="label must be 0 or 1"):
        load_filter_cases(bad, conds)
    (tmp_path / "c2.tsv").write_text("condition\ttext\nC9\tx\n")
    with pytest.raises(RetrievalError, match="no text"):
        load_filter_cases(cases, tmp_path / "c2.tsv")
    with pytest.raises(RetrievalError, match="cannot read"):
        load_filter_cases(tmp_path / "missing.tsv")
    # ids without the conditions file would be evaluated as the texts "C1": refused, not measured
    with pytest.raises(RetrievalError, match="is an id.*--conditions"):
        load_filter_cases(cases)


@pytest.mark.skipif(not (SHARED / "eval" / "filter_cases.tsv").exists(), reason="../shared/eval not available")
def test_public_filter_cases_load():
    cs, texts = load_filter_cases(SHARED / "eval" / "filter_cases.tsv", SHARED / "eval" / "filter_conditions.tsv")
    assert len(texts) == 12 and texts["P6"].startswith("Does the paper report experimental results on the ImageNet")
    assert len({c.file for c in cs}) == 88
    assert sum(c.label for c in cs if c.condition == "P11") == 2


@pytest.mark.slow
def test_eval_filter_on_toy_collection(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "w", embedder)
    rows = ["file\tcondition\tlabel"]
    truth = {"I": "cnn_imagenet.pdf", "A": "coffee_manual.pdf", "F": "fact_check.pdf"}
    for f, _, _ in TOY_DOCS:
        for key, pos in truth.items():
            rows.append(f"{f}\t{key}\t{int(f == pos)}")
    rows.append("not_in_workspace.pdf\tI\t0")
    (tmp_path / "cases.tsv").write_text("\n".join(rows) + "\n")
    (tmp_path / "conds.tsv").write_text(
        "condition\ttext\n"
        "I\tDoes the paper report experimental results on the ImageNet dataset?\n"
        "A\tDoes the document give operating, cleaning or safety instructions for a household appliance?\n"
        "F\tDoes the paper address fact-checking or claim verification?\n")
    cases, texts = load_filter_cases(tmp_path / "cases.tsv", tmp_path / "conds.tsv")
    res = eval_filter(ws, embedder, None, RetrievalSettings(), cases, texts,
                      retriever=Retriever(ws, embedder, RetrievalSettings()))
    assert res["missing_files"] == ["not_in_workspace.pdf"]
    assert set(res["conditions"]) == {"I", "A", "F"}
    assert res["halves"] == {"A": ["I", "F"], "B": ["A"]}
    for key, c in res["conditions"].items():
        assert c["n"] == len(TOY_DOCS) and c["positives"] == 1
        for s in res["strategies"]:
            assert 0.0 <= c[s]["f1"] <= 1.0
    assert res["macro"]["combined"]["recall"] == 1.0
    assert res["macro"]["combined"]["f1"] >= 0.8
    # the oracle threshold can only do better than the decider's own rule
    assert res["macro"]["combined"]["best_f1"] >= res["macro"]["combined"]["f1"] - 1e-9
    assert 0.0 < res["macro"]["combined"]["ap"] <= 1.0
    assert res["latency"]["embed_retrieve_mean"] > 0
    assert ws.runs("eval")[0]["run_id"] == res["run_id"]


@pytest.mark.skipif(not BENCH.exists(), reason="../shared/corpus/bench not available")
def test_load_real_benchmarks_and_page_numbering():
    mm = load_bench("mmlongbench", BENCH)
    assert all(q.pages and min(q.pages) >= 1 for q in mm)
    raw = json.loads((BENCH / "mmlongbench_doc" / "samples.json").read_text())
    answerable = [s for s in raw if s["answer"] != "Not answerable" and [p for p in json.loads(s["evidence_pages"]) if p >= 1]]
    assert len(mm) == len(answerable)
    assert len(answerable) < sum(s["answer"] != "Not answerable" and bool(json.loads(s["evidence_pages"])) for s in raw)
    fb = load_bench("financebench", BENCH)
    first = json.loads((BENCH / "financebench" / "financebench_open_source.jsonl").read_text().splitlines()[0])
    q = next(x for x in fb if x.qid == first["financebench_id"])
    assert q.pages == {e["evidence_page_num"] + 1 for e in first["evidence"]}  # 0-based -> 1-based
    assert q.file == first["doc_name"] + ".pdf"
    with pytest.raises(RetrievalError):
        load_bench("nope", BENCH)
    from docmaster_core.evaluation.harness import included_files

    assert len(included_files("mmlongbench", BENCH)) == 18 and len(included_files("financebench", BENCH)) == 25
    on_shipped = [q for q in mm if q.file in included_files("mmlongbench", BENCH)]
    assert len(on_shipped) == 103  # 104 answerable questions on the 18 shipped PDFs, one with page "0"


@pytest.mark.slow
@pytest.mark.skipif(not BENCH.exists(), reason="../shared/corpus/bench not available")
def test_eval_retrieval_recall_on_a_bench_question(tmp_path, embedder):
    """A document named like a FinanceBench PDF: its gold page holds the real evidence text,
    the other pages unrelated paragraphs."""
    fb = [json.loads(x) for x in (BENCH / "financebench" / "financebench_open_source.jsonl").read_text().splitlines() if x.strip()]
    shipped = {p.name for p in (BENCH / "financebench" / "pdfs").glob("*.pdf")}
    item = next(x for x in fb if x["doc_name"] + ".pdf" in shipped)  # only the benchmark's own PDFs count
    gold = item["evidence"][0]
    gold_page = gold["evidence_page_num"] + 1
    filler = [p for _, _, secs in TOY_DOCS for _, ps in secs for p in ps if "IGNORE" not in p and "$" not in p]
    other = [filler[i % len(filler)] for i in range(gold_page + 2)]
    sections = []
    for p in range(1, gold_page + 3):
        text = gold["evidence_text"] if p == gold_page else other[p - 1]
        sections.append((None, [text[:1200]]))  # one passage per page, no headings
    ws = Workspace(tmp_path / "w")
    add_toy_document(ws, embedder, item["doc_name"] + ".pdf", item["company"], sections)
    res = eval_retrieval(ws, embedder, RetrievalSettings(), "financebench", k=1, root=BENCH,
                         strategies=["semantic", "combined", "flat"])
    n = sum(1 for x in fb if x["doc_name"] == item["doc_name"])
    assert res["questions"] == n and res["documents"] == 1
    row = next(r for r in res["per_question"] if r["qid"] == item["financebench_id"])
    assert row["gold"] == sorted({e["evidence_page_num"] + 1 for e in item["evidence"]})
    assert row["semantic"] == [gold_page] and row["combined"] == [gold_page]
    assert 0.0 <= res["recall"]["flat"] <= 1.0
    with pytest.raises(RetrievalError):
        eval_retrieval(Workspace(tmp_path / "empty"), embedder, RetrievalSettings(), "mmlongbench", root=BENCH)


@pytest.mark.slow
def test_cli_eval_filter(tmp_path, embedder, capsys):
    from docmaster_core.cli import main

    ws = build_toy_workspace(tmp_path / "w", embedder, TOY_DOCS)
    rows = ["file\tcondition\tlabel"] + [
        f"{f}\tDoes the paper address fact-checking or claim verification?\t{int(f == 'fact_check.pdf')}" for f, _, _ in TOY_DOCS]
    (tmp_path / "cases.tsv").write_text("\n".join(rows) + "\n")
    assert main(["eval", "filter", "--workspace", str(ws.path), "--cases", str(tmp_path / "cases.tsv"),
                 "--strategy", "combined", "flat", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategies"] == ["combined", "flat"] and len(out["conditions"]) == 1
    # one match among the toy documents: keeping all of them scores 2p / (1 + p)
    p = 1 / len(TOY_DOCS)
    assert out["keep_all"]["macro_f1"] == pytest.approx(2 * p / (1 + p))
    (band,) = out["bands"].values()
    assert band["keep_all"] == pytest.approx(2 * p / (1 + p)) and set(band) >= {"combined", "flat", "conditions"}
    assert main(["eval", "filter", "--workspace", str(ws.path), "--cases", str(tmp_path / "cases.tsv"),
                 "--strategy", "combined"]) == 0
    assert "keep everything" in capsys.readouterr().out
    assert main(["eval", "filter", "--workspace", str(ws.path)]) == 2
    assert main(["eval", "retrieval", "--workspace", str(ws.path)]) == 2


@pytest.mark.slow
def test_calibrate_filter_reports_both_halves(tmp_path, embedder):
    from docmaster_core.evaluation.harness import calibrate_filter

    ws = build_toy_workspace(tmp_path / "w", embedder)
    truth = {"I": "cnn_imagenet.pdf", "A": "coffee_manual.pdf", "F": "fact_check.pdf", "R": "rl_agent.pdf"}
    texts = {"I": "Does the paper report experimental results on the ImageNet dataset?",
             "A": "Does the document give operating, cleaning or safety instructions for a household appliance?",
             "F": "Does the paper address fact-checking or claim verification?",
             "R": "Does the paper train a model with reinforcement learning?"}
    from docmaster_core.evaluation.harness import FilterCase

    cases = [FilterCase(f, k, int(f == pos)) for f, _, _ in TOY_DOCS for k, pos in truth.items()]
    res = calibrate_filter(ws, embedder, RetrievalSettings(), cases, texts, calibrate_on=["I", "F"],
                           strategies=["combined", "flat"], grid={"rel_rho": [0.5, 0.6, 1.0]})
    assert res["calibrate_on"] == ["I", "F"] and res["held_out"] == ["A", "R"]
    # keeping only documents as strong as the best one (rho 1) cannot beat half of it here
    assert res["grid_points"] == 3 and res["best"]["rel_rho"] in (0.5, 0.6)
    assert res["f1"]["combined"]["calibration"] > 0.5
    assert set(res["per_condition"]) == set(texts)
    with pytest.raises(RetrievalError):
        calibrate_filter(ws, embedder, RetrievalSettings(), cases, texts, calibrate_on=["nope"])
    with pytest.raises(RetrievalError, match="unknown calibration parameter"):
        calibrate_filter(ws, embedder, RetrievalSettings(), cases, texts, calibrate_on=["I"], grid={"zz": [1]})
