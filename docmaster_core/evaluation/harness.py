"""Evaluation built into the product: filter P/R/F1 and evidence-page recall@k.

Filter evaluation (``docmaster eval filter``): labelled cases ``file, condition, label``
(TSV with a header; ``label`` 1 = the document satisfies the condition) and condition
texts either from a second TSV ``condition<TAB>text`` or inline (the ``condition``
column holds the text). Every condition is filtered over the whole workspace once,
all strategies decided; each strategy's decisions on the labelled documents give
precision, recall and F1 per condition, and their macro average over conditions (the
headline figure of ``../shared/eval/README.md``). Conventions: a condition with no
positive label and no predicted positive scores P = R = F1 = 1; an undecided document
(``decision=None``) counts as a negative prediction and is reported. The conditions are
also split into two halves by position (1st, 3rd, ... = half A; 2nd, 4th, ... = half B)
so a threshold chosen on one half can be reported on the other.

Retrieval evaluation (``docmaster eval retrieval``): for each answerable benchmark
question whose PDF is in the workspace, each strategy ranks the nodes (or chunks) of
that document; walking the ranking, the first ``k`` distinct pages are the prediction
and ``recall@k = |predicted & gold| / |gold|`` is averaged over questions (Doc-Researcher
Sec. 5, page-level recall@k). Page numbering: MMLongBench-Doc ``evidence_pages`` are
1-based, FinanceBench ``evidence_page_num`` 0-based (converted to 1-based here), per
``../shared/corpus/bench/README.md``.
"""
from __future__ import annotations

import ast
import csv
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..config import RetrievalSettings
from ..errors import RetrievalError, WorkspaceError
from ..protocols import LLM, Embedder, RunStore
from ..retrieval.combine import STRATEGIES
from .loco import RankedCondition, loco_f1
from ..retrieval.retriever import Retriever

__all__ = [
    "FilterCase",
    "BenchQuestion",
    "load_filter_cases",
    "prf",
    "eval_filter",
    "calibrate_filter",
    "default_bench_dir",
    "load_bench",
    "pages_at_k",
    "included_files",
    "eval_retrieval",
]

EVAL_STRATEGIES = ("tree", "semantic", "hyperedge", "combined", "flat")


@dataclass
class FilterCase:
    """One labelled (document, condition) cell."""

    file: str
    condition: str
    label: int


@dataclass
class BenchQuestion:
    """One benchmark question with its gold evidence pages (1-based)."""

    qid: str
    file: str
    question: str
    pages: set[int]
    answer: str = ""


def _read_tsv(path: str | os.PathLike) -> list[dict[str, str]]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f, delimiter="\t"))
    except OSError as e:
        raise RetrievalError(f"cannot read {path}: {e.strerror or e}") from e


#: a condition column value written like an id ("V4", "P12", "q_3"), not a condition's text
_CONDITION_ID = re.compile(r"[A-Za-z_]{0,8}[-_]?\d+")


def load_filter_cases(cases_path: str | os.PathLike, conditions_path: str | os.PathLike | None = None
                      ) -> tuple[list[FilterCase], dict[str, str]]:
    """Read labelled filter cases and the condition texts.

    Args:
        cases_path: TSV with columns ``file, condition, label`` (others ignored).
        conditions_path: TSV ``condition<TAB>text``; when None the ``condition`` column
            is the condition text itself (then a value written like an id, "V4" or "P12",
            is refused: evaluating the id as a condition would measure nothing).

    Returns:
        ``(cases, texts)`` with ``texts[condition_key] = condition text`` in file order.

    Raises:
        RetrievalError: missing columns, a label that is not 0/1, a condition id
            with no text, or no ``conditions_path`` while the ``condition`` column holds ids.
    """
    rows = _read_tsv(cases_path)
    if rows and not {"file", "condition", "label"} <= set(rows[0]):
        raise RetrievalError(f"{cases_path}: needs the columns file, condition, label")
    texts: dict[str, str] = {}
    if conditions_path is not None:
        for r in _read_tsv(conditions_path):
            key = r.get("condition") or r.get("id")
            text = r.get("text")
            if not key or text is None:
                raise RetrievalError(f"{conditions_path}: needs the columns condition, text")
            texts[key.strip()] = " ".join(text.split())
    cases = []
    inline: dict[str, str] = {}
    for i, r in enumerate(rows, 2):
        lab = (r.get("label") or "").strip()
        if lab not in ("0", "1"):
            raise RetrievalError(f"{cases_path}:{i}: label must be 0 or 1, got {lab!r}")
        c = (r["condition"] or "").strip()
        if conditions_path is None:
            if _CONDITION_ID.fullmatch(c):
                raise RetrievalError(f"{cases_path}:{i}: condition {c!r} is an id, not a condition's text: "
                                     "give the conditions file too (--conditions FILE)")
            inline.setdefault(c, " ".join(c.split()))
        elif c not in texts:
            raise RetrievalError(f"{cases_path}:{i}: condition {c!r} has no text in {conditions_path}")
        cases.append(FilterCase(r["file"].strip(), c, int(lab)))
    if conditions_path is None:
        texts = inline
    else:
        used = {c.condition for c in cases}
        texts = {k: v for k, v in texts.items() if k in used}
    return cases, texts


def prf(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 of boolean predictions.

    Args:
        y_true, y_pred: bool arrays of the same shape (n,).

    Returns:
        ``{"precision", "recall", "f1", "tp", "fp", "fn", "n"}``; with no positive label
        and no positive prediction all three scores are 1.
    """
    t = np.asarray(y_true, dtype=bool)
    p = np.asarray(y_pred, dtype=bool)
    tp = int((t & p).sum())
    fp = int((~t & p).sum())
    fn = int((t & ~p).sum())
    if tp + fp + fn == 0:
        pr = rc = f1 = 1.0
    else:
        pr = tp / (tp + fp) if tp + fp else 0.0
        rc = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * pr * rc / (pr + rc) if pr + rc else 0.0
    return {"precision": pr, "recall": rc, "f1": f1, "tp": tp, "fp": fp, "fn": fn, "n": int(t.size)}


def ranking_quality(y_true: np.ndarray, score: np.ndarray) -> dict[str, float]:
    """How well a decider's score ranks the documents, whatever its threshold.

    Args:
        y_true: bool (n,) labels.
        score: float (n,) decider scores (:attr:`Decision.score`; higher = more likely).

    Returns:
        ``{"ap": average precision (mean precision at the rank of each positive, ties
        broken pessimistically), "best_f1": the F1 of the best threshold on this score
        (an oracle: it is chosen with the labels, so it bounds what any threshold rule on
        this score can reach)}``; both 1.0 when there is no positive label.
    """
    y = np.asarray(y_true, dtype=bool)
    s = np.asarray(score, dtype=np.float64)
    if not y.any():
        return {"ap": 1.0, "best_f1": 1.0}
    order = np.lexsort((y, -s))  # descending score; among ties negatives first (pessimistic)
    ys = y[order]
    tp = np.cumsum(ys)
    k = np.arange(1, ys.size + 1)
    ap = float(np.sum((tp / k)[ys]) / ys.sum())
    best = float(np.max(2.0 * tp / (k + ys.sum())))
    return {"ap": ap, "best_f1": best}


def _ranking_score(d) -> float:
    """A decision's ranking score: the offline evidence score, else its confidence."""
    if d is None or d.decided_by == "not-a-candidate":  # not scored: ranks after every scored document
        return float("-inf")
    return float(d.evidence_score) if d.evidence_score is not None else float(d.score)


def _doc_map(ws, files: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    m, missing = {}, []
    for f in sorted(set(files)):
        try:
            m[f] = ws.document(f).doc_id
        except WorkspaceError:
            missing.append(f)
    return m, missing


#: Prevalence bands of a condition (share of the labelled documents that meet it):
#: ``(name, low, high)``, low inclusive, high exclusive.
PREVALENCE_BANDS = (("<10%", 0.0, 0.10), ("10-30%", 0.10, 0.30), (">30%", 0.30, 1.01))


def keep_all_f1(n: int, positives: int) -> float:
    """F1 of keeping every one of ``n`` labelled documents when ``positives`` meet the
    condition: precision = prevalence p, recall = 1, so F1 = 2p / (1 + p); 0.0 when no
    document meets it (every kept document is a false positive)."""
    if positives == 0:
        return 0.0
    p = positives / max(n, 1)
    return 2.0 * p / (1.0 + p)


def keep_all_baseline(conditions: dict[str, Any]) -> dict[str, Any]:
    """The keep-everything baseline of :func:`eval_filter`'s conditions: ``{"macro_f1",
    "per_condition": {key: F1}}``; a decision rule below it is worse than no filter."""
    per = {k: keep_all_f1(c["n"], c["positives"]) for k, c in conditions.items()}
    return {"macro_f1": float(np.mean(list(per.values()))) if per else 0.0, "per_condition": per}


def prevalence_bands(conditions: dict[str, Any], strategies: Sequence[str]) -> dict[str, Any]:
    """Macro-F1 per prevalence band (:data:`PREVALENCE_BANDS`) for each strategy and the
    keep-everything baseline: ``{band: {"conditions": [keys], strategy: F1, "keep_all": F1}}``
    (bands with no condition are left out)."""
    out: dict[str, Any] = {}
    for name, lo, hi in PREVALENCE_BANDS:
        ks = [k for k, c in conditions.items() if lo <= c["positives"] / max(c["n"], 1) < hi]
        if not ks:
            continue
        band: dict[str, Any] = {"conditions": ks}
        for s in strategies:
            band[s] = float(np.mean([conditions[k][s]["f1"] for k in ks]))
        band["keep_all"] = float(np.mean([keep_all_f1(conditions[k]["n"], conditions[k]["positives"]) for k in ks]))
        out[name] = band
    return out


def eval_filter(ws: RunStore, embedder: Embedder, llm: LLM | None, settings: RetrievalSettings, cases: Sequence[FilterCase], texts: dict[str, str], *,
                strategies: Sequence[str] = EVAL_STRATEGIES, top_k: int | None = None, decider: str = "auto",
                calibration=None, load_index=None, index_key: object = None, retriever: Retriever | None = None,
                save: bool = True) -> dict[str, Any]:
    """Precision/recall/F1 per condition and macro-averaged, per strategy.

    Args:
        ws, embedder, llm, settings: As for :func:`~docmaster_core.filtering.run.run_filter`.
        cases: Labelled cells (:func:`load_filter_cases`).
        texts: Condition key -> text.
        strategies: Strategies evaluated.
        top_k, decider, calibration, load_index, index_key, retriever: Passed to the filter.
        save: Save the evaluation as a run (kind ``"eval"``).

    Returns:
        ``{"strategies", "conditions": {key: {"text", "n", "positives", strategy: prf}},
        "macro": {strategy: {precision, recall, f1, ap, best_f1, uncertain_share,
        f1_uncertain_kept, f1_uncertain_dropped}}`` (the last three: three-way decisions,
        the uncertain documents counted as kept and as dropped), ``"macro_half": {"A"|"B": {strategy: f1}},
        "halves": {"A": [...], "B": [...]}, "keep_all": the keep-everything baseline
        (:func:`keep_all_baseline`), "bands": macro-F1 per prevalence band
        (:func:`prevalence_bands`), "loco": leave-one-condition-out F1 and cut gaps
        (:func:`~docmaster_core.evaluation.loco.loco_f1`; None for one condition),
        "missing_files": [...], "undecided": n,
        "latency": {"embed_retrieve_mean", "embed_retrieve_max", "decide_mean"} (seconds)}``.

    Raises:
        RetrievalError: no labelled file is in the workspace.
    """
    from ..filtering.options import FilterOptions
    from ..filtering.run import run_filter

    bad = [s for s in strategies if s not in STRATEGIES]
    if bad:
        raise RetrievalError(f"unknown strategy {bad[0]!r}")
    dmap, missing = _doc_map(ws, [c.file for c in cases])
    if not dmap:
        raise RetrievalError("none of the labelled files is in the workspace")
    retr = retriever or Retriever(ws, embedder, settings, load_index=load_index, index_key=index_key)
    strats = list(strategies)
    primary = "combined" if "combined" in strats else strats[0]
    out_c: dict[str, Any] = {}
    ranked: list[RankedCondition] = []
    lat_r, lat_d = [], []
    undecided = 0
    for key, text in texts.items():
        cc = [c for c in cases if c.condition == key and c.file in dmap]
        if not cc:
            continue
        opts = FilterOptions(strategy=primary, strategies=tuple(strats), top_k=top_k, decider=decider,
                             calibration=calibration, save=False, answers=False)
        run = run_filter(ws, embedder, llm, settings, text, opts, retriever=retr)
        lat_r.append(run.timings["embed_retrieve"])
        lat_d.append(run.timings["decide"])
        by_doc = {d.doc_id: d for d in run.documents}
        pos = {d.doc_id: i for i, d in enumerate(run.documents)}
        y = np.array([c.label == 1 for c in cc])
        entry: dict[str, Any] = {"text": text, "n": len(cc), "positives": int(y.sum())}
        zs, elig = {}, {}
        for s in strats:
            dec = [by_doc[dmap[c.file]].decision(s) for c in cc]
            undecided += sum(d is None for d in dec)
            pred = np.array([d is True for d in dec])
            entry[s] = prf(y, pred)
            entry[s]["predicted"] = [c.file for c, p in zip(cc, pred) if p]
            # three-way decisions: F1 with the uncertain documents all kept / all dropped
            unc = np.array([bool(getattr(by_doc[dmap[c.file]].decisions.get(s), "uncertain", False)) for c in cc])
            entry[s]["uncertain_share"] = float(unc.mean()) if unc.size else 0.0
            entry[s]["f1_uncertain_kept"] = prf(y, pred | unc)["f1"]
            entry[s]["f1_uncertain_dropped"] = prf(y, pred & ~unc)["f1"]
            zs[s] = np.array([_ranking_score(d.decisions.get(s)) for d in run.documents])
            cut = run.cuts.get(s)
            elig[s] = cut.eligible if cut is not None and cut.eligible is not None else np.ones(zs[s].size, bool)
            rows = np.array([pos[dmap[c.file]] for c in cc], dtype=np.int64)
            entry[s].update(ranking_quality(y, zs[s][rows]))
            if cut is not None:
                entry[s]["cut"] = cut.to_dict()
        ranked.append(RankedCondition(key, y, zs, elig, np.array([pos[dmap[c.file]] for c in cc], dtype=np.int64)))
        out_c[key] = entry
    keys = list(out_c)
    halves = {"A": keys[0::2], "B": keys[1::2]}

    metrics = ("precision", "recall", "f1", "ap", "best_f1", "uncertain_share", "f1_uncertain_kept", "f1_uncertain_dropped")

    def macro(ks: Sequence[str], s: str) -> dict[str, float]:
        return {m: float(np.mean([out_c[k][s][m] for k in ks])) if ks else 0.0 for m in metrics}

    res = {
        "strategies": strats,
        "decider": decider,
        "conditions": out_c,
        "macro": {s: macro(keys, s) for s in strats},
        "keep_all": keep_all_baseline(out_c),
        "bands": prevalence_bands(out_c, strats),
        "macro_half": {h: {s: macro(ks, s)["f1"] for s in strats} for h, ks in halves.items()},
        "halves": halves,
        "loco": loco_f1(ranked, strats) if len(ranked) >= 2 else None,
        "missing_files": missing,
        "undecided": undecided,
        "latency": {
            "embed_retrieve_mean": float(np.mean(lat_r)) if lat_r else 0.0,
            "embed_retrieve_max": float(np.max(lat_r)) if lat_r else 0.0,
            "decide_mean": float(np.mean(lat_d)) if lat_d else 0.0,
        },
    }
    if save:
        res["run_id"] = ws.save_run("eval", {"kind": "filter", "strategies": strats, "top_k": top_k,
                                             "decider": decider, "conditions": len(keys)}, res)
    return res


def calibrate_filter(ws: RunStore, embedder: Embedder, settings: RetrievalSettings, cases: Sequence[FilterCase], texts: dict[str, str], *,
                     calibrate_on: Sequence[str], strategies: Sequence[str] = EVAL_STRATEGIES, top_k: int | None = None,
                     grid: dict[str, Sequence[float]] | None = None, retriever: Retriever | None = None) -> dict[str, Any]:
    """Choose the offline decision rule's parameters on some conditions, report all.

    Retrieval runs once per condition; every parameter combination of ``grid`` is then
    applied to the stored evidence with the offline decider of the filter
    (:func:`~docmaster_core.filtering.run.offline_decisions`: one rule for all
    strategies, as it is one decider). The chosen setting maximises the mean macro-F1
    over ``strategies`` on the ``calibrate_on`` conditions; ties go to the earlier grid
    point. (``docmaster eval filter`` reports the stricter leave-one-condition-out
    figure for the cut parameters.)

    Args:
        calibrate_on: Condition keys used for the choice (e.g. half A).
        grid: ``{parameter of OfflineCalibration: values}``; default: ``rel_rho``
            0.3-0.7 step 0.05 and ``rel_z_min`` 0.5, 1, 1.5, 2 (the best-fraction cut).

    Returns:
        ``{"best": params, "calibrate_on": [...], "held_out": [...], "f1": {strategy:
        {"calibration": F1, "held_out": F1, "all": F1}}, "per_condition": {key: {strategy: F1}},
        "grid_points": n}``.

    Raises:
        RetrievalError: no labelled file in the workspace, an unknown condition key, or
            an unknown parameter in ``grid``.
    """
    import itertools
    from dataclasses import replace

    from ..filtering.decider import DEFAULT_CALIBRATION
    from ..filtering.run import collect_evidence, offline_decisions
    from .loco import DEFAULT_GRID

    unknown = [c for c in calibrate_on if c not in texts]
    if unknown:
        raise RetrievalError(f"unknown condition {unknown[0]!r}")
    grid = grid or DEFAULT_GRID
    bad = [n for n in grid if n not in DEFAULT_CALIBRATION.__dataclass_fields__]
    if bad:
        raise RetrievalError(f"unknown calibration parameter {bad[0]!r}")
    dmap, _ = _doc_map(ws, [c.file for c in cases])
    if not dmap:
        raise RetrievalError("none of the labelled files is in the workspace")
    retr = retriever or Retriever(ws, embedder, settings)
    view = retr.view
    k = top_k or settings.top_k
    stored = {}
    for key, text in texts.items():
        cc = [c for c in cases if c.condition == key and c.file in dmap]
        if cc:
            docs, cos_by = collect_evidence(retr, text, strategies, k, view=view)
            idx = {d.doc_id: i for i, d in enumerate(docs)}
            stored[key] = (text, docs, cos_by, [idx[dmap[c.file]] for c in cc], np.array([c.label == 1 for c in cc]))
    names = list(grid)
    table = []
    for values in itertools.product(*(grid[n] for n in names)):
        calib = replace(DEFAULT_CALIBRATION, **{n: (int(v) if n == "top_m" else v) for n, v in zip(names, values)})
        per = {}
        for key, (text, docs, cos_by, rows, y) in stored.items():
            decs, _ = offline_decisions(retr, view, text, docs, cos_by, strategies, calib)
            per[key] = {s: prf(y, np.array([decs[s][r].decision is True for r in rows]))["f1"] for s in strategies}
        cal = [k_ for k_ in per if k_ in calibrate_on]
        score = float(np.mean([per[k_][s] for k_ in cal for s in strategies])) if cal else 0.0
        table.append((score, calib, per))
    best_i = int(np.argmax([t[0] for t in table]))
    _, calib, per = table[best_i]
    held = [k_ for k_ in per if k_ not in calibrate_on]
    cal = [k_ for k_ in per if k_ in calibrate_on]

    def mean(ks, s):
        return float(np.mean([per[k_][s] for k_ in ks])) if ks else 0.0

    return {
        "best": calib.to_dict(),
        "calibrate_on": cal,
        "held_out": held,
        "f1": {s: {"calibration": mean(cal, s), "held_out": mean(held, s), "all": mean(list(per), s)} for s in strategies},
        "per_condition": per,
        "grid_points": len(table),
    }


# ---------------------------------------------------------------------------- benchmarks
def default_bench_dir() -> Path:
    """``settings.bench_dir`` (env ``DOCMASTER_BENCH_DIR``), else ``../shared/corpus/bench``
    beside the repository."""
    from ..config import get_settings

    env = get_settings().bench_dir
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "bench"


def _parse_list(s: Any) -> list:
    if isinstance(s, list):
        return s
    try:
        v = ast.literal_eval(str(s))
    except (ValueError, SyntaxError):
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def load_bench(bench: str, root: str | os.PathLike | None = None) -> list[BenchQuestion]:
    """Answerable questions of a benchmark with 1-based gold pages.

    Args:
        bench: ``mmlongbench`` or ``financebench``.
        root: The ``bench`` folder (default :func:`default_bench_dir`).

    Raises:
        RetrievalError: unknown benchmark or missing label file.
    """
    root = Path(root) if root is not None else default_bench_dir()
    out: list[BenchQuestion] = []
    if bench == "mmlongbench":
        p = root / "mmlongbench_doc" / "samples.json"
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise RetrievalError(f"cannot read {p}: {e}") from e
        for i, s in enumerate(data):
            if str(s.get("answer", "")).strip() == "Not answerable":
                continue
            # 1-based; a 0 (3 questions of the file) is not a valid page and is dropped
            pages = {int(x) for x in _parse_list(s.get("evidence_pages")) if str(x).isdigit() and int(x) >= 1}
            if not pages:
                continue
            out.append(BenchQuestion(f"mmlb-{i}", s["doc_id"], s["question"], pages, str(s.get("answer", ""))))
    elif bench == "financebench":
        p = root / "financebench" / "financebench_open_source.jsonl"
        try:
            lines = p.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise RetrievalError(f"cannot read {p}: {e}") from e
        for line in lines:
            if not line.strip():
                continue
            s = json.loads(line)
            pages = {int(ev["evidence_page_num"]) + 1 for ev in s.get("evidence", []) if ev.get("evidence_page_num") is not None}
            if not pages:
                continue
            out.append(BenchQuestion(s["financebench_id"], f"{s['doc_name']}.pdf", s["question"], pages, str(s.get("answer", ""))))
    else:
        raise RetrievalError(f"unknown benchmark {bench!r}; choose mmlongbench or financebench")
    return out


def included_files(bench: str, root: str | os.PathLike | None = None) -> set[str] | None:
    """File names of the PDFs shipped with a benchmark (``mmlongbench_doc/documents`` or
    ``financebench/pdfs``), or None when that folder is absent."""
    root = Path(root) if root is not None else default_bench_dir()
    sub = {"mmlongbench": root / "mmlongbench_doc" / "documents", "financebench": root / "financebench" / "pdfs"}.get(bench)
    if sub is None or not sub.is_dir():
        return None
    return {p.name for p in sub.iterdir() if p.suffix.lower() == ".pdf"}


def pages_at_k(pages: Sequence[int], k: int) -> list[int]:
    """The first ``k`` distinct pages of a ranked page list."""
    out: list[int] = []
    for p in pages:
        if p not in out:
            out.append(int(p))
            if len(out) == k:
                break
    return out


def eval_retrieval(ws: RunStore, embedder: Embedder, settings: RetrievalSettings, bench: str, *, k: int = 5, strategies: Sequence[str] = EVAL_STRATEGIES,
                   root: str | os.PathLike | None = None, depth: int = 50, load_index=None, index_key: object = None,
                   retriever: Retriever | None = None, save: bool = True) -> dict[str, Any]:
    """Evidence-page recall@k per strategy on a benchmark (Doc-Researcher page-level recall).

    Only questions on the PDFs shipped in the benchmark's folder count (see
    :func:`included_files`); a workspace document of the same name from elsewhere is
    ignored.

    Args:
        ws: Workspace holding (some of) the benchmark PDFs under their original names.
        embedder, settings: As for the retriever.
        bench: ``mmlongbench`` or ``financebench``.
        k: Pages predicted per question.
        strategies: Strategies evaluated.
        root: Benchmark folder (default :func:`default_bench_dir`).
        depth: Ranked items per strategy before pages are taken.

    Returns:
        ``{"bench", "k", "questions", "documents", "skipped_questions",
        "recall": {strategy: mean recall@k}, "hit": {strategy: fraction with >= 1 gold page},
        "per_question": [...], "latency_mean" (s)}``.

    Raises:
        RetrievalError: no benchmark document is in the workspace.
    """
    qs = load_bench(bench, root)
    inc = included_files(bench, root)
    n_other = 0
    if inc is not None:
        # only the benchmark's own PDFs: a same-named file from elsewhere may paginate differently
        n_other = sum(q.file not in inc for q in qs)
        qs = [q for q in qs if q.file in inc]
    dmap, missing = _doc_map(ws, [q.file for q in qs])
    todo = [q for q in qs if q.file in dmap]
    if not todo:
        raise RetrievalError(f"no {bench} document is in workspace {ws.path}")
    retr = retriever or Retriever(ws, embedder, settings, load_index=load_index, index_key=index_key)
    view = retr.view
    strats = list(strategies)
    fv = retr.flat(view) if "flat" in strats else None
    rec = {s: [] for s in strats}
    hit = {s: [] for s in strats}
    per_q = []
    t0 = time.perf_counter()
    for q in todo:
        did = dmap[q.file]
        di = view.doc(did).index
        res = retr.rank(q.question, strats, doc_ids=[did], top_k=depth, view=view)
        row = {"qid": q.qid, "file": q.file, "gold": sorted(q.pages)}
        for s in strats:
            got = res.ranked.get(s, {}).get(di)
            if got is None:
                ranked_pages: list[int] = []
            elif s == "flat":
                ranked_pages = [fv.chunks[di][int(c)].page for c in got[0]]
            else:
                tree = view.docs[di].tree
                ranked_pages = [tree.nodes[int(n)].page_start for n in got[0]]
            pred = pages_at_k(ranked_pages, k)
            r = len(q.pages & set(pred)) / len(q.pages)
            rec[s].append(r)
            hit[s].append(float(r > 0))
            row[s] = pred
        per_q.append(row)
    lat = (time.perf_counter() - t0) / len(todo)
    res = {
        "bench": bench,
        "k": k,
        "questions": len(todo),
        "documents": len({q.file for q in todo}),
        "skipped_questions": len(qs) - len(todo),
        "not_included_questions": n_other,
        "missing_documents": len(missing),
        "recall": {s: float(np.mean(v)) for s, v in rec.items()},
        "hit": {s: float(np.mean(v)) for s, v in hit.items()},
        "latency_mean": lat,
        "per_question": per_q,
    }
    if save:
        res["run_id"] = ws.save_run("eval", {"kind": "retrieval", "bench": bench, "k": k, "strategies": strats},
                                    {kk: v for kk, v in res.items() if kk != "per_question"})
    return res
