"""The Filter page's *Review*: the user as the oracle of the rank-order review (issue 33).

Streamlit glue only: the rule is :mod:`docmaster_core.filtering.review`, reached through
the facade (:meth:`DocMaster.review <docmaster_core.pipeline.DocMaster.review>`,
``answer``, ``answers``, ``export_answers``). The review follows the ranking of the run
shown first (configuration A); answers are stored per condition in the workspace, so
they survive a reload, serve both configurations and every later run, and can be changed.
"""
from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ui.render import render_evidence, render_page_image
from ui.text import md_escape, shorten

__all__ = ["render_review", "count_line", "answers_not_applied", "decided_by_user", "APPLY_ANSWERS"]

_SKIPPED = "dm_review_skipped"  # {condition: [doc_id]} skipped in this browser session
APPLY_ANSWERS = "dm_filter_apply_answers"  # set by "Apply my answers": the Filter page runs A and B again
_ANSWER_LABELS = {"match": True, "no match": False, "(remove)": None}


def decided_by_user(run: dict[str, Any]) -> int:
    """How many documents of a run (dict of :func:`~docmaster_core.filtering.results.run_to_dict`)
    the user's review answers decided (its strategy's decisions with ``decided_by == "user"``)."""
    s = run.get("strategy", "combined")
    return sum(((d.get("decisions") or {}).get(s) or {}).get("decided_by") == "user" for d in run.get("documents", []))


def count_line(run: dict[str, Any], shown: dict[str, Any], kept_n: int, suggested: int, rel_rho: float = 0.35) -> str:
    """One line saying what is kept, what is uncertain on each side of the cut and what is dropped.

    Args:
        run: The run dict as decided.
        shown: The run dict after the cut was moved (``dm.move_cut``).
        kept_n: The cut (top N documents).
        suggested: The suggested cut.
        rel_rho: The suggested cut's share of the best document's score (the decider's
            ``rel_rho``), said when every kept document is uncertain.
    """
    docs = shown.get("documents", [])
    s = shown.get("strategy", "combined")
    decs = [(d.get("decisions") or {}).get(s) or {} for d in docs]
    kept = [x for x in decs if x.get("decision") is True]
    dropped = [x for x in decs if x.get("decision") is False]
    unc_k = sum(bool(x.get("uncertain")) for x in kept)
    unc_d = sum(bool(x.get("uncertain")) for x in dropped)
    users = sum(x.get("decided_by") == "user" for x in decs)
    where = "the suggested cut" if kept_n == suggested else f"your cut (suggested: top {suggested})"
    parts = [f"**kept {len(kept)} of {len(docs)} documents**"]
    offline = str(run.get("backend", "")).startswith("offline")
    if offline and users:
        rest = len(docs) - users
        parts[0] += (f" ({users} decided by your answers, the other {rest} by the top {kept_n} by evidence score, "
                     f"{where})" if rest else f" (all {users} decided by your answers)")
        no_ranks = [int(x["rank"]) for x in decs if x.get("decided_by") == "user" and x.get("decision") is False
                    and x.get("rank") is not None]
        first_no = min(no_ranks) if no_ranks else None
        unanswered_kept = sum(bool(x.get("decision") is True and x.get("decided_by") != "user"
                                   and x.get("rank") is not None and first_no is not None and int(x["rank"]) > first_no)
                              for x in decs)
        if unanswered_kept:  # kept by the cut below a document you said does not match
            # a newcomer answered "no match" for the top 3 and still saw ranks 4-5 kept: the cut counts ranks,
            # answered documents included, and an answer moves no cut
            parts[0] += (f"; your answers do not move the cut, so {unanswered_kept} document"
                         f"{'s you have not answered are' if unanswered_kept != 1 else ' you have not answered is'} "
                         "still kept by it: answer them in the review below to decide them yourself")
    elif offline:
        parts[0] += f" (the top {kept_n} by evidence score, {where})"
    if unc_k or unc_d:
        parts.append(f"{len(kept) - unc_k} sure and {unc_k} uncertain kept, {unc_d} uncertain and "
                     f"{len(dropped) - unc_d} sure dropped")
        band = (shown.get("cuts") or {}).get(s) or {}
        if unc_k and band.get("sure_yes") is not None:  # "when is a kept document sure at all?" (a newcomer)
            thr = band.get("threshold")
            kept_from = (f"kept from a score of {float(thr):.1f}, " if thr is not None
                         and float(thr) < float(band["sure_yes"]) else "")
            # "sure from 6.0" alone read as a promise (a newcomer saw 6.62 "uncertain"): say the second condition
            parts[-1] += (f" (a document is {kept_from}sure from a score of {float(band['sure_yes']):.1f} when its "
                          "passages are also close in meaning to the condition and use its distinctive words)")
        if offline and kept and unc_k == len(kept) and kept_n == suggested and not users:
            # "why does it still suggest the top 5 when no contract meets my condition?" (a newcomer)
            parts[-1] += (f"; none kept is sure: the suggested cut keeps the documents scoring at least "
                          f"{rel_rho:g} x the best one, and a collection where no document meets the condition still "
                          "has a best, so read their evidence or answer the review below before trusting the cut")
    else:
        parts.append(f"{len(dropped)} dropped")
    if users and not offline:
        parts.append(f"{users} decided by your answers")
    return " · ".join(parts)


def answers_not_applied(run: dict[str, Any], answers: dict[str, tuple[bool, str]]) -> int:
    """How many of the user's stored answers (``dm.answers(condition)``) a run shown on the
    page does not reflect yet: answers given after it ran, for its documents. They apply
    from the next run; the page says so instead of showing decisions that contradict them.
    """
    s = run.get("strategy", "combined")
    n = 0
    for d in run.get("documents", []):
        got = answers.get(d.get("doc_id"))
        if got is None:
            continue
        dec = (d.get("decisions") or {}).get(s) or {}
        if dec.get("decided_by") != "user" or dec.get("decision") is not bool(got[0]):
            n += 1
    return n


def _skipped(condition: str) -> list[str]:
    return st.session_state.setdefault(_SKIPPED, {}).setdefault(condition, [])


def render_review(dm: Any, run: dict[str, Any], by_id: dict[str, Any]) -> None:
    """The review section for the condition of ``run`` over its documents, in its ranking.

    Shows the promise before and after, the next document the rule wants checked (its
    evidence passages and their page with boxes), Match / No match / Skip buttons (keys M,
    N, S), the answers so far (editable) and a TSV export ``docmaster eval filter`` reads.
    """
    from docmaster_core.errors import DocMasterError
    from docmaster_core.filtering.results import run_evidence_nodes, run_ranking
    from docmaster_core.filtering.review import ReviewTargets, planned_calls

    condition = run.get("condition", "")
    ranking = [d for d in run_ranking(run) if d in by_id]
    if not condition or not ranking:
        return
    docs = {d["doc_id"]: d for d in run.get("documents", [])}
    st.subheader("Review: decide yourself")
    stored = len(dm.answers(condition))
    if not st.toggle("Review the documents one by one", key="w_review_on",
                     help="Answer Match / No match for the documents the review picks (keys M, N, S)."):
        if stored:
            st.caption(f"{stored} answer(s) of yours are stored for this condition; they decide those documents in "
                       "every run.")
        return
    st.caption("Read the documents the review picks and say whether each meets the condition. It asks in the order "
               "of the evidence (best first); when a stretch of documents holds no match it checks a random sample "
               "of the rest, and stops once that sample shows, with the chosen confidence, that you have found at "
               "least the target share of the matches. Your answers are kept in the workspace for this condition "
               "(its exact words, spaces aside: a reworded condition starts with no answers) and decide these documents in every later run (A and B). You may stop at any time: the documents "
               "you answered are decided by your answers, the others keep the evidence's decision, and the line "
               "below says how far the certification got.")
    c1, c2 = st.columns(2)
    with c1:
        recall = st.select_slider("Find at least this share of the matches", [0.8, 0.9, 0.95, 1.0], value=0.9,
                                  key="w_review_recall", help="The recall target the review certifies.")
    with c2:
        conf = st.select_slider("with this confidence", [0.8, 0.9, 0.95, 0.99], value=0.9, key="w_review_conf",
                                help="1 - delta: the probability that the found share really is at least the target.")
    targets = ReviewTargets(recall=float(recall), delta=round(1.0 - float(conf), 4))
    skipped = _skipped(condition)
    rv = dm.review(condition, ranking, targets, skipped, run_evidence_nodes(run))
    stt = rv.state
    n = len(ranking)
    expected = max(1, sum(bool(((docs.get(d) or {}).get("decisions") or {}).get(run.get("strategy", "combined"), {})
                               .get("decision")) for d in ranking))
    if stt.answered == 0:
        st.info(f"Certifying {recall:g} of the matches with confidence {conf:g} on {n} documents takes about "
                f"{planned_calls(n, min(expected, n), targets)} answers if about {expected} documents match and they "
                "rank first; more when matches rank low. On small collections that is most of the documents: the "
                "saving grows with the collection.")
    yes = len(rv.match_ids())
    line = f"**{stt.answered} answered · {yes} match · {stt.answered - yes} no match** · "
    if stt.certified:
        st.success(line + md_escape(stt.promise("your")))
    else:
        st.markdown(line + md_escape(stt.promise("your")))
    n_new = answers_not_applied(run, dm.answers(condition))
    if n_new:
        c_note, c_apply = st.columns([3, 1], vertical_alignment="center")
        with c_note:
            st.caption(f"{n_new} of your answers are not in the result tables above yet: they apply when A and B "
                       "run again (about as long as a filter run).")
        with c_apply:
            st.button("Apply my answers", key="w_review_apply", icon=":material/refresh:",
                      on_click=lambda: st.session_state.__setitem__(APPLY_ANSWERS, True),
                      help="Run configurations A and B again, so that your answers decide their documents.")
    pending = rv.pending_ids()
    if pending and not stt.done:
        doc_id = pending[0]
        rec = by_id[doc_id]
        d = docs.get(doc_id, {})
        dec = (d.get("decisions") or {}).get(run.get("strategy", "combined")) or {}
        where = (f"a random check of the documents not read yet ({stt.still_needed} more answers needed; all must be "
                 "'no match' to certify)" if rv.checking() else f"rank {dec.get('rank', '?')} of {n} by evidence")
        with st.container(border=True):
            st.markdown(md_escape(f"Next: {rec.file_name}") + f"  \n{md_escape(where)}")
            b1, b2, b3, keys = st.columns([1, 1, 1, 3])
            with keys:  # Streamlit gives a key to a focused switch or box, not to the buttons (a newcomer)
                st.caption("Keys M, N and S answer when no switch or text box has the focus: click an empty part "
                           "of the page first.")
            answer = None
            with b1:
                # both answers look alike: a highlighted "Match" read as the app's suggestion
                if st.button("Match", key="w_review_match", shortcut="M", icon=":material/check:"):
                    answer = True
            with b2:
                if st.button("No match", key="w_review_no", shortcut="N", icon=":material/close:"):
                    answer = False
            with b3:
                if st.button("Skip", key="w_review_skip", shortcut="S", icon=":material/skip_next:"):
                    skipped.append(doc_id)
                    st.rerun()
            if answer is not None:
                try:
                    dm.answer(condition, {doc_id: answer})
                except DocMasterError as e:
                    st.error(md_escape(f"Answer not stored: {e}"))
                else:
                    st.rerun()
            # the four passages closest to the condition, best first (the fused order interleaves the ways)
            ev = sorted((d.get("evidence") or {}).get(run.get("strategy", "combined")) or [],
                        key=lambda e: -float(e.get("score") or 0.0))[:4]
            left, right = st.columns([1, 1], gap="large")
            with left:
                if ev:  # "C5, C3, C9, C1": two newcomers asked why C1 was not first
                    st.caption("The passages closest to the condition, numbered closest first; the C-number beside "
                               "each is its place in the decision's evidence list above.")
                for i, e in enumerate(ev, 1):
                    render_evidence(e, label=f"closest {i} ({e.get('evidence_id', '')})")
            with right:
                boxed = [e for e in ev if e.get("page") and e.get("bbox")]
                if boxed:
                    page = int(boxed[0]["page"])
                    on = [e for e in boxed if int(e["page"]) == page]
                    render_page_image(rec.source_path, page, [e["bbox"] for e in on],
                                      [str(e.get("evidence_id", "")) for e in on],
                                      caption=f"{rec.file_name} · page {page} · evidence boxes")
    elif skipped and not stt.certified:
        st.caption(f"{len(skipped)} skipped document(s) are needed to finish.")
        if st.button("Ask the skipped documents again", key="w_review_unskip"):
            skipped.clear()
            st.rerun()
    _answers_table(dm, condition, rv, by_id)


def _answers_table(dm: Any, condition: str, rv: Any, by_id: dict[str, Any]) -> None:
    """The answers so far, editable, and the export."""
    from docmaster_core.errors import DocMasterError

    answers = rv.answers
    if not answers:
        return
    with st.expander(f"Your answers ({len(answers)})"):
        rows = [{"doc_id": d, "file": shorten(by_id[d].file_name, 60) if d in by_id else d,
                 "answer": "match" if v else "no match", "from": src} for d, (v, src) in answers.items()]
        df = pd.DataFrame(rows)
        edited = st.data_editor(df.drop(columns=["doc_id"]), hide_index=True, width="stretch", key="w_review_edit",
                                disabled=["file", "from"],
                                column_config={"answer": st.column_config.SelectboxColumn(
                                    "answer", options=list(_ANSWER_LABELS), required=True)})
        changed = {rows[i]["doc_id"]: _ANSWER_LABELS[a] for i, a in enumerate(edited["answer"].tolist())
                   if a != rows[i]["answer"]}
        if changed:
            try:
                dm.answer(condition, changed)
            except DocMasterError as e:
                st.error(md_escape(f"Answers not changed: {e}"))
            else:
                st.session_state.pop("w_review_edit", None)
                st.rerun()
        st.download_button("Export answers (cases TSV for docmaster eval filter)", dm.export_answers(condition),
                           file_name="docmaster_review_cases.tsv", mime="text/tab-separated-values",
                           icon=":material/download:", key="w_review_export", on_click="ignore")
        st.download_button("Export the condition (conditions TSV)",
                           "condition\ttext\nC1\t" + " ".join(condition.split()) + "\n",
                           file_name="docmaster_review_conditions.tsv", mime="text/tab-separated-values",
                           icon=":material/download:", key="w_review_export_cond", on_click="ignore")
        st.caption("Evaluate the filter against your answers: `docmaster eval filter --cases "
                   "docmaster_review_cases.tsv --conditions docmaster_review_conditions.tsv`.")
