"""The filter page's parts: one configuration form (drawn twice, side by side), runs,
per-document decision tables, their comparison, and export.

A filter run (SPEC F6) decides per document whether it satisfies a natural-language
condition from the evidence of tree traversal, semantic search
s(v, q) = w_type(v) · cos(e_v, e_q) · gamma^depth(v), hyper-edge matching, their
reciprocal-rank fusion ("combined") and, optionally, the flat-chunk baseline. It runs
:func:`docmaster_core.filtering.run.run_filter` with retrieval settings and index
parameters (alpha, k, K, w) taken from the form, and is saved in the workspace.

The page renders the run as the engine writes it (``FilterRun.to_dict()``, the one
shape; :mod:`docmaster_core.filtering.results`); the helpers here only read it
(:func:`deciding`, :func:`doc_match`, :func:`evidence_list`, ...). Every document has an
offline *evidence score* and rank (whatever the decider), so the page lists the
collection ranked, marks the suggested cut, and lets the user move it with the engine's
``dm.move_cut`` (:func:`~docmaster_core.filtering.results.move_cut`) without retrieving
again; two runs are compared by ``dm.compare_runs``, as ``docmaster filter --compare`` does.
"""
from __future__ import annotations

import csv
import io
import json
import re
import threading
import time
from typing import Any

import streamlit as st

from docmaster_core.filtering.results import is_offline_run

from . import state
from .text import shorten

__all__ = [
    "STRATEGIES",
    "CERTAINTY_WORDS",
    "DECISION_COLUMNS",
    "STRATEGY_WORDS",
    "STRATEGY_LABELS",
    "STRATEGIES_LABEL",
    "decisions_line",
    "RANKED_COLUMN_WIDTHS",
    "doc_title",
    "default_config",
    "render_filter_form",
    "saved_config",
    "CONFIG_PREFERENCE",
    "retrieval_settings",
    "run_filter",
    "saved_page_runs",
    "restored_words",
    "floor_ranks_words",
    "warm_filter",
    "deciding",
    "doc_match",
    "doc_rationale",
    "evidence_list",
    "run_cut",
    "by_score",
    "decision_cell",
    "decision_rows",
    "difference_rows",
    "export_csv",
    "export_json",
    "export_file_name",
    "evidence_node_ids",
    "mark",
    "is_kept_cell",
    "mark_removed",
    "candidates_line",
    "ranked_rows",
    "ranked_column_config",
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


#: Name of the workspace preference holding configuration A or B (``+ prefix``).
CONFIG_PREFERENCE = "filter_config_"
_REVIEW_FIELDS = {"review": bool, "combined_only": bool, "recall_target": float, "delta": float}


def saved_config(dm: Any, prefix: str) -> dict[str, Any]:
    """Configuration ``prefix`` as last saved in the workspace (:meth:`DocMaster.preference
    <docmaster_core.pipeline.DocMaster.preference>`), keeping only known fields of the
    right type (unknown strategies dropped), or ``{}``."""
    saved = dm.preference(CONFIG_PREFERENCE + prefix) if dm is not None else None
    if not isinstance(saved, dict):
        return {}
    types = {k: type(v) for k, v in default_config(prefix).items()}
    types.update(_REVIEW_FIELDS)
    out: dict[str, Any] = {}
    for k, v in saved.items():
        typ = types.get(k)
        if typ is None:
            continue
        if typ is list:
            if isinstance(v, list) and (picked := [x for x in STRATEGIES if x in v]):
                out[k] = picked
        elif typ is bool:
            if isinstance(v, bool):
                out[k] = v
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = typ(v)
        elif typ is str and isinstance(v, str):
            out[k] = v
    return out


def render_filter_form(prefix: str, title: str, dm: Any = None) -> dict[str, Any]:
    """Draw one filter configuration form and return its values.

    The same function draws configuration A and B side by side; values persist in
    ``state.FILTER_CONFIGS[prefix]`` across page switches and, with ``dm``, in the
    workspace (:func:`saved_config`), so a page reload (a new browser session) starts
    from them.

    Args:
        prefix: ``"A"`` or ``"B"`` (widget keys and stored config).
        title: Heading shown above the form.
        dm: The DocMaster facade whose workspace keeps the configuration (None: this
            browser session only).

    Returns:
        A config dict as :func:`default_config`.
    """
    configs = dict(state.get(state.FILTER_CONFIGS) or {})
    saved_key = f"dm_filter_config_saved_{prefix}"
    fresh = prefix not in configs and dm is not None
    if fresh:  # a new session: the configuration saved in the workspace
        configs[prefix] = saved_config(dm, prefix)
    cfg = {**default_config(prefix), **configs.get(prefix, {})}
    st.markdown(f"**{title}**")
    state.seed_widget(_wkey(prefix, "strategies"), cfg["strategies"])
    strategies = st.multiselect(
        "How to find each document's evidence (each way decides on its own)",
        STRATEGIES,
        format_func=lambda s: STRATEGY_LABELS.get(s, s),
        key=_wkey(prefix, "strategies"),
        help="; ".join(STRATEGY_LABELS.values()) + ". The paper's names: tree traversal, semantic search (FAISS), "
        "hyper-edge matching; all = combined, every strategy's best passages in turn within a character budget; "
        "chunks = flat, fixed-size chunks (the baseline). Each chosen way gets its own decision.",
    )
    choices = [x for x in STRATEGIES if x in strategies] or ["combined"]
    if st.session_state.get(_wkey(prefix, "decide_by")) not in choices:
        st.session_state[_wkey(prefix, "decide_by")] = cfg["decide_by"] if cfg["decide_by"] in choices else choices[-1]
    decide_by = st.selectbox("Decide by", choices, format_func=lambda s: STRATEGY_LABELS.get(s, s),
                             key=_wkey(prefix, "decide_by"),
                             help="A document is kept when this way's evidence says yes; the others are shown beside it.")
    c1, c2 = st.columns(2)
    with c1:
        state.seed_widget(_wkey(prefix, "top_k"), int(cfg["top_k"]))
        top_k = st.slider("Passages per way", 1, 30, key=_wkey(prefix, "top_k"),
                          help="top-k: the passages each way hands over per document")
    with c2:
        state.seed_widget(_wkey(prefix, "gamma"), float(cfg["gamma"]))
        gamma = st.slider("How much sub-sections count (1 = as much as top-level ones)", 0.05, 1.0, step=0.05,
                          key=_wkey(prefix, "gamma"),
                          help="Lower values favour passages of top-level sections over those of deeply nested "
                          "sub-sections. The paper's gamma, the depth decay: s(v,q) = w_type · cos · gamma^depth")
    out: dict[str, Any] = {"strategies": list(strategies), "decide_by": decide_by, "top_k": int(top_k),
                           "gamma": float(gamma)}
    with st.expander("Weight of headings, text, tables, figures, equations (type weights)"):
        cols = st.columns(len(_TYPE_WEIGHTS))
        for col, (name, label) in zip(cols, _TYPE_WEIGHTS):
            with col:
                state.seed_widget(_wkey(prefix, name), float(cfg[name]))
                out[name] = float(st.number_input(label, 0.0, 5.0, step=0.1, key=_wkey(prefix, name)))
    with st.expander("How passages are grouped (alpha, k, K, w)"):
        st.caption("alpha: how much meaning counts against closeness in the tree (Eq. 1); k: pairs of passages the "
                   "LLM marks as belonging together or apart, per document; K: groups per document; w: how strongly "
                   "the grouping keeps those marks (PC-KMeans, Eq. 2)")
        c = st.columns(4)
        specs = [("alpha", 0.0, 1.0, 0.05, float), ("k", 0, 100, 1, int), ("K", 1, 30, 1, int), ("w", 0.0, 10.0, 0.25, float)]
        for col, (name, lo, hi, step, typ) in zip(c, specs):
            with col:
                state.seed_widget(_wkey(prefix, name), typ(cfg[name]))
                out[name] = typ(st.number_input(name, lo, hi, step=step, key=_wkey(prefix, name)))
    with st.expander("LLM review (OpenAI-compatible backend)"):
        # issue 33: the LLM as the oracle of the rank-order review, asked until the recall target is certified
        for name, default in (("review", False), ("combined_only", False), ("recall_target", 0.9), ("delta", 0.1)):
            state.seed_widget(_wkey(prefix, name), cfg.get(name, default))
        out["review"] = bool(st.checkbox(
            "Review: ask the LLM in order of evidence, and stop once a random check certifies the recall target "
            "(documents not reached are dropped)", key=_wkey(prefix, "review")))
        out["combined_only"] = bool(st.checkbox("One LLM call per document (combined evidence only; always so with "
                                                "the review)", key=_wkey(prefix, "combined_only")))
        c = st.columns(2)
        with c[0]:
            out["recall_target"] = float(st.number_input("share of the matches to find (recall target)", 0.05, 1.0,
                                                         step=0.05, key=_wkey(prefix, "recall_target")))
        with c[1]:
            out["delta"] = float(st.number_input("chance the target is missed (delta)", 0.01, 0.5, step=0.01,
                                                 key=_wkey(prefix, "delta")))
    configs[prefix] = out
    state.put(state.FILTER_CONFIGS, configs)
    if fresh:  # what the session starts from: written back only once the user changes it
        st.session_state[saved_key] = dict(out)
    elif dm is not None and st.session_state.get(saved_key) != out:
        if dm.save_preference(CONFIG_PREFERENCE + prefix, out):  # unsaved (read-only workspace): this session only
            st.session_state[saved_key] = dict(out)
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
    lexical statistics, BM25 index and per-document term counts and, for each distinct
    (alpha, k, K, w) of ``configs``, the stacked hyper-edges of the stored indexes
    (:meth:`DocMaster.warm_up`): together ~3-4 s on the 88-document corpus that would
    otherwise be paid by the first click on "Run filter". The
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


def run_filter(dm: Any, condition: str, config: dict[str, Any], docs: list[str] | None = None,
               name: str | None = None) -> dict[str, Any]:
    """Filter the workspace's documents by ``condition`` with one form config.

    Hyper-edges come from the stored index for the config's alpha, k, K, w (documents
    without one use the retriever's fallback hyper-edges). The run is saved in the
    workspace (kind ``"filter"``).

    Args:
        dm: The DocMaster facade.
        condition: Natural-language condition.
        config: A form config (see :func:`default_config`).
        docs: doc ids to filter (default all).
        name: The configuration's name on the Filter page ("A", "B"), saved with the run
            (``params["app_configuration"]``) so that the Chat page can say which one it answers from.

    Returns:
        The run as the engine writes it (``FilterRun.to_dict()``, the shape described in
        :mod:`docmaster_core.filtering.results`).

    Raises:
        RetrievalError: empty condition, unknown strategy, or no documents.
        LLMError: only for failures outside per-document decisions.
    """
    from docmaster_core.filtering.options import FilterOptions, review_options

    _wait_for_warm_up(dm)
    ip = {k: config[k] for k in ("alpha", "k", "K", "w")}
    strategies = [x for x in STRATEGIES if x in config["strategies"]] or ["combined"]
    decide_by = config.get("decide_by") if config.get("decide_by") in strategies else strategies[-1]
    extra: dict[str, Any] = {}
    if not dm.llm.is_offline:  # the review and combined-only decide with an LLM (issue 33)
        extra = review_options(
            review=bool(config.get("review")),
            decide="combined-only" if config.get("combined_only") and "combined" in strategies else None,
            recall=float(config.get("recall_target", 0.9)), delta=float(config.get("delta", 0.1)))
    saved = {"app_config": dict(config), **({"app_configuration": name} if name else {})}
    opts = FilterOptions(strategy=decide_by, strategies=tuple(strategies), top_k=int(config["top_k"]),
                         doc_ids=None if docs is None else tuple(docs), index_params=ip,
                         retrieval=retrieval_settings(dm, config), extra_params=saved, **extra)
    return dm.filter(condition, opts).to_dict()


def saved_page_runs(dm: Any) -> tuple[dict[str, dict[str, Any]], float | None]:
    """The Filter page's last press of "Run filter", read back from the workspace: the
    newest saved filter run if the page made it (``params["app_configuration"]``), with the
    run just before it when that is the other configuration of the same press (B runs first,
    A last, the same condition). A reopened page (a reload is a new browser session) shows
    them instead of asking for the run again.

    Returns:
        ``({"A": run, "B": run}, created_at)``: each run as :func:`run_filter` returned it
        (``FilterRun.to_dict()``, its ``run_id`` set; evidence texts shortened where the
        run's ``evidence_text_chars`` says so), ``created_at`` of the newest in Unix
        seconds; ``({}, None)`` when the newest run was not made on the page.
    """
    saved = dm.recent_runs("filter", 2)
    if not saved or saved[0]["params"].get("app_configuration") not in ("A", "B"):
        return {}, None
    newest = saved[0]
    out = {newest["params"]["app_configuration"]: {**newest["result"], "run_id": newest["run_id"]}}
    if len(saved) > 1:
        prev = saved[1]
        name = prev["params"].get("app_configuration")
        if name in ("A", "B") and name not in out and prev["params"].get("condition") == newest["params"].get("condition"):
            out[name] = {**prev["result"], "run_id": prev["run_id"]}
    return {n: out[n] for n in ("A", "B") if n in out}, float(newest["created_at"])


def restored_words(runs: dict[str, dict[str, Any]], created_at: float | None, doc_ids: set[str]) -> str:
    """The line a reopened Filter page shows above results read back by
    :func:`saved_page_runs`: which runs, when (local time), how to decide again, and what
    they cannot show (documents added since; evidence texts saved shortened).

    Args:
        runs: ``{"A"|"B": FilterRun.to_dict()}`` with their ``run_id``.
        created_at: Unix time in seconds of the newest run, or None.
        doc_ids: The workspace's documents now.
    """
    names = " and ".join(f"{n} (run #{r.get('run_id')})" for n, r in runs.items())
    when = "" if created_at is None else time.strftime(" of %Y-%m-%d %H:%M", time.localtime(created_at))
    out = (f"Results of the last run{when} restored: configuration {names}. Press \"Run filter with A and B\" to "
           "decide again with the settings now in the forms.")
    in_runs = {d.get("doc_id") for r in runs.values() for d in r.get("documents", [])}
    added = len(doc_ids - in_runs)
    if added:
        out += f" {added} document(s) added since are not in these results; a new run decides them."
    short = {r.get("evidence_text_chars") for r in runs.values()} - {None}
    if short:
        out += (f" The saved evidence passages are shortened to {min(short)} characters (a run this large keeps "
                "them short); a new run shows them whole.")
    return out


# ---------------------------------------------------------------- reading a run (FilterRun.to_dict())
def deciding(run: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """The deciding strategy's decision dict (``Decision.to_dict()``) of one document of
    ``run``, or ``{}`` when it has none."""
    return (doc.get("decisions") or {}).get(run.get("strategy", "combined")) or {}


def doc_match(run: dict[str, Any], doc: dict[str, Any]) -> bool | None:
    """The document's decision by the run's deciding strategy (None: undecided)."""
    return deciding(run, doc).get("decision")


def doc_rationale(run: dict[str, Any], doc: dict[str, Any]) -> str:
    """The deciding strategy's rationale, else its error, else ``""``."""
    dec = deciding(run, doc)
    return dec.get("rationale") or dec.get("error") or ""


def evidence_list(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every strategy's evidence of one document as one list (``Evidence.to_dict()``;
    ids are unique per document: T1.., S1.., H1.., C1.., F1..; repeated ids once)."""
    flat, seen = [], set()
    for items in (doc.get("evidence") or {}).values():
        for e in items:
            if e.get("evidence_id") not in seen:
                seen.add(e.get("evidence_id"))
                flat.append(e)
    return flat


def run_cut(run: dict[str, Any]) -> dict[str, Any]:
    """The deciding strategy's cut (``Cut.to_dict()``, with ``moved_to`` and
    ``suggested`` after :func:`~docmaster_core.filtering.results.move_cut`), or ``{}``."""
    return (run.get("cuts") or {}).get(run.get("strategy", "combined")) or {}


def by_score(run: dict[str, Any], doc: dict[str, Any]) -> bool | None:
    """Whether the document is inside the moved cut of the ranking (None: the cut was
    not moved or the document has no rank); for LLM runs, shown beside the model's decision."""
    k, rank = run_cut(run).get("moved_to"), deciding(run, doc).get("rank")
    return None if k is None or rank is None else int(rank) <= int(k)


#: One plain word per strategy (the decision cell, the method chooser); the paper's names
#: are in :data:`STRATEGY_LABELS` and the help texts.
STRATEGY_WORDS = {"tree": "tree", "semantic": "search", "hyperedge": "groups", "combined": "all", "flat": "chunks"}
#: What each strategy does, in the form's choosers.
STRATEGY_LABELS = {
    "tree": "tree: walks down the sections",
    "semantic": "search: passages close in meaning",
    "hyperedge": "groups: related passages (hyper-edges)",
    "combined": "all: every method's best passages",
    "flat": "chunks: fixed-size pieces (baseline)",
}
#: Help of the compact decision column.
STRATEGIES_HELP = ("How many of the ways of finding evidence said yes (the document's own decisions are listed under "
                   "Evidence): tree = tree traversal, search = semantic search, groups = hyper-edge matching, all = "
                   "the combined evidence, chunks = flat chunks (the baseline). Each way ranks the documents by its "
                   "own evidence and cuts its own ranking (its scores are not the table's), so they can disagree; "
                   "the 'kept' column is the decision of the way chosen in 'Decide by', and moving the cut moves that "
                   "way's cut only (its yes or no, and so this count, can change). Your review answer replaces that way's "
                   "decision, so applying answers changes this count too.")
#: Label of the compact decision column.
STRATEGIES_LABEL = "kept by ways"


def decision_cell(decisions: dict[str, Any], columns: list[str]) -> str:
    """The strategies' decisions of one document as one short cell: how many said yes,
    ``"3 of 4"`` (``"3 of 4, 1 undecided"`` when some did not decide).

    Args:
        decisions: ``{strategy: Decision.to_dict() | bool | None}``.
        columns: Strategies shown, in order (those of :data:`DECISION_COLUMNS` decided in the runs).
    """
    vals = [(decisions.get(c) or {}).get("decision") if isinstance(decisions.get(c), dict) else decisions.get(c)
            for c in columns]
    yes, undecided = sum(v is True for v in vals), sum(v is None for v in vals)
    return f"{yes} of {len(vals)}" + (f", {undecided} undecided" if undecided else "")


def decisions_line(decisions: dict[str, Any], columns: list[str]) -> str:
    """Each strategy's decision in plain words, e.g. ``"tree ✓ yes · search ✗ no · all ✓ yes"``
    (:data:`STRATEGY_WORDS`)."""
    def one(v: Any) -> str:
        v = v.get("decision") if isinstance(v, dict) else v
        return "✓ yes" if v is True else "✗ no" if v is False else "– not decided"

    return " · ".join(f"{STRATEGY_WORDS.get(c, c)} {one(decisions.get(c))}" for c in columns)


#: Pixel widths of the ranked table's decision columns: with the row-selection box
#: (~32 px) they fit the ~436 px that each of the side-by-side tables gets at a 1400 px
#: window (measured in Chromium), so no decision is cut off; certainty and rationale
#: follow, behind a horizontal scroll when the window is narrow.
RANKED_COLUMN_WIDTHS = {"rank": 40, "score": 52, "kept": 56, "by score": 64, "file": 150, "title": 170,
                        "strategies": 100}


def doc_title(records: dict[str, Any], doc_id: str, max_chars: int = 60) -> str:
    """A document's title for a results table (shortened to ``max_chars``; ``""`` for a document
    no longer in the workspace or without a title). ``records``: ``{doc_id: DocumentRecord}``."""
    return shorten(getattr(records.get(doc_id), "title", "") or "", max_chars)


#: The certainty of a document ranked after all others because no passage of it is close enough in
#: meaning to the condition (below the decider's similarity floor; a newcomer read "similarity floor" as jargon).
FLOOR_WORDS = "sure: no passage close enough"

#: What "sure" and "uncertain" mean (the certainty column's help and the caption under the tables).
CERTAINTY_WORDS = ("\"sure\": the score is far from the cut, and a kept document both holds a passage close in "
                   "meaning to the condition and uses its distinctive words. \"uncertain\": the score lies where the "
                   "cut is often wrong, or only one of those two holds, or it is the only document about the "
                   "condition; check it yourself (Review) or let an LLM decide. In the tables an uncertain decision "
                   "reads \"✓ yes?\" or \"✗ no?\", and one your review answer made \"✓ you\" or \"✗ you\".")


def ranked_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per document, the kept ones first, each part by evidence score (best
    first): rank, score, kept, ``by score`` (LLM runs: inside the moved cut), file,
    ``strategies`` (:func:`decision_cell`), certainty (offline runs), rationale, doc_id.
    Documents that were not candidates of a run at scale (decided no without exact
    scoring) are left out: the run's ``candidates`` entry counts them (:func:`candidates_line`)."""
    cols = _columns(run)
    offline = is_offline_run(run)
    n_eligible = run_cut(run).get("eligible")
    rows = []

    def order(d):
        dec = deciding(run, d)
        return dec.get("decision") is not True, dec.get("rank") is None, dec.get("rank") or 0

    for d in sorted(run.get("documents", []), key=order):
        dec = deciding(run, d)
        if dec.get("decided_by") == "not-a-candidate":  # decided no without exact scoring: counted, not listed
            continue
        rank, score = dec.get("rank"), dec.get("evidence_score")
        # an uncertain decision reads "✓ yes?" / "✗ no?" (as `docmaster filter` prints it), in view even where the
        # certainty column lies behind the half-width table's scroll
        kept = mark(dec.get("decision")) + ("?" if offline and dec.get("uncertain")
                                             and dec.get("decision") is not None else "")
        if dec.get("decided_by") == "user" and dec.get("decision") is not None:  # your review answer decided it
            kept = ("✓" if dec.get("decision") else "✗") + " you"
        row = {"rank": rank, "score": None if score is None else round(float(score), 2), "kept": kept}
        if not offline:
            row["by score"] = mark(by_score(run, d))
        # the file before the ways, so it is read beside its decision in the half-width table (a newcomer)
        row["file"] = d.get("file", d.get("doc_id", ""))
        row["strategies"] = decision_cell(d.get("decisions") or {}, cols)
        if offline:  # three-way decisions: the cut is often wrong between the sure-no and sure-yes scores
            row["certainty"] = "uncertain" if dec.get("uncertain") else "sure"
            if isinstance(n_eligible, int) and rank is not None and rank > n_eligible:
                # ranked after every document with closer passages, whatever its score
                row["certainty"] = FLOOR_WORDS  # counted with the sure drops
        row.update({"rationale": doc_rationale(run, d), "doc_id": d.get("doc_id", "")})
        rows.append(row)
    return rows


def floor_ranks_words(rows: list[dict[str, Any]]) -> str:
    """Which rows of :func:`ranked_rows` have no passage close enough to the condition
    (:data:`FLOOR_WORDS`, below the similarity floor), in words
    ("ranks 11-15", "rank 9", "ranks 3, 7-9"); ``""`` when none does."""
    ranks = sorted(int(r["rank"]) for r in rows
                   if r.get("rank") is not None and r.get("certainty") == FLOOR_WORDS)
    if not ranks:
        return ""
    spans, start = [], ranks[0]
    for prev, cur in zip(ranks, ranks[1:] + [None]):
        if cur != prev + 1:
            spans.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(spans)


def ranked_column_config(columns: list[str]) -> dict:
    """Column settings of a ranked table: the decision columns at their fixed widths
    (:data:`RANKED_COLUMN_WIDTHS`), so they fit the half-width frame."""
    helps = {"score": ("evidence score: how far a document's passages stand above the collection's typical "
                       "closeness to the condition, in meaning and in its distinctive words (robust z units: "
                       "distance from the median in units of the spread). It ranks the documents for this "
                       "condition only: a score of one condition is not comparable with a score of another, and a "
                       "high score on a condition nothing meets is still the best of the rest."),
             "strategies": STRATEGIES_HELP,
             "by score": "inside the cut of the evidence-score ranking (the slider)", "certainty": CERTAINTY_WORDS}
    out: dict = {"rationale": st.column_config.TextColumn("rationale", width="large")}
    for c in columns:
        w = RANKED_COLUMN_WIDTHS.get(c)
        if c == "certainty":
            out[c] = st.column_config.TextColumn(c, help=helps[c])
        if w is None:
            continue
        if c == "score":
            out[c] = st.column_config.NumberColumn(c, format="%.2f", width=w, help=helps[c])
        elif c == "rank":
            out[c] = st.column_config.NumberColumn(c, width=w)
        else:
            out[c] = st.column_config.TextColumn(STRATEGIES_LABEL if c == "strategies" else c, width=w,
                                                 help=helps.get(c))
    return out


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


def is_kept_cell(cell: Any) -> bool:
    """True for a ranked table's "kept" cell of a kept document (``"✓ yes"``, ``"✓ yes?"`` when
    uncertain, ``"✓ you"`` when the user's review answer decided it)."""
    return str(cell).startswith("✓")


def mark(v: Any) -> str:
    """Decision as a table cell: ``"✓ yes"``, ``"✗ no"`` or ``"–"`` (not decided / not run)."""
    if v is True:
        return "✓ yes"
    if v is False:
        return "✗ no"
    return "–"


def _tokens(doc: dict[str, Any]) -> int:
    return int(sum(int((v or {}).get("tokens") or 0) for v in (doc.get("decisions") or {}).values()))


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
        row = {"file": d.get("file", d.get("doc_id", "")), "match": mark(doc_match(run, d))}
        for c in cols:
            row[c] = mark((dec.get(c) or {}).get("decision"))
        row.update({"rationale": doc_rationale(run, d), "tokens": _tokens(d), "evidence": len(evidence_list(d)),
                    "doc_id": d.get("doc_id", "")})
        rows.append(row)
    return rows


def difference_rows(dm: Any, run_a: dict[str, Any], run_b: dict[str, Any]) -> list[dict[str, Any]]:
    """Side-by-side decisions of two runs per document, from the engine's comparison
    (``dm.compare_runs``, :func:`~docmaster_core.filtering.results.compare_runs`): file, ``A match``,
    ``B match`` (each run's deciding strategy), ``A strategies``, ``B strategies``
    (each strategy's decision in words, :func:`decisions_line`), ``differs`` (the match or a strategy decided in both runs
    differs), doc_id."""
    cols = _columns(run_a, run_b)
    rows = []
    for r in dm.compare_runs(run_a, run_b, documents=True)["documents"]:
        rows.append({"file": r["file"], "A match": mark(r["a"]), "B match": mark(r["b"]),
                     "A strategies": decisions_line(r["a_decisions"], cols),
                     "B strategies": decisions_line(r["b_decisions"], cols),
                     "differs": r["differs"], "doc_id": r["doc_id"]})
    return rows


#: Characters of each cited passage in the CSV export.
PASSAGE_CHARS = 300


def export_csv(runs: dict[str, dict[str, Any]]) -> str:
    """CSV text: one row per (configuration, document), best ranked first, with the match
    (after any cut move), whether it is uncertain (three-way decisions), the rank and
    evidence score of the deciding strategy, every strategy's decision (empty = not
    decided), rationale, tokens, evidence ids and the passages the decision cites
    (``[E3 p.5] text``, each at most ``PASSAGE_CHARS`` characters, `` | ``-separated: an
    export read without the app still shows why)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["config", "run_id", "condition", "doc_id", "file", "match", "uncertain", "rank", "evidence_score",
                *DECISION_COLUMNS,
                "rationale", "tokens", "evidence_ids", "cited_passages"])

    def cell(v: Any) -> str:
        return "" if v is None else str(bool(v)).lower()

    def cited(d: dict[str, Any], main: dict[str, Any]) -> str:
        ids = set(main.get("evidence_ids") or [])
        return " | ".join(f"[{e.get('evidence_id', '')} p.{e.get('page', '')}] "
                          + shorten(" ".join(str(e.get("text", "")).split()), PASSAGE_CHARS)
                          for e in evidence_list(d) if e.get("evidence_id") in ids)

    def by_rank(run: dict[str, Any]) -> list[dict[str, Any]]:
        def key(d: dict[str, Any]) -> tuple[int, int]:
            r = deciding(run, d).get("rank")
            return (0, int(r)) if isinstance(r, (int, float)) else (1, 0)
        return sorted(run.get("documents", []), key=key)

    for name, run in runs.items():
        for d in by_rank(run):
            dec = {k: (v or {}).get("decision") for k, v in (d.get("decisions") or {}).items()}
            main = deciding(run, d)
            rank, score = main.get("rank"), main.get("evidence_score")
            w.writerow([
                name, run.get("run_id", ""), run.get("condition", ""), d.get("doc_id", ""), d.get("file", ""),
                cell(main.get("decision")), cell(main.get("uncertain", False)), "" if rank is None else rank,
                "" if score is None else round(float(score), 4), *[cell(dec.get(c)) for c in DECISION_COLUMNS],
                doc_rationale(run, d), _tokens(d), " ".join(e.get("evidence_id", "") for e in evidence_list(d)),
                cited(d, main),
            ])
    return buf.getvalue()


def export_file_name(runs: dict[str, dict[str, Any]], ext: str) -> str:
    """The download's file name: the condition's first words and the runs' ids, so that
    two exports never share a name ("docmaster_filter_the-agreement-renews_run-8-7.csv")."""
    first = next(iter(runs.values()), {})
    words = re.findall(r"[a-z0-9]+", str(first.get("condition", "")).lower())[:5]
    ids = "-".join(str(r.get("run_id")) for r in runs.values() if r.get("run_id") is not None)
    return "_".join(["docmaster_filter", "-".join(words) or "condition", *([f"run-{ids}"] if ids else [])]) + f".{ext}"


def export_json(runs: dict[str, dict[str, Any]]) -> str:
    """JSON text of both runs as the engine writes them (``{"A": run, "B": run}``; a
    moved cut shows as ``cuts[strategy]["moved_to"]``)."""
    return json.dumps(runs, indent=2, ensure_ascii=False, default=str)


def evidence_node_ids(runs: dict[str, dict[str, Any]]) -> dict[str, list[int]]:
    """doc_id -> sorted node ids used as evidence in any run (for the tree highlight)."""
    out: dict[str, set[int]] = {}
    for run in runs.values():
        for d in run.get("documents", []):
            for e in evidence_list(d):
                nid = e.get("node_id", -1)
                if isinstance(nid, int) and nid >= 0:
                    out.setdefault(e.get("doc_id") or d.get("doc_id"), set()).add(nid)
    return {k: sorted(v) for k, v in out.items()}
