"""Chat: follow-up questions over the documents that passed the last filter (or a chosen
set), answered with cited passages; the conversation is kept for the session."""
from __future__ import annotations

import streamlit as st

from docmaster_core.errors import DocMasterError
from ui import state
from ui.chat import ask, docs_from_filter
from ui.render import render_page_image, section_line
from ui.layout import page_header
from ui.text import md_escape, shorten
from ui.widgets import documents_or_stop, open_docmaster_or_stop

W_SCOPE = "w_chat_scope"
W_DOCS = "w_chat_docs"
W_INPUT = "w_chat_input"


def _show_citations(cites: list[dict], turn: int) -> None:
    for j, c in enumerate(cites):
        label = (f"[{c['evidence_id']}] {shorten(c.get('file', ''), 40)} · p. {c.get('page', '?')} · "
                 f"{shorten(section_line(c.get('section_path') or []), 50)}")
        with st.expander(md_escape(label)):
            if c.get("quote"):
                st.caption(md_escape("Quote: " + c["quote"]))
            st.markdown(md_escape(c.get("text") or "(passage text unavailable)"))
            if c.get("page") and st.toggle("Show page", key=f"w_chat_page_{turn}_{j}"):
                boxes = [c["bbox"]] if c.get("bbox") else []
                render_page_image(c.get("source_path"), int(c["page"]), boxes, [c["evidence_id"]])


page_header("Chat")
dm = open_docmaster_or_stop()
docs = documents_or_stop(dm)
by_id = {d.doc_id: d for d in docs}
runs = state.get(state.FILTER_RUNS) or {}
passed = [d for d in docs_from_filter(runs) if d in by_id]
source = "this session's filter (configuration A)"
if not runs:
    saved = dm.ws.runs("filter")
    if saved:  # a filter run saved in the workspace (e.g. before the page was reloaded)
        runs = {"saved": saved[0]["result"]}
        passed = [d for d in (saved[0]["result"].get("matches") or []) if d in by_id]
        source = f"saved filter run #{saved[0]['run_id']}"

scopes = ["filter", "chosen", "all"]
labels = {
    "filter": f"documents that passed the last filter ({len(passed)})",
    "chosen": "documents I choose",
    "all": f"all documents ({len(docs)})",
}
if st.session_state.get(W_SCOPE) not in scopes:
    st.session_state[W_SCOPE] = "filter" if runs else "all"
c1, c2 = st.columns([2, 3])
with c1:
    scope = st.radio("Answer from", scopes, key=W_SCOPE, format_func=labels.get)
with c2:
    if scope == "chosen":
        state.seed_widget(W_DOCS, [d for d in (state.get(state.CHAT_DOCS) or []) if d in by_id] or passed)
        chosen = st.multiselect("Documents", list(by_id), key=W_DOCS, format_func=lambda i: shorten(by_id[i].file_name, 60))
        state.put(state.CHAT_DOCS, chosen)
        scope_docs = list(chosen)
    elif scope == "filter":
        scope_docs = passed
        if not runs:
            st.caption("No filter run yet in this session: run one on the Filter page, or choose documents.")
        elif passed:
            st.caption(md_escape(f"From the {source}: " + "; ".join(shorten(by_id[d].file_name, 40) for d in passed[:8])
                                 + (" …" if len(passed) > 8 else "")))
        else:
            st.caption("No document passed the last filter.")
    else:
        scope_docs = list(by_id)

history = state.get(state.CHAT_HISTORY) or []
top = st.columns([5, 1])
with top[1]:
    if st.button("Clear chat", icon=":material/delete:", disabled=not history):
        state.put(state.CHAT_HISTORY, [])
        st.rerun()

for turn, msg in enumerate(history):
    with st.chat_message(msg["role"]):
        st.markdown(md_escape(msg["text"]))
        if msg["role"] == "assistant":
            if msg.get("error"):
                st.warning(md_escape(msg["error"]))
            st.caption(md_escape(f"{msg.get('backend', '')} · {len(msg.get('citations') or [])} citation(s)"))
            _show_citations(msg.get("citations") or [], turn)

question = st.chat_input("Ask about these documents", key=W_INPUT, disabled=not scope_docs)
if not scope_docs:
    st.caption("No documents in scope: choose some above.")
if question:
    history = list(history) + [{"role": "user", "text": question}]
    with st.chat_message("user"):
        st.markdown(md_escape(question))
    with st.chat_message("assistant"):
        try:
            res = ask(dm, question, scope_docs, write_stream=st.write_stream)
        except DocMasterError as e:
            res = {"text": "The question could not be answered.", "citations": [], "backend": dm.llm.backend_name,
                   "error": str(e), "streamed": False}
        if not res["streamed"]:
            st.markdown(md_escape(res["text"]))
        if res.get("error"):
            st.warning(md_escape(res["error"]))
        st.caption(md_escape(f"{res['backend']} · {len(res['citations'])} citation(s)"))
        _show_citations(res["citations"], len(history))
    history.append({"role": "assistant", "text": res["text"], "citations": res["citations"],
                    "backend": res["backend"], "error": res.get("error")})
    state.put(state.CHAT_HISTORY, history)
