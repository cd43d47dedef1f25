"""Chat: follow-up questions over all documents (the default), the documents kept by the
last filter run (the workspace's newest saved run, as ``docmaster ask`` without
``--all``) or a chosen set, answered with cited passages. The scope is chosen once per
session and shown above the chat input; the conversation is kept in the workspace, so a
reload shows it again ("Clear chat" empties it)."""
from __future__ import annotations

import functools

import streamlit as st

from docmaster_core.errors import DocMasterError
from ui import state
from ui.chat import SCOPES, ask, chat_scope, empty_scope_note
from ui.citations import SCOPE_SWITCHED, filter_run_words, last_filter, render_answer, search_all_later
from ui.layout import page_header
from ui.text import md_escape, shorten
from ui.widgets import documents_or_stop, open_docmaster_or_stop

W_SCOPE = "w_chat_scope"
W_DOCS = "w_chat_docs"
W_INPUT = "w_chat_input"
K_LOADED_FOR = "dm_chat_loaded_for"  # the workspace whose stored conversation this session has loaded


page_header("Chat")
dm = open_docmaster_or_stop()
docs = documents_or_stop(dm)
by_id = {d.doc_id: d for d in docs}
last = last_filter(dm)  # the workspace's newest saved filter run, as for `docmaster ask`
n_passed = sum(d in by_id for d in last[1])

labels = {
    "all": f"all documents ({len(docs)})",
    "filter": (f"documents kept by the last filter run ({n_passed}; \"{shorten(last[2], 40)}\")" if last[0] is not None
               else "documents kept by the last filter run (none yet)"),
    "chosen": "documents I choose",
}
# the choice is the session's (state.CHAT_SCOPE): the widget's own key goes on a page switch
state.seed_widget(W_SCOPE, state.get(state.CHAT_SCOPE) if state.get(state.CHAT_SCOPE) in SCOPES else "all")
c1, c2 = st.columns([2, 3])
with c1:
    scope = st.radio("Answer from", list(SCOPES), key=W_SCOPE, format_func=labels.get)
state.put(state.CHAT_SCOPE, scope)
chosen: list[str] = []
with c2:
    if scope == "chosen":
        state.seed_widget(W_DOCS, [d for d in (state.get(state.CHAT_DOCS) or []) if d in by_id])
        # typing part of a file name lists the files that contain it; no "select all matches" action
        chosen = st.multiselect("Documents", list(by_id), key=W_DOCS, format_func=lambda i: by_id[i].file_name,
                                placeholder="Choose one or more documents", filter_mode="contains",
                                select_all=False)
        state.put(state.CHAT_DOCS, chosen)
        if chosen:  # the chips cut long file names: the full names once, below
            st.caption(md_escape("Chosen: " + "; ".join(by_id[d].file_name for d in chosen[:8])
                                 + (f" and {len(chosen) - 8} more" if len(chosen) > 8 else "")))
    elif scope == "filter" and last[0] is not None:
        kept = [d for d in last[1] if d in by_id]
        run_words = filter_run_words(dm, last[0])
        st.caption(md_escape(f"{run_words[:1].upper()}{run_words[1:]}, condition \"{shorten(last[2], 80)}\": "
                             + ("; ".join(by_id[d].file_name for d in kept[:8])
                                + (f" and {len(kept) - 8} more" if len(kept) > 8 else "") if kept
                                else "it kept no document" if not last[1]
                                else "the documents it kept are no longer in the workspace")))
sc = chat_scope(scope, list(by_id), chosen, last)

# the conversation is kept in the workspace: a reload (a new session) shows it again
if st.session_state.get(K_LOADED_FOR) != str(dm.path):
    st.session_state[K_LOADED_FOR] = str(dm.path)
    state.put(state.CHAT_HISTORY, dm.chat_log())
history = state.get(state.CHAT_HISTORY) or []


def _save(messages: list) -> None:
    try:
        dm.save_chat_log(messages)
    except OSError as e:
        st.warning(md_escape(f"The conversation could not be saved in the workspace ({e}); it is kept for this "
                             "session only."))


top = st.columns([5, 1])
with top[1]:
    if st.button("Clear chat", icon=":material/delete:", disabled=not history):
        state.put(state.CHAT_HISTORY, [])
        _save([])
        st.rerun()

search_all = functools.partial(search_all_later, scope_widget=W_SCOPE)
for turn, msg in enumerate(history):
    with st.chat_message(msg["role"]):
        if msg["role"] == "assistant":
            # contiguous E1, E2 ...; linked markers; no "Search all" once the scope is all documents
            render_answer(msg, turn, on_search_all=search_all if sc["scope"] != "all" else None)
        else:
            st.markdown(md_escape(msg["text"]))

switched = sc["scope"] == "all" and st.session_state.get(SCOPE_SWITCHED)
if sc["scope"] != "all":
    st.session_state.pop(SCOPE_SWITCHED, None)
st.caption(md_escape(f"Answering from: {sc['label']}")
           + (" (switched by \"Search all documents\"; it stays so until you choose another scope above)"
              if switched else ""))
if len(sc["doc_ids"]) > 1:  # a newcomer saw "all 15 documents" here and "answered from X (named)" below
    st.caption("A question that names some of them (a title, a party, a company, the file name) is answered from "
               "those; the answer says which. A follow-up that says \"it\" or \"this agreement\" and names no "
               "other stays with the documents named just before.")
if dm.llm.is_offline:  # "can offline Chat give short direct answers?" (a newcomer)
    st.caption("Offline answers quote the sentences of the documents that best match what is asked; they compose "
               "no short answer of their own. With an OpenAI-compatible model set up (README, *LLM backends*) the "
               "same passages go to the model, which writes the answer and cites them.")
empty = empty_scope_note(sc)
if empty:  # the input below is off: say why beside it, and offer every document
    st.info(empty, icon=":material/info:")
    st.button(f"Search all {sc['n_all']} documents", key="w_chat_scope_to_all", icon=":material/search:",
              on_click=search_all, args=(None,))
# off while a question is answered: a question sent meanwhile restarted the run, and the one being answered
# was never recorded (a newcomer lost one; tests/test_app_browser.py)
question = st.chat_input("Ask about these documents", key=W_INPUT, disabled=not sc["doc_ids"], submit_mode="disable")
pending = state.get(state.CHAT_PENDING)
if pending:
    state.put(state.CHAT_PENDING, None)
    question = question or pending
if question and sc["doc_ids"]:
    history = list(history) + [{"role": "user", "text": question}]
    with st.chat_message("user"):
        st.markdown(md_escape(question))
    with st.chat_message("assistant"):
        try:
            # a follow-up ("Can it be terminated?") continues with the documents the last answer was named from
            prev = next((m for m in reversed(history[:-1]) if m["role"] == "assistant"), {})
            res = ask(dm, question, sc["doc_ids"], write_stream=st.write_stream, follow=prev.get("routed"))
        except DocMasterError as e:
            res = {"text": "The question could not be answered.", "citations": [], "closest": [],
                   "outcome": "error", "backend": dm.llm.backend_name, "error": str(e), "streamed": False}
    history.append({"role": "assistant", "text": res["text"], "citations": res["citations"],
                    "closest": res.get("closest") or [], "outcome": res.get("outcome"), "backend": res["backend"],
                    "error": res.get("error"), "question": question, "scope": sc["scope"],
                    "scope_label": res.get("named_scope") or sc["label"], "n_scope": res.get("n_named") or sc["n"],
                    "n_all": sc["n_all"], "n_chosen": sc["n"], "named_outside": res.get("named_outside") or [],
                    "routed": res.get("routed") or []})
    state.put(state.CHAT_HISTORY, history)
    _save(history)
    st.rerun()  # drawn again from the history: renumbered citations, linked markers
