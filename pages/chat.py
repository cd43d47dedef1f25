"""Chat: follow-up questions over the documents that passed the last filter (the
workspace's newest saved filter run, as for ``docmaster ask``), a chosen set or all
documents, answered with cited passages; the conversation is kept for the session."""
from __future__ import annotations

import streamlit as st

from docmaster_core.errors import DocMasterError
from ui import state
from ui.chat import ask
from ui.citations import last_filter, render_answer
from ui.layout import page_header
from ui.text import md_escape, shorten
from ui.widgets import documents_or_stop, open_docmaster_or_stop

W_SCOPE = "w_chat_scope"
W_DOCS = "w_chat_docs"
W_INPUT = "w_chat_input"


page_header("Chat")
dm = open_docmaster_or_stop()
docs = documents_or_stop(dm)
by_id = {d.doc_id: d for d in docs}
# "the last filter" is the workspace's newest saved filter run, as for `docmaster ask`
run_id, kept, cond = last_filter(dm)
passed = [d for d in kept if d in by_id]

scopes = ["filter", "chosen", "all"]
labels = {
    "filter": f"documents that passed the last filter ({len(passed)})",
    "chosen": "documents I choose",
    "all": f"all documents ({len(docs)})",
}
if st.session_state.get(W_SCOPE) not in scopes:
    st.session_state[W_SCOPE] = "filter" if run_id is not None else "all"
c1, c2 = st.columns([2, 3])
with c1:
    scope = st.radio("Answer from", scopes, key=W_SCOPE, format_func=labels.get)
with c2:
    if scope == "chosen":
        state.seed_widget(W_DOCS, [d for d in (state.get(state.CHAT_DOCS) or []) if d in by_id])
        chosen = st.multiselect("Documents", list(by_id), key=W_DOCS, format_func=lambda i: by_id[i].file_name,
                                placeholder="Choose one or more documents")
        state.put(state.CHAT_DOCS, chosen)
        scope_docs = list(chosen)
    elif scope == "filter":
        scope_docs = passed
        if run_id is None:
            st.caption("No filter run yet in this workspace: run one on the Filter page, or choose documents.")
        elif passed:
            st.caption(md_escape(f"Kept by the last saved filter run (#{run_id}, condition \"{shorten(cond, 80)}\"): "
                                 + "; ".join(by_id[d].file_name for d in passed[:8])
                                 + (f" and {len(passed) - 8} more" if len(passed) > 8 else "")))
        else:
            st.caption(md_escape(f"No document passed the last saved filter run (#{run_id})."))
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
        if msg["role"] == "assistant":
            render_answer(msg, turn)  # contiguous E1, E2 ...; markers link to their passages
        else:
            st.markdown(md_escape(msg["text"]))

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
    history.append({"role": "assistant", "text": res["text"], "citations": res["citations"],
                    "backend": res["backend"], "error": res.get("error")})
    state.put(state.CHAT_HISTORY, history)
    st.rerun()  # drawn again from the history: renumbered citations, linked markers
