"""The filter cascade (issue 14): statistics on synthetic scores, and the LLM path end to end.

The statistics run on a synthetic score distribution with known labels. The end-to-end
cases use a small offline workspace (hashing embedder) and the fake OpenAI-compatible
server of ``tests/support/fake_openai_server.py`` with a request counter: the fake model says
yes when the passages mention rivers, and names the document it was asked about by
its code word, so the tests see exactly which documents cost a request.
"""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from docmaster_core import cli
from docmaster_core.config import get_settings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import RetrievalError
from docmaster_core.llm import make_llm
from docmaster_core.pipeline import DocMaster
from docmaster_core.filtering.cascade import (
    CascadeTargets,
    plan_sample,
    precision_cut,
    recall_cut,
    run_cascade,
)

try:
    from support.fake_openai_server import FakeOpenAIServer, documents_in, user_text
    from support.pdf_factory import make_simple_pdf
    from support.toy import ingest_offline
except ImportError:  # tests imported as a package
    from tests.fake_openai_server import FakeOpenAIServer, documents_in, user_text
    from tests.pdf_factory import make_simple_pdf
    from tests.support.toy import ingest_offline

KEY = "sk-cascade-0123456789abcdef"
CONDITION = "The report measures river water quality"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
         "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor"]
RIVER = set(WORDS[:5])  # the matching documents


# ----------------------------------------------------------------------------- statistics
def _synthetic(rng, n: int = 2000, rate: float = 0.1, shift: float = 2.5):
    y = (rng.random(n) < rate).astype(np.float64)
    s = rng.normal(0.0, 1.0, n) + shift * y
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(-s, kind="stable")] = np.arange(1, n + 1)
    return s, rank, y


def test_thresholds_meet_the_targets_on_a_synthetic_distribution():
    """Over many seeds the recall and the precision targets hold in >= 1 - delta of the runs (minus slack
    for the normal approximation), while far fewer than all documents are labelled."""
    rng = np.random.default_rng(11)
    delta, runs = 0.1, 120
    met_r = met_p = 0
    share = []
    for seed in range(runs):
        s, rank, y = _synthetic(rng)
        t = CascadeTargets(recall=0.9, precision=0.9, delta=delta, sample_budget=400, seed=seed)
        asked = []

        def label(idx, y=y, asked=asked):
            asked.extend(idx.tolist())
            return y[idx]

        res = run_cascade(s, rank, 2.0, t, label)
        dec = np.array([bool(x) for x in res.decision])
        tp = (dec & (y == 1)).sum()
        met_r += tp / y.sum() >= 0.9
        met_p += tp / max(dec.sum(), 1) >= 0.9
        assert len(asked) == len(set(asked)) == res.labelled  # nobody asked twice
        share.append(res.labelled / len(y))
    assert met_r / runs >= 1 - delta - 0.05, met_r / runs
    assert met_p / runs >= 1 - delta - 0.05, met_p / runs
    assert np.mean(share) < 0.6


def test_upper_threshold_keeps_a_pure_top_without_calls():
    """Perfectly separated scores: the top is kept and the bottom dropped by score."""
    n = 600
    s = np.linspace(10, -10, n)
    rank = np.arange(1, n + 1)
    y = (np.arange(n) < 100).astype(float)
    res = run_cascade(s, rank, 0.0, CascadeTargets(precision=0.8, sample_budget=300, seed=1), lambda idx: y[idx])
    dec = np.array([bool(x) for x in res.decision])
    tp = (dec & (y == 1)).sum()
    assert tp / y.sum() >= 0.9 and tp / dec.sum() >= 0.8
    assert 0 < res.k_hi <= res.k_lo < n
    assert (res.provenance == "score-above").sum() > 0 and (res.provenance == "score-below").sum() > 0
    rep = res.report()
    assert rep["calls_saved"] == n - res.labelled and rep["by"]["llm"] == res.labelled


def test_no_positive_in_the_sample_labels_everything_and_precision_zero_keeps_nothing():
    n = 50
    s = np.linspace(3, -3, n)
    rank = np.arange(1, n + 1)
    plan = plan_sample(s, rank, 0.0, CascadeTargets(sample_budget=20))
    zeros = np.zeros(plan.draws.size)
    assert recall_cut(plan, zeros, zeros, 0.9, 0.05)[0] == n  # nothing can be dropped on no evidence
    assert precision_cut(plan, np.ones(plan.draws.size), 0.0, 0.05)[0] == 0
    a = plan_sample(s, rank, 0.0, CascadeTargets(sample_budget=20, seed=3))
    b = plan_sample(s, rank, 0.0, CascadeTargets(sample_budget=20, seed=3))
    assert (a.draws == b.draws).all()  # the same seed draws the same sample (re-runs hit the caches)


def test_targets_are_validated():
    for bad in ({"recall": 0.0}, {"precision": 1.5}, {"delta": 1.0}, {"sample_budget": 0}, {"mix": 0.0}):
        with pytest.raises(ValueError):
            CascadeTargets(**bad)


# ----------------------------------------------------------------------------- end to end
def _word(req) -> str | None:
    text = " ".join(inner for _, inner in documents_in(user_text(req)))
    found = [w for w in WORDS if re.search(rf"\bcode {w}\b", text)]
    return found[0] if len(found) == 1 else None


def responder(req):
    text = " ".join(inner for _, inner in documents_in(user_text(req)))
    ids = [a.get("id") for a, _ in documents_in(user_text(req))]
    return json.dumps({"decision": "river" in text.lower(), "rationale": "fake", "evidence_ids": ids[:1]})


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cascade")
    src = d / "in"
    src.mkdir()
    for w in WORDS:
        if w in RIVER:
            text = (f"Report code {w}. We measure river water quality: river samples, water quality indices and "
                    f"river pollution. The river water quality survey ends here.")
        else:
            text = (f"Report code {w}. The compiler unrolls loops and allocates registers; benchmarks of the "
                    f"{w} compiler pass show faster code generation.")
        make_simple_pdf(src / f"{w}.pdf", text)
    return ingest_offline(src, d / "ws")


@pytest.fixture()
def server():
    with FakeOpenAIServer(responder) as s:
        yield s


def _dm(ws: Path, server, **llm) -> DocMaster:
    opts = dict(backend="openai", base_url=server.base_url, api_key=KEY, timeout=5, max_retries=0, max_concurrency=4)
    opts.update(llm)
    st = get_settings(llm=opts, parsing={"parser": "pymupdf"})
    return DocMaster(ws, st, embedder=HashingEmbedder(), llm=make_llm(st.llm, cache_dir=None, seed=0))


@pytest.fixture(autouse=True)
def _fresh_decision_cache():
    from docmaster_core.filtering import run as flt

    flt._DECISION_CACHE.clear()
    yield
    flt._DECISION_CACHE.clear()


TARGETS = CascadeTargets(recall=0.8, precision=0.8, delta=0.2, sample_budget=8, seed=0)


@pytest.mark.slow
def test_documents_decided_by_score_make_no_request_and_a_rerun_makes_none(workspace, server):
    dm = _dm(workspace, server)
    run = dm.filter(CONDITION, decide="combined-only", cascade=TARGETS, save=True)
    decs = {Path(d.file_name).stem: d.decisions["combined"] for d in run.documents}
    asked = {_word(r) for r in server.requests}
    assert None not in asked and server.count == len(asked)  # one request per asked document
    by_llm = {w for w, d in decs.items() if d.decided_by == "llm"}
    by_score = {w for w, d in decs.items() if d.decided_by in ("score-above", "score-below")}
    assert by_score, "the cascade decided nothing by score"
    assert asked == by_llm and not (asked & by_score)
    for w in by_score:
        assert decs[w].tokens == 0 and decs[w].backend == "cascade-score"
        assert "without a call" in decs[w].rationale
    rep = run.cascade["combined"]
    assert rep["llm_decisions"] == len(by_llm) and rep["calls_saved"] == len(decs) - len(by_llm)
    assert rep["by"]["score-below"] + rep["by"]["score-above"] == len(by_score)
    # every river report found; the other strategies keep the offline rule in combined-only mode
    assert {w for w, d in decs.items() if d.decision} == RIVER
    assert all(d.decisions["tree"].decided_by == "offline" for d in run.documents)
    saved = dm.ws.runs("filter")[0]["result"]
    assert saved["cascade"]["combined"]["llm_decisions"] == len(by_llm)
    assert {d["decisions"]["combined"]["decided_by"] for d in saved["documents"]} <= {"llm", "score-above", "score-below"}
    # a re-run costs zero requests and decides the same
    n = server.count
    again = dm.filter(CONDITION, decide="combined-only", cascade=TARGETS, save=False)
    assert server.count == n
    assert again.matches() == run.matches()
    # other targets: only documents never asked cost a request
    dm.filter(CONDITION, decide="combined-only", save=False,
              cascade=CascadeTargets(recall=0.99, precision=0.99, delta=0.05, sample_budget=8, seed=0))
    new = [_word(r) for r in server.requests[n:]]
    assert not (set(new) & asked)


@pytest.mark.slow
def test_budget_stops_cleanly_with_undecided_documents_marked(workspace, server):
    dm = _dm(workspace, server, max_calls=3)
    run = dm.filter(CONDITION, decide="combined-only", cascade=CascadeTargets(sample_budget=12, seed=0), save=False)
    assert server.count <= 3
    und = [d for d in run.documents if d.decision("combined") is None]
    assert und and len(und) == run.cascade["combined"]["undecided"]
    for d in und:
        dec = d.decisions["combined"]
        assert dec.decided_by == "llm" and dec.error and "budget" in dec.error and dec.evidence_ids == []
    # every decided document was decided by a made call or by its score, never guessed
    for d in run.documents:
        dec = d.decisions["combined"]
        if dec.decision is not None and dec.decided_by == "llm":
            assert dec.error is None


def test_cascade_needs_the_llm_decider_and_combined_only_needs_combined(workspace, server):
    dm = _dm(workspace, server)
    with pytest.raises(RetrievalError):
        dm.filter(CONDITION, decider="calibrated", cascade=TARGETS, save=False)
    with pytest.raises(RetrievalError):
        dm.filter(CONDITION, strategy="semantic", strategies=["semantic"], decide="combined-only", save=False)
    assert server.count == 0


def test_cli_cascade_reports_calls_and_thresholds(workspace, server, monkeypatch, capsys):
    monkeypatch.setenv("DOCMASTER_LLM__API_KEY", KEY)
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    rc = cli.main(["filter", CONDITION, "--workspace", str(workspace), "--llm", "openai", "--base-url",
                   server.base_url, "--cascade", "--decide", "combined-only", "--sample-budget", "8",
                   "--recall-target", "0.8", "--precision-target", "0.8", "--delta", "0.2", "--no-save"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    line = [ln for ln in out.out.splitlines() if ln.startswith("cascade combined:")]
    assert line and "LLM decided" in line[0] and "decided by score" in line[0] and "probability >= 0.8" in line[0]
    assert server.count < len(WORDS)
    assert f"LLM requests sent: {server.count} " in out.out


# ----------------------------------------------------------------------------- the oracle
def _oracle_module():
    path = Path(__file__).resolve().parents[1] / "scripts" / "oracle_llm.py"
    spec = importlib.util.spec_from_file_location("oracle_llm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_label_oracle_identifies_documents_and_flips_a_fraction(workspace, tmp_path):
    O = _oracle_module()
    rows = [(CONDITION, f"{w}.pdf", int(w in RIVER)) for w in WORDS]
    O.write_labels(rows, tmp_path / "labels.tsv")
    server = O.serve(workspace, tmp_path / "labels.tsv")
    try:
        dm = _dm(workspace, server)
        run = dm.filter(CONDITION, decide="combined-only", save=False)
        assert server.count == len(WORDS)
        assert {Path(d.file_name).stem for d in run.documents if d.decision("combined")} == RIVER
    finally:
        server.stop()
    labels = {(O.normalize(f"c{i}"), f"f{j}"): 0 for i in range(40) for j in range(50)}
    noisy = O.Oracle(labels, flip=0.1, seed=4)
    share = np.mean([noisy.answer(c, f) for c, f in labels])
    assert 0.07 < share < 0.13
    assert [noisy.answer(c, f) for c, f in labels] == [noisy.answer(c, f) for c, f in labels]


def test_label_oracle_from_public_labels():
    O = _oracle_module()
    eval_dir = Path(__file__).resolve().parents[2] / "shared" / "eval"
    if not (eval_dir / "filter_cases.tsv").exists():
        pytest.skip("public labels not available")
    rows = O.labels_from_eval(eval_dir / "filter_cases.tsv", eval_dir / "filter_conditions.tsv")
    assert rows and all(y in (0, 1) for _, _, y in rows)


def test_per_strategy_cascade_asks_only_about_each_strategys_sample_and_band(workspace, server):
    dm = _dm(workspace, server)
    run = dm.filter(CONDITION, decide="per-strategy", cascade=TARGETS, save=False)  # combined-only is the cascade default
    assert set(run.cascade) == set(run.strategies)
    asked = sum(1 for d in run.documents for s in run.strategies
                if d.decisions[s].decided_by == "llm" and d.evidence[s])
    assert server.count == asked < len(run.documents) * len(run.strategies)
    for s, rep in run.cascade.items():
        assert sum(rep["by"].values()) == len(run.documents)
        assert [x[0] for x in rep["documents_by"]] == [d.doc_id for d in run.documents]


def test_app_configuration_runs_the_cascade(workspace, server):
    """The app's filter form values (cascade, one call per document) reach the engine."""
    filtering = pytest.importorskip("ui.filtering")
    dm = _dm(workspace, server)
    cfg = {**filtering.default_config("A"), "cascade": True, "combined_only": True, "recall_target": 0.8,
           "precision_target": 0.8, "delta": 0.2, "sample_budget": 8}
    run = filtering.run_filter(dm, CONDITION, cfg)
    saved = max(dm.ws.runs("filter"), key=lambda r: r["run_id"])
    assert saved["params"]["app_config"]["cascade"] is True
    assert saved["params"]["cascade"]["sample_budget"] == 8 and saved["params"]["decide"] == "combined-only"
    assert server.count < len(WORDS)
    assert run["documents"]
