"""Filter: a natural-language condition decided per document by two configurations side
by side (tree / semantic / hyper-edge / combined), with evidence, differences and export."""
from __future__ import annotations

import time
from functools import partial

import pandas as pd
import streamlit as st

from docmaster_core.errors import DocMasterError
from docmaster_core.filtering.decider import DEFAULT_CALIBRATION
from ui import state
from ui.indexing import build_document_index, stored_index_docs, wait_for_saves
from ui.filtering import (
    CERTAINTY_WORDS,
    FLOOR_WORDS,
    STRATEGIES_HELP,
    STRATEGIES_LABEL,
    STRATEGY_WORDS,
    decisions_line,
    difference_rows,
    doc_match,
    doc_title,
    evidence_list,
    evidence_node_ids,
    export_csv,
    export_file_name,
    export_json,
    floor_ranks_words,
    is_offline_run,
    is_kept_cell,
    mark_removed,
    ranked_column_config,
    ranked_rows,
    render_filter_form,
    restored_words,
    run_cut,
    run_filter,
    saved_page_runs,
    warm_filter,
    candidates_line,
)
from ui.render import render_evidence, render_page_image
from ui.review import APPLY_ANSWERS, answers_not_applied, count_line, decided_by_user, render_review
from ui.layout import page_header
from ui.text import md_escape, shorten
from ui.widgets import documents_or_stop, open_docmaster_or_stop, open_in_tree, selected_rows

W_COND = "w_filter_condition"
W_DOC = "w_filter_doc"
W_WHICH = "w_filter_which"
W_PAGE = "w_filter_page"
W_BOXES = "w_filter_boxes"
W_KEPT_ONLY = "w_filter_kept_only"
W_RESTORED = "dm_filter_restored_ws"  # workspace whose last condition was restored
W_SHOWN_RUNS = "dm_filter_shown_runs"  # (config, run id, condition, time) of the runs the evidence panel follows


page_header("Filter")
dm = open_docmaster_or_stop()
docs = documents_or_stop(dm)
by_id = {d.doc_id: d for d in docs}

# a new browser session (e.g. after a reload) starts from the last saved run: its condition, and its
# results when the Filter page made it
restored, restored_runs, restored_at = None, {}, None
if not state.get(state.FILTER_CONDITION) and W_COND not in st.session_state \
        and st.session_state.get(W_RESTORED) != str(dm.path):
    st.session_state[W_RESTORED] = str(dm.path)
    last = dm.last_run_params("filter")
    if last and last[1].get("condition"):
        restored = last[0]
        state.put(state.FILTER_CONDITION, str(last[1]["condition"]))
        if not state.get(state.FILTER_RUNS):
            restored_runs, restored_at = saved_page_runs(dm)
            if restored_runs:
                state.put(state.FILTER_RUNS, restored_runs)
                state.put(state.HIGHLIGHT, evidence_node_ids(restored_runs))
state.seed_widget(W_COND, state.get(state.FILTER_CONDITION, ""))
condition = st.text_area(
    "Condition",
    key=W_COND,
    height=80,
    placeholder=("e.g. \"The paper reports an evaluation on a public benchmark dataset.\" or \"The contract caps "
                 "liability at the fees paid.\""),
    help="Each document is kept when it satisfies this condition.",
)
state.put(state.FILTER_CONDITION, condition)
if restored_runs:
    st.caption(md_escape(restored_words(restored_runs, restored_at, set(by_id))))
elif restored is not None:
    st.caption(f"Condition of the last saved run (#{restored}) restored; press \"Run filter with A and B\" to see its decisions "
               "(unchanged evidence is decided again from the cache).")

col_a, col_b = st.columns(2, gap="large")
with col_a, st.container(border=True):
    cfg_a = render_filter_form("A", "Configuration A", dm)
with col_b, st.container(border=True):
    cfg_b = render_filter_form("B", "Configuration B", dm)

warm_filter(dm, [cfg_a, cfg_b])  # corpus view and hyper-edges loaded in the background while the user types

#: What the export buttons give (a newcomer asked where the files go and whether answers are in them).
EXPORT_HELP = ("Your browser saves the file to its downloads folder. One row per configuration and document, as "
               "shown: kept or not (after your cut), rank, score, each way's decision and the passages cited. A "
               "document your review answered shows the decision your answer made once applied; the answers "
               "themselves are exported under the review (Your answers).")

c_run, c_build = st.columns([1, 3], vertical_alignment="center")
with c_run:
    run_clicked = st.button("Run filter with A and B", type="primary", icon=":material/filter_alt:",
                            disabled=not condition.strip(), key="w_filter_run")
    # the review's "Apply my answers" runs A and B again for the same condition
    run_clicked = bool(st.session_state.pop(APPLY_ANSWERS, False) and condition.strip()) or run_clicked
with c_build:
    build_missing = st.checkbox(
        "Build the passage groups the configurations' topic settings need first",
        value=True,
        key="w_filter_build_missing",
        help="Each configuration's passage groups (the hyper-edges the *groups* way searches) are built for its "
        "topic settings (alpha, k, K, w). Ticked: groups missing for these settings are built before the run (a "
        "few seconds per document the first time). Unticked: a document without them is searched with groups of "
        "similar passages made on the fly, which can rank it differently.",
    )
if run_clicked:
    runs: dict = {}
    with st.status("Filtering ...", expanded=True) as status:
        # B runs first and A last, so A is the workspace's last saved filter run: "the last
        # filter" that the Chat page and `docmaster ask` answer from
        for name, cfg in (("B", cfg_b), ("A", cfg_a)):
            if not cfg["strategies"]:
                st.warning(f"Configuration {name} has no strategy selected; skipped.")
                continue
            ip = {k: cfg[k] for k in ("alpha", "k", "K", "w")}
            if build_missing and {"hyperedge", "combined"} & set(cfg["strategies"]):
                wait_for_saves(dm)
                have = stored_index_docs(dm, ip)
                missing = [d for d in docs if d.doc_id not in have]
                if missing:
                    bar = st.progress(0.0, text=f"Configuration {name}: indexing {len(missing)} document(s)")
                    for i, d in enumerate(missing):
                        try:
                            build_document_index(dm, d.doc_id, ip)
                        except DocMasterError as e:
                            st.warning(md_escape(f"{d.file_name}: index not built ({e})"))
                        bar.progress((i + 1) / len(missing), text=f"Configuration {name}: indexed {shorten(d.file_name, 40)}")
            st.write(f"Configuration {name}: ways {', '.join(STRATEGY_WORDS.get(x, x) for x in cfg['strategies'])} "
                     f"(decide by {STRATEGY_WORDS.get(cfg['decide_by'], cfg['decide_by'])}), {cfg['top_k']} passages "
                     f"per way, weight of deep sections {cfg['gamma']}")
            t0 = time.perf_counter()
            try:
                runs[name] = run_filter(dm, condition.strip(), cfg, name=name)
            except DocMasterError as e:
                st.error(md_escape(f"Configuration {name} failed: {e}"))
                continue
            st.write(f"… {len(runs[name].get('documents', []))} documents in {time.perf_counter() - t0:.1f} s")
        status.update(label=f"Filter done ({', '.join(sorted(runs)) or 'no run'})", state="complete" if runs else "error")
    runs = {n: runs[n] for n in ("A", "B") if n in runs}
    state.put(state.FILTER_RUNS, runs)
    state.put(state.HIGHLIGHT, evidence_node_ids(runs))

runs = state.get(state.FILTER_RUNS) or {}
if not runs:
    st.info("Press \"Run filter with A and B\" to decide this condition for every document." if condition.strip()
            else "Enter a condition and run the filter.")
    st.stop()

# the evidence panel follows the current runs: after a new run it opens that run's best
# document, not the one picked in the previous run
runs_token = tuple((n, r.get("run_id"), r.get("condition"), (r.get("timings") or {}).get("total"))
                   for n, r in runs.items())
if st.session_state.get(W_SHOWN_RUNS) != runs_token:
    st.session_state[W_SHOWN_RUNS] = runs_token
    for k in (W_DOC, W_WHICH, W_PAGE, W_BOXES, "dm_filter_picked", "w_filter_page_for"):
        st.session_state.pop(k, None)
    state.put(state.FILTER_DOC, None)

cond_shown = next(iter(runs.values())).get("condition", "")
st.caption(md_escape(f"Results for: {cond_shown}"))

# ---------------------------------------------------------------- ranked documents, movable cut
n_new_answers = answers_not_applied(next(iter(runs.values())), dm.answers(cond_shown)) if cond_shown else 0
if n_new_answers:
    st.info(f"{n_new_answers} of your review answers are not in these tables yet (given after this run): press "
            "**Run filter with A and B** (or **Apply my answers** in the review below) to apply them; every later "
            "run uses them.")
kept_only = st.toggle("Kept documents only", key=W_KEPT_ONLY,
                      help="Hide the documents that the cut (or the model) did not keep.")
if any(r.get("run_id") is not None for r in runs.values()):  # "A became run #16 after 3 runs" (a newcomer)
    st.caption("Run numbers count the filter runs saved in this workspace (each press of Run filter saves B, then "
               "A; applying your review answers runs both again). When Chat is set to answer from the documents "
               "kept by the last filter run, it uses the newest one (the highest number).")
res_cols = st.columns(len(runs), gap="large")
shown_runs: dict = {}
floors: dict[str, str] = {}  # each configuration's ranks below the similarity floor (for the reading note)
for col, (name, run) in zip(res_cols, runs.items()):
    with col:
        n_docs = len(run.get("documents", []))
        cut = run_cut(run)
        suggested = int(cut.get("kept", sum(doc_match(run, d) is True for d in run.get("documents", []))))
        key = f"w_filter_cut_{name}_{run.get('run_id')}"
        state.seed_widget(key, suggested)
        all_answered = n_docs > 0 and decided_by_user(run) == n_docs  # the cut decides nothing left
        kept_n = st.slider(
            f"Configuration {name}: keep the top N documents by evidence score", 0, max(n_docs, 1), key=key,
            disabled=all_answered,
            help=("Your review answers decide every document of this run, so the cut by score does not apply."
                  if all_answered else
                  f"Documents are ranked by their offline evidence score; the suggested cut keeps those with at least "
                  f"{DEFAULT_CALIBRATION.rel_rho:g} x the best document's score. Moving the cut re-uses this run: "
                  "nothing is retrieved again."),
        )
        shown = dm.move_cut(run, kept_n if kept_n != suggested else None)  # the engine moves the cut
        shown_runs[name] = shown
        if cut.get("none_meets") and kept_n == suggested:
            st.warning(f"Configuration {name}: no document of this collection meets this condition (none holds a "
                       "passage close in meaning to it or uses its distinctive words), so nothing is kept; the "
                       "closest documents are listed as uncertain.")
        # the Chat page names runs by number; B is saved first, then A (a newcomer read "A #2, B #1" as an error)
        run_no = f" (run #{run['run_id']}{', saved after B' if name == 'A' and len(runs) > 1 else ''})" \
            if run.get("run_id") is not None else ""
        st.markdown(f"Configuration {name}{run_no} · " + count_line(run, shown, kept_n, suggested, DEFAULT_CALIBRATION.rel_rho)
                    + ("" if is_offline_run(run) else f" (decided by {md_escape(run.get('backend', ''))}; the top "
                       f"{kept_n} by score shown beside)"))
        if run.get("review"):
            st.caption(md_escape(f"LLM review: checked {run['review']['checked']} of {n_docs}; "
                                 f"{run['review']['promise']}"))
        if candidates_line(run):
            st.caption(candidates_line(run))
        rows, n_removed = mark_removed(ranked_rows(shown), set(by_id))
        if n_removed:
            st.caption(f"{n_removed} document(s) of this run have been removed from the workspace since (marked "
                       "\"removed\"); run the filter again for the current collection.")
        if kept_only:
            rows = [r for r in rows if is_kept_cell(r["kept"])]
        if not rows:
            st.caption("No document kept.")
            continue
        df = pd.DataFrame(rows).drop(columns=["doc_id"])
        df["file"] = df["file"].map(lambda f: shorten(f, 48))
        # the document's title after its decision: "cuad-039_emmiscommu…" alone named no contract (a newcomer); the
        # decision columns stay first, in view in the half-width table
        df.insert(int(df.columns.get_loc("strategies")) + 1, "title", [doc_title(by_id, r["doc_id"]) for r in rows])

        def _cut_line(row):
            return ["background-color: #ecfdf5" if is_kept_cell(row["kept"]) else "" for _ in row]

        styled = df.style.apply(_cut_line, axis=1).format({"score": "{:.2f}"}, na_rep="")
        table_key = f"w_filter_table_{name}_{run.get('run_id')}_{int(kept_only)}"
        event = st.dataframe(styled, hide_index=True, width="stretch", height=min(38 + 35 * len(rows), 460),
                             on_select="rerun", selection_mode="single-row", key=table_key,
                             column_config=ranked_column_config(list(df.columns)))
        picked = selected_rows(event)
        marker = (table_key, tuple(picked))
        if picked and picked[0] < len(rows) and st.session_state.get("dm_filter_picked") != marker:
            st.session_state["dm_filter_picked"] = marker  # a click picks the document for the evidence view once
            st.session_state[W_DOC] = rows[picked[0]]["doc_id"]
            st.session_state[W_WHICH] = name
        floors[name] = floor_ranks_words(rows)
# how to read the tables: once under both (a newcomer read the same 150 words under A and again under B)
if floors:
    floor = "; ".join(f"{n}: {f}" for n, f in floors.items() if f) if len(floors) > 1 else next(iter(floors.values()))
    st.caption("How to read the tables: kept documents first, each group by evidence score; documents whose passages "
               "are too weakly similar to the condition (\"" + FLOOR_WORDS + "\"" + (f": here {floor}" if floor
               else "") + ") rank after all others whatever their score. Tick a row's box to see its evidence below; "
               "green rows are kept (inside the cut, or matches by your answers). \"" + STRATEGIES_LABEL + "\" counts, "
               "for comparison, how many ways of finding evidence would keep the document on their own; \"kept\" "
               "follows the one way chosen in \"Decide by\" (or your answer), so a document can be dropped with 3 of 4 "
               "and kept with 1 of 4. Certainty: " + CERTAINTY_WORDS)

# ---------------------------------------------------------------- differences
if len(shown_runs) == 2:
    comp = pd.DataFrame(difference_rows(dm, shown_runs["A"], shown_runs["B"]))
    kept_differs = comp["A match"] != comp["B match"]  # the kept sets, after any cut move
    n_diff = int(kept_differs.sum())
    st.subheader(f"Differences between A and B: {n_diff} document(s) kept by one only")
    if n_diff:
        show = comp[kept_differs].copy()
        show.insert(int(show.columns.get_loc("file")) + 1, "title", [doc_title(by_id, d) for d in show["doc_id"]])
        show = show.drop(columns=["doc_id", "differs"])
        show["file"] = show["file"].map(lambda f: shorten(f, 48))
        st.dataframe(show, hide_index=True, width="stretch",
                     column_config={f"{c} strategies": st.column_config.TextColumn(f"{c}: each way", help=STRATEGIES_HELP)
                                    for c in "AB"})
    else:
        st.caption("A and B keep the same documents.")
runs = shown_runs

# ---------------------------------------------------------------- export
# the files are written when a button is pressed, not on every run of the page (the JSON of 88 documents' evidence
# took most of a reopened Filter page's script time); pressing one does not rerun the page, so the button's file id
# stays the one the browser holds (Streamlit revokes a deferred download's id on the next run)
exp1, exp2, _ = st.columns([1, 1, 4])
with exp1:
    st.download_button("Export CSV", partial(export_csv, runs), file_name=export_file_name(runs, "csv"),
                       mime="text/csv", icon=":material/download:", help=EXPORT_HELP, on_click="ignore")
with exp2:
    st.download_button("Export JSON", partial(export_json, runs), file_name=export_file_name(runs, "json"),
                       mime="application/json", icon=":material/download:", help=EXPORT_HELP,
                       on_click="ignore")

# ---------------------------------------------------------------- the user as the oracle (issue 33)
render_review(dm, next(iter(state.get(state.FILTER_RUNS).values())), by_id)

# ---------------------------------------------------------------- evidence of one document
st.subheader("Evidence")
first_run = next(iter(runs.values()))
doc_ids = [r["doc_id"] for r in ranked_rows(first_run)]  # kept first, by score: the best kept document opens first
doc_ids = [d for d in doc_ids if d in by_id] or list(by_id)
cur = state.get(state.FILTER_DOC)
if st.session_state.get(W_DOC) not in doc_ids:
    st.session_state[W_DOC] = cur if cur in doc_ids else doc_ids[0]
c1, c2 = st.columns([3, 1])
with c1:
    doc_id = st.selectbox("Document", doc_ids, key=W_DOC, format_func=lambda i: shorten(by_id[i].file_name, 80))
with c2:
    if st.session_state.get(W_WHICH) not in runs:
        st.session_state[W_WHICH] = next(iter(runs))
    which = st.radio("Configuration", list(runs), key=W_WHICH, horizontal=True)
state.put(state.FILTER_DOC, doc_id)
rec = by_id[doc_id]
doc = next((d for d in runs[which].get("documents", []) if d.get("doc_id") == doc_id), None)
if doc is None:
    st.info("This configuration has no result for the document.")
    st.stop()

verdict = {True: "kept", False: "rejected"}.get(doc_match(runs[which], doc), "undecided")
decider_name = str(runs[which].get("strategy", ""))
st.markdown(md_escape(f"{rec.file_name}: {verdict} by {STRATEGY_WORDS.get(decider_name, decider_name)} "
                      f"({decider_name})"))
st.caption(md_escape("Each way: " + decisions_line(doc.get("decisions") or {}, list(doc.get("decisions") or {}))))
if len(doc.get("decisions") or {}) > 1:  # a newcomer read another way's score as the table's
    st.caption(md_escape(f"Each way below scores the documents on its own evidence and cuts its own ranking; the "
                         f"table's score and its uncertain band are those of "
                         f"{STRATEGY_WORDS.get(decider_name, decider_name)} ({decider_name})."))
for s_name, dec in (doc.get("decisions") or {}).items():
    if (dec or {}).get("rationale"):
        st.caption(md_escape(f"{STRATEGY_WORDS.get(s_name, s_name)} ({s_name}): {dec['rationale']}"))
for s_name, dec in (doc.get("decisions") or {}).items():
    if (dec or {}).get("error"):
        st.warning(md_escape(f"{s_name}: no decision ({dec['error']})"))
evidence = evidence_list(doc)
if st.button("Show evidence in the tree explorer", icon=":material/account_tree:", key="w_filter_to_tree"):
    open_in_tree(dm, rec, [e.get("node_id") for e in evidence])
    st.switch_page("pages/tree.py")

if not evidence:
    st.info("No evidence retrieved for this document.")
    st.stop()
left, right = st.columns([1, 1], gap="large")
with left:
    by_letter = {"T": "tree", "S": "semantic", "H": "hyperedge", "C": "combined", "F": "flat"}
    groups: dict[str, list] = {}
    for e in evidence:
        groups.setdefault(by_letter.get(str(e.get("evidence_id", "?"))[:1], "other"), []).append(e)
    names = [n for n in [*by_letter.values(), "other"] if n in groups]
    tabs = st.tabs([f"{STRATEGY_WORDS.get(n, n)} ({len(groups[n])})" for n in names])
    for tab, n in zip(tabs, names):
        with tab:
            for e in groups[n]:
                with st.container(border=True):
                    render_evidence(e)
with right:
    # one strategy's boxes at a time: all strategies together put ~25 boxes on a page
    decisive = str(runs[which].get("strategy", ""))
    if st.session_state.get(W_BOXES) not in names:
        st.session_state[W_BOXES] = decisive if decisive in names else names[0]
    shown = st.radio("Boxes of", names, key=W_BOXES, horizontal=True, format_func=lambda n: STRATEGY_WORDS.get(n, n),
                     help="Whose evidence is drawn on the page image (the run's deciding strategy first).")
    ev_shown = groups[shown]
    pages = sorted({int(e["page"]) for e in ev_shown if e.get("page")})
    if pages:
        # a newly chosen document (or configuration, or way) opens on its best passage's page,
        # not on the page number the previous one was left at
        shown_for = (doc_id, which, shown)
        if st.session_state.get("w_filter_page_for") != shown_for or st.session_state.get(W_PAGE) not in pages:
            first = next((int(e["page"]) for e in ev_shown if e.get("page")), pages[0])
            st.session_state[W_PAGE] = first
            st.session_state["w_filter_page_for"] = shown_for
        page = st.selectbox("Page", pages, key=W_PAGE,
                            format_func=lambda p: f"page {p} ({sum(int(e.get('page') or 0) == p for e in ev_shown)} passages)")
        on_page = [e for e in ev_shown if int(e.get("page") or 0) == page and e.get("bbox")]
        render_page_image(rec.source_path, page, [e["bbox"] for e in on_page], [e.get("evidence_id", "") for e in on_page],
                          caption=f"{rec.file_name} · page {page} · evidence boxes")
