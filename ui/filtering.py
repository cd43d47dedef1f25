"""The filter page's parts: one configuration form (drawn twice, side by side), runs,
per-document decision tables, their comparison, and export.

A filter run (SPEC F6) decides per document whether it satisfies a natural-language
condition from the evidence of tree traversal, semantic search
s(v, q) = w_type(v) · cos(e_v, e_q) · gamma^depth(v), hyper-edge matching, their
reciprocal-rank fusion ("combined") and, optionally, the flat-chunk baseline. It runs
:func:`docmaster_core.filtering.run.run_filter` with retrieval settings and index
parameters (alpha, k, K, w) taken from the form, and is saved in the workspace.

The page works on *normalised* runs (:func:`normalise_run`)::

    {"run_id", "condition", "strategy", "strategies", "params", "backend", "tokens",
     "cut": {"rule", "threshold", "kept", "of", "best"} | None (the deciding strategy's),
     "documents": [{"doc_id", "file", "decisions": {strategy: bool | None},
                    "match": bool | None, "rationale": str, "rationales": {strategy: str},
                    "errors": {strategy: str}, "evidence": [Evidence dicts],
                    "tokens": {strategy: int}, "score": float | None, "rank": int | None,
                    "decided": bool | None (the decider's own decision, before any cut move)}]}

Every document has an offline *evidence score* and rank (whatever the decider), so the
page lists the collection ranked, marks the suggested cut, and lets the user move it
(:func:`with_cut`) without retrieving again.
"""
from __future__ import annotations

import csv
import io
import json
import threading
from typing import Any

import streamlit as st

from . import state

__all__ = [
    "STRATEGIES",
    "DECISION_COLUMNS",
    "default_config",
    "render_filter_form",
    "retrieval_settings",
    "run_filter",
    "warm_filter",
    "normalise_run",
    "decision_rows",
    "compare_rows",
    "export_csv",
    "export_json",
    "evidence_node_ids",
    "mark",
    "mark_removed",
    "with_cut",
    "candidates_line",
    "ranked_rows",
    "is_offline_run",
]

#: Strategies offered by the form (``combined`` = RRF of tree, semantic and hyper-edge).
STRATEGIES = ["tree", "semantic", "hyperedge", "combined", "flat"]
#: Decision columns of the per-document tables, in order (absent ones are skipped).
DECISION_COLUMNS = ["tree", "semantic", "hyperedge", "combined", "flat"]
_TYPE_WEIGHTS = [("w_title", "TITLE"), ("w_text", "TEXT"), ("w_table", "TABLE"), ("w_image", "IMAGE"),
                 ("w_equation", "EQUATION")]


def default_config(which: str) -> dict[str, Any]:
    """Default configuration ``"A"`` (settings defaults) or ``"B"`` (the same with a
    stronger depth decay and fewer passages, a typical hyperparameter comparison).

    Returns:
        ``{"strategies": list[str], "decide_by": str, "top_k": int, "gamma": float,
        "w_title" ... "w_equation": float, "alpha": float, "k": int, "K": int, "w": float}``.
    """
    from docmaster_core.config import get_settings

    r = get_settings().retrieval
    cfg: dict[str, Any] = {
        "strategies": ["tree", "semantic", "hyperedge", "combined"],
        "decide_by": "combined",
        "top_k": r.top_k if which == "A" else max(1, r.top_k // 2),
        "gamma": r.gamma if which == "A" else 0.7,
        **{k: getattr(r, k) for k, _ in _TYPE_WEIGHTS},
        **state.default_index_params(),
    }
    return cfg


def _wkey(prefix: str, name: str) -> str:
    return f"w_filter_{prefix}_{name}"


def render_filter_form(prefix: str, title: str) -> dict[str, Any]:
    """Draw one filter configuration form and return its values.

    The same function draws configuration A and B side by side; values persist in
    ``state.FILTER_CONFIGS[prefix]`` across page switches.

    Args:
        prefix: ``"A"`` or ``"B"`` (widget keys and stored config).
        title: Heading shown above the form.

    Returns:
        A config dict as :func:`default_config`.
    """
    configs = dict(state.get(state.FILTER_CONFIGS) or {})
    cfg = {**default_config(prefix), **configs.get(prefix, {})}
    st.markdown(f"**{title}**")
    state.seed_widget(_wkey(prefix, "strategies"), cfg["strategies"])
    strategies = st.multiselect(
        "Strategies",
        STRATEGIES,
        key=_wkey(prefix, "strategies"),
        help="tree traversal, semantic search (FAISS), hyper-edge matching, combined = their reciprocal-rank "
        "fusion, flat = fixed-size chunk baseline. Each chosen strategy gets its own decision.",
    )
    choices = [x for x in STRATEGIES if x in strategies] or ["combined"]
    if st.session_state.get(_wkey(prefix, "decide_by")) not in choices:
        st.session_state[_wkey(prefix, "decide_by")] = cfg["decide_by"] if cfg["decide_by"] in choices else choices[-1]
    decide_by = st.selectbox("Keep a document when this strategy says yes", choices, key=_wkey(prefix, "decide_by"))
    c1, c2 = st.columns(2)
    with c1:
        state.seed_widget(_wkey(prefix, "top_k"), int(cfg["top_k"]))
        top_k = st.slider("top-k per strategy", 1, 30, key=_wkey(prefix, "top_k"))
    with c2:
        state.seed_widget(_wkey(prefix, "gamma"), float(cfg["gamma"]))
        gamma = st.slider("gamma (depth decay)", 0.05, 1.0, step=0.05, key=_wkey(prefix, "gamma"),
                          help="s(v,q) = w_type · cos · gamma^depth")
    out: dict[str, Any] = {"strategies": list(strategies), "decide_by": decide_by, "top_k": int(top_k),
                           "gamma": float(gamma)}
    with st.expander("Type weights"):
        cols = st.columns(len(_TYPE_WEIGHTS))
        for col, (name, label) in zip(cols, _TYPE_WEIGHTS):
            with col:
                state.seed_widget(_wkey(prefix, name), float(cfg[name]))
                out[name] = float(st.number_input(label, 0.0, 5.0, step=0.1, key=_wkey(prefix, name)))
    with st.expander("Index (alpha, k, K, w)"):
        c = st.columns(4)
        specs = [("alpha", 0.0, 1.0, 0.05, float), ("k", 0, 100, 1, int), ("K", 1, 30, 1, int), ("w", 0.0, 10.0, 0.25, float)]
        for col, (name, lo, hi, step, typ) in zip(c, specs):
            with col:
                state.seed_widget(_wkey(prefix, name), typ(cfg[name]))
                out[name] = typ(st.number_input(name, lo, hi, step=step, key=_wkey(prefix, name)))
    with st.expander("LLM cascade (OpenAI-compatible backend)"):
        # issue 14: decide most documents by their evidence score, ask the LLM about a sample and the uncertain band
        for name, default in (("cascade", False), ("combined_only", False), ("recall_target", 0.9),
                              ("precision_target", 0.9), ("delta", 0.1), ("sample_budget", 0)):
            state.seed_widget(_wkey(prefix, name), cfg.get(name, default))
        out["cascade"] = bool(st.checkbox("Cascade: call the LLM only on a sample and the uncertain band",
                                          key=_wkey(prefix, "cascade")))
        out["combined_only"] = bool(st.checkbox("One LLM call per document (combined evidence only; always so with the cascade)",
                                                key=_wkey(prefix, "combined_only")))
        c = st.columns(4)
        with c[0]:
            out["recall_target"] = float(st.number_input("recall target", 0.05, 1.0, step=0.05,
                                                         key=_wkey(prefix, "recall_target")))
        with c[1]:
            out["precision_target"] = float(st.number_input("precision target", 0.0, 1.0, step=0.05,
                                                            key=_wkey(prefix, "precision_target")))
        with c[2]:
            out["delta"] = float(st.number_input("delta", 0.01, 0.5, step=0.01, key=_wkey(prefix, "delta")))
        with c[3]:
            out["sample_budget"] = int(st.number_input("sample budget (0 = auto)", 0, 10000, step=5,
                                                       key=_wkey(prefix, "sample_budget")))
    configs[prefix] = out
    state.put(state.FILTER_CONFIGS, configs)
    return out


def retrieval_settings(dm: Any, config: dict[str, Any]):
    """The :class:`~docmaster_core.config.RetrievalSettings` of a form config (the
    workspace settings with top-k, gamma and the five type weights replaced)."""
    return dm.retrieval_settings(top_k=int(config["top_k"]), gamma=float(config["gamma"]),
                                 **{name: float(config[name]) for name, _ in _TYPE_WEIGHTS})


_WARM_LOCK = threading.Lock()
_WARMED: set[tuple] = set()
_WARM_THREADS: dict[str, threading.Thread] = {}


def warm_filter(dm: Any, configs: list[dict[str, Any]]) -> bool:
    """Prepare what the first filter run of this workspace needs, in a daemon thread.

    Loads the corpus view (all documents' trees and node vectors stacked), its
    lexical statistics and, for each distinct (alpha, k, K, w) of ``configs``, the
    stacked hyper-edges of the stored indexes: together ~3 s on the 88-document
    corpus that would otherwise be paid by the first click on "Run filter". The
    retrieval module caches them per workspace state, so the run that follows reuses
    them (it waits on the same locks when the warm-up is still going). Started at most
    once per workspace, index-parameter sets and index state; failures are ignored
    (the run itself then reports them).

    Returns:
        True when a warm-up thread was started by this call.
    """
    keys = []
    for cfg in configs:
        ip = {k: cfg[k] for k in ("alpha", "k", "K", "w")}
        key = dm.index_params(ip).key()
        if key not in [k for k, _ in keys]:
            keys.append((key, ip))
    try:
        versions = dm.index_versions()
    except Exception:  # noqa: BLE001 - warm-up only
        return False
    token = (str(dm.path), tuple(k for k, _ in keys), len(versions), max((t for *_, t in versions), default=0.0))
    with _WARM_LOCK:
        if token in _WARMED:
            return False
        _WARMED.add(token)

    def _run() -> None:
        try:
            dm.warm_up([ip for _key, ip in keys])
        except Exception:  # noqa: BLE001 - a warm-up failure is reported by the real run
            with _WARM_LOCK:
                _WARMED.discard(token)

    th = threading.Thread(target=_run, name="docmaster-filter-warmup", daemon=True)
    with _WARM_LOCK:
        _WARM_THREADS[str(dm.path)] = th
    th.start()
    return True


def _wait_for_warm_up(dm: Any, timeout: float = 60.0) -> None:
    """Join a running warm-up of this workspace so that a run does not build the same
    corpus view a second time in parallel."""
    with _WARM_LOCK:
        th = _WARM_THREADS.get(str(dm.path))
    if th is not None and th.is_alive() and th is not threading.current_thread():
        th.join(timeout)


def run_filter(dm: Any, condition: str, config: dict[str, Any], docs: list[str] | None = None) -> dict[str, Any]:
    """Filter the workspace's documents by ``condition`` with one form config.

    Hyper-edges come from the stored index for the config's alpha, k, K, w (documents
    without one use the retriever's fallback hyper-edges). The run is saved in the
    workspace (kind ``"filter"``).

    Args:
        dm: The DocMaster facade.
        condition: Natural-language condition.
        config: A form config (see :func:`default_config`).
        docs: doc ids to filter (default all).

    Returns:
        The normalised run (see the module docstring).

    Raises:
        RetrievalError: empty condition, unknown strategy, or no documents.
        LLMError: only for failures outside per-document decisions.
    """
    _wait_for_warm_up(dm)
    ip = {k: config[k] for k in ("alpha", "k", "K", "w")}
    strategies = [x for x in STRATEGIES if x in config["strategies"]] or ["combined"]
    decide_by = config.get("decide_by") if config.get("decide_by") in strategies else strategies[-1]
    extra: dict[str, Any] = {}
    if not dm.llm.is_offline:  # the cascade and combined-only decide with an LLM (issue 14)
        if config.get("combined_only") and "combined" in strategies:
            extra["decide"] = "combined-only"
        if config.get("cascade"):
            from docmaster_core.filtering.cascade import CascadeTargets

            extra["cascade"] = CascadeTargets(recall=float(config.get("recall_target", 0.9)),
                                              precision=float(config.get("precision_target", 0.9)),
                                              delta=float(config.get("delta", 0.1)),
                                              sample_budget=int(config.get("sample_budget") or 0) or None)
    from docmaster_core.filtering.options import FilterOptions

    opts = FilterOptions(strategy=decide_by, strategies=tuple(strategies), top_k=int(config["top_k"]),
                         doc_ids=None if docs is None else tuple(docs), index_params=ip,
                         retrieval=retrieval_settings(dm, config), extra_params={"app_config": dict(config)}, **extra)
    run = dm.filter(condition, opts)
    return normalise_run(run.to_dict())


def normalise_run(run: dict[str, Any]) -> dict[str, Any]:
    """Turn ``FilterRun.to_dict()`` into the page's normalised run (module docstring).

    Evidence of all strategies is flattened into one list (ids are unique per document:
    T1.., S1.., H1.., C1.., F1..). Already normalised runs are returned unchanged.
    """
    main = run.get("strategy", "combined")
    docs = []
    for d in run.get("documents", []):
        dec = d.get("decisions") or {}
        if dec and all(isinstance(v, (bool, type(None))) for v in dec.values()):
            docs.append(d)  # already normalised
            continue
        decisions = {s: (v or {}).get("decision") for s, v in dec.items()}
        rationales = {s: (v or {}).get("rationale", "") for s, v in dec.items()}
        errors = {s: (v or {}).get("error") for s, v in dec.items() if (v or {}).get("error")}
        tokens = {s: int((v or {}).get("tokens", 0)) for s, v in dec.items()}
        main_dec = dec.get(main) or {}
        ev_raw = d.get("evidence") or {}
        flat, seen = [], set()
        for items in (ev_raw.values() if isinstance(ev_raw, dict) else [ev_raw]):
            for e in items:
                if e.get("evidence_id") not in seen:
                    seen.add(e.get("evidence_id"))
                    flat.append(e)
        docs.append({
            "doc_id": d.get("doc_id", ""),
            "file": d.get("file", ""),
            "decisions": decisions,
            "match": decisions.get(main),
            "rationale": rationales.get(main) or errors.get(main, ""),
            "rationales": rationales,
            "errors": errors,
            "evidence": flat,
            "tokens": tokens,
            "score": main_dec.get("evidence_score"),
            "rank": main_dec.get("rank"),
            "uncertain": bool(main_dec.get("uncertain")),
            "decided": decisions.get(main),
            "not_candidate": main_dec.get("decided_by") == "not-a-candidate",
        })
    out = {k: v for k, v in run.items() if k not in ("documents", "cuts")}
    out["documents"] = docs
    out.setdefault("strategy", main)
    out["cut"] = (run.get("cuts") or {}).get(main, run.get("cut"))
    return out


def is_offline_run(run: dict[str, Any]) -> bool:
    """True when the run was decided by the offline evidence score (its decisions *are*
    the cut of the ranking, so moving the cut changes them)."""
    return str(run.get("backend", "")).startswith("offline")


def with_cut(run: dict[str, Any], kept: int | None) -> dict[str, Any]:
    """The run with its cut moved to keep the ``kept`` best-ranked documents.

    No retrieval and no decision is repeated: offline-decided runs get ``match`` (and the
    deciding strategy's decision) = rank <= ``kept``; LLM-decided runs keep the model's
    decisions as ``match`` and gain ``by_score`` (the cut of the ranking) beside them.

    Args:
        run: A normalised run.
        kept: Documents kept (0..M); None = the suggested cut (the run as decided).

    Returns:
        A new normalised run (documents copied shallowly) with ``cut["moved_to"]`` set.
    """
    docs = run.get("documents", [])
    n = len(docs)
    cut = dict(run.get("cut") or {})
    suggested = int(cut.get("kept", sum(d.get("decided") is True for d in docs)))
    k = suggested if kept is None else max(0, min(int(kept), n))
    offline = is_offline_run(run)
    out_docs = []
    for d in docs:
        rank = d.get("rank")
        inside = rank is not None and int(rank) <= k
        nd = dict(d)
        nd["by_score"] = inside
        if offline and kept is not None and d.get("decided") is not None:
            nd["match"] = inside
            # the deciding strategy's column follows the moved cut too (the others are unchanged)
            nd["decisions"] = {**(d.get("decisions") or {}), run.get("strategy", "combined"): inside}
            if inside != d.get("decided"):
                nd["rationale"] = (f"{'Kept' if inside else 'Not kept'} by the moved cut (top {k}); the suggested cut "
                                   f"(top {suggested}) said: {d.get('rationale', '')}")
        out_docs.append(nd)
    cut["moved_to"] = k
    cut["suggested"] = suggested
    return {**run, "documents": out_docs, "cut": cut}


def ranked_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per document, the kept ones first, each part by evidence score (best
    first): rank, score, kept, file, one column per decided strategy (and ``by score``
    for model-decided runs), rationale, doc_id. Documents that were not candidates of a
    run at scale (decided no without exact scoring) are left out: the run's
    ``candidates`` entry counts them (:func:`candidates_line`)."""
    cols = _columns(run)
    offline = is_offline_run(run)
    n_eligible = (run.get("cut") or {}).get("eligible")
    rows = []
    for d in sorted(run.get("documents", []),
                    key=lambda d: (d.get("match") is not True, d.get("rank") is None, d.get("rank") or 0)):
        if d.get("not_candidate"):  # decided no without exact scoring (a run at scale): counted, not listed
            continue
        dec = d.get("decisions") or {}
        row = {"rank": d.get("rank"), "score": None if d.get("score") is None else round(float(d["score"]), 2),
               "kept": mark(d.get("match")), "file": d.get("file", d.get("doc_id", ""))}
        if offline:  # three-way decisions: the cut is often wrong between the sure-no and sure-yes scores
            row["certainty"] = "uncertain" if d.get("uncertain") else "sure"
            if isinstance(n_eligible, int) and d.get("rank") is not None and d["rank"] > n_eligible:
                # ranked after every document with closer passages, whatever its score
                row["certainty"] = "below the similarity floor"
        else:
            row["by score"] = mark(d.get("by_score"))
        for c in cols:
            row[c] = mark(dec.get(c))
        row.update({"rationale": d.get("rationale", ""), "doc_id": d.get("doc_id", "")})
        rows.append(row)
    return rows


def candidates_line(run: dict[str, Any]) -> str | None:
    """One sentence on a two-stage run's candidate documents (None for a run that scored
    every document exactly)."""
    c = run.get("candidates") or {}
    if not c:
        return None
    return (f"{c.get('not_candidates', 0)} of {len(run.get('documents', []))} documents were not candidates: not among "
            f"the {c.get('pool_docs')} best of the collection indexes (dense {c.get('index', '')}, BM25) for the "
            f"condition or its parts, so they were decided no without exact scoring and are not listed; "
            f"{c.get('candidates', 0)} candidates were scored.")


def mark_removed(rows: list[dict[str, Any]], known: set[str]) -> tuple[list[dict[str, Any]], int]:
    """Rows of :func:`ranked_rows` whose document has been removed from the workspace
    since the run get ``" (removed)"`` after their file name (the run is shown as it was
    decided, like the saved runs).

    Returns:
        ``(rows, how many were removed)``.
    """
    out, n = [], 0
    for r in rows:
        if r.get("doc_id") and r["doc_id"] not in known:
            r = {**r, "file": f"{r.get('file', '')} (removed)"}
            n += 1
        out.append(r)
    return out, n


def mark(v: Any) -> str:
    """Decision as a table cell: ``"✓ yes"``, ``"✗ no"`` or ``"–"`` (not decided / not run)."""
    if v is True:
        return "✓ yes"
    if v is False:
        return "✗ no"
    return "–"


def _tokens(doc: dict[str, Any]) -> int:
    t = doc.get("tokens") or {}
    if isinstance(t, dict):
        return int(sum(int(x or 0) for x in t.values()))
    return int(t or 0)


def _columns(*runs: dict[str, Any]) -> list[str]:
    present = set()
    for run in runs:
        for d in run.get("documents", []):
            present |= set((d.get("decisions") or {}).keys())
    return [c for c in DECISION_COLUMNS if c in present]


def decision_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per document: file, ``match``, one column per decided strategy,
    rationale (of the deciding strategy), tokens, evidence count, doc_id."""
    cols = _columns(run)
    rows = []
    for d in run.get("documents", []):
        dec = d.get("decisions") or {}
        row = {"file": d.get("file", d.get("doc_id", "")), "match": mark(d.get("match"))}
        for c in cols:
            row[c] = mark(dec.get(c))
        row.update({"rationale": d.get("rationale", ""), "tokens": _tokens(d), "evidence": len(d.get("evidence") or []),
                    "doc_id": d.get("doc_id", "")})
        rows.append(row)
    return rows


def compare_rows(run_a: dict[str, Any], run_b: dict[str, Any]) -> list[dict[str, Any]]:
    """Side-by-side decisions of two runs per document with a ``differs`` flag (True
    when the match or any strategy decided in both runs differs)."""
    a = {d["doc_id"]: d for d in run_a.get("documents", [])}
    b = {d["doc_id"]: d for d in run_b.get("documents", [])}
    cols = ["match"] + _columns(run_a, run_b)
    rows = []
    for doc_id in list(a) + [x for x in b if x not in a]:
        da, db = a.get(doc_id, {}), b.get(doc_id, {})
        deca = {"match": da.get("match"), **(da.get("decisions") or {})}
        decb = {"match": db.get("match"), **(db.get("decisions") or {})}
        row = {"file": da.get("file") or db.get("file") or doc_id}
        differs = False
        for c in cols:
            row[f"A {c}"] = mark(deca.get(c))
            row[f"B {c}"] = mark(decb.get(c))
            if c in deca and c in decb:
                differs |= deca.get(c) != decb.get(c)
        row["differs"] = bool(differs)
        row["doc_id"] = doc_id
        rows.append(row)
    return rows


def export_csv(runs: dict[str, dict[str, Any]]) -> str:
    """CSV text: one row per (configuration, document) with the match (after any cut
    move), whether it is uncertain (three-way decisions), the rank and evidence score of
    the deciding strategy, every strategy's
    decision (empty = not decided), rationale, tokens and evidence ids."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["config", "run_id", "condition", "doc_id", "file", "match", "uncertain", "rank", "evidence_score",
                *DECISION_COLUMNS,
                "rationale", "tokens", "evidence_ids"])

    def cell(v: Any) -> str:
        return "" if v is None else str(bool(v)).lower()

    for name, run in runs.items():
        for d in run.get("documents", []):
            dec = d.get("decisions") or {}
            w.writerow([
                name, run.get("run_id", ""), run.get("condition", ""), d.get("doc_id", ""), d.get("file", ""),
                cell(d.get("match")), cell(d.get("uncertain", False)), "" if d.get("rank") is None else d["rank"],
                "" if d.get("score") is None else round(float(d["score"]), 4), *[cell(dec.get(c)) for c in DECISION_COLUMNS],
                d.get("rationale", ""), _tokens(d), " ".join(e.get("evidence_id", "") for e in d.get("evidence") or []),
            ])
    return buf.getvalue()


def export_json(runs: dict[str, dict[str, Any]]) -> str:
    """JSON text of both runs (``{"A": run, "B": run}``)."""
    return json.dumps(runs, indent=2, ensure_ascii=False, default=str)


def evidence_node_ids(runs: dict[str, dict[str, Any]]) -> dict[str, list[int]]:
    """doc_id -> sorted node ids used as evidence in any run (for the tree highlight)."""
    out: dict[str, set[int]] = {}
    for run in runs.values():
        for d in run.get("documents", []):
            for e in d.get("evidence") or []:
                nid = e.get("node_id", -1)
                if isinstance(nid, int) and nid >= 0:
                    out.setdefault(e.get("doc_id") or d.get("doc_id"), set()).add(nid)
    return {k: sorted(v) for k, v in out.items()}
