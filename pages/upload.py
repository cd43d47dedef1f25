"""Upload page: choose a workspace, drop PDFs, watch them being ingested, see the collection."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from docmaster_core.errors import DocMasterError, WorkspaceLockedError
from ui import state
from ui.ingest import (
    MINERU_SUFFIX,
    ProgressBoard,
    collection_rows,
    example_doc_ids,
    failure_rows,
    dismiss_interrupted,
    ingest_summary,
    ingest_files,
    interrupted_ingest,
    remove_now,
    save_uploads,
)
from ui.resources import allowed_root, current_docmaster, resolve_workspace
from ui.layout import page_header
from ui.text import md_escape, plural
from ui.widgets import selected_rows

W_WS = "w_upload_workspace"
W_FILES = "w_upload_files"
W_EXAMPLES = "w_upload_examples"
K_UPLOAD_GEN = "dm_upload_generation"  # bumped after each ingest from the uploader: the uploader's key


def _open_workspace() -> None:
    text = st.session_state.get(W_WS, "")
    try:
        path = resolve_workspace(text)
    except DocMasterError as e:
        state.put(state.WORKSPACE_ERROR, str(e))
        return
    state.put(state.WORKSPACE_ERROR, None)
    if str(path) != state.get(state.WORKSPACE):
        state.put(state.WORKSPACE, str(path))
        for key in (state.DOC_ID, state.FILTER_DOC):
            state.put(key, None)
        for key in (state.FILTER_RUNS, state.HIGHLIGHT, state.NODE_BY_DOC, state.HYPEREDGE_BY_DOC, state.TREE_EXPANDED):
            state.put(key, {})
        state.put(state.CHAT_DOCS, [])
        state.put(state.INGEST_RESULTS, [])


def _ingest_with_progress(dm, todo: list[Path]) -> list[dict]:
    """Ingest ``todo`` with one progress bar per document; the results become "Last upload"."""
    with st.status(f"Ingesting {plural(len(todo), 'file')} ...", expanded=True) as status:
        # the ingest runs with this page's script: a closed tab or another page stops it
        st.caption("Keep this page open until every file is done: leaving it or closing the tab stops the ingest "
                   "(the documents done so far stay; ingest the rest again).")
        board = ProgressBoard(todo)
        try:
            results = ingest_files(dm, todo, on_progress=board)
        except WorkspaceLockedError as e:
            status.update(label="Workspace busy", state="error")
            st.error(md_escape(str(e)))
            results = []
        n_fail = sum(r["status"] == "failed" for r in results)
        status.update(
            label=ingest_summary(results),
            state="error" if n_fail and n_fail == len(results) else "complete",
        )
    state.put(state.INGEST_RESULTS, results)
    return results


page_header("Upload")

root = allowed_root()
state.seed_widget(W_WS, state.get(state.WORKSPACE, ""))
st.text_input(
    "Workspace folder",
    key=W_WS,
    on_change=_open_workspace,
    help=f"A folder under {root} (set DOCMASTER_WORKSPACE_ROOT to allow another root). "
    "It is created when missing; reopening it shows its collection without re-parsing.",
)
st.caption(md_escape(f"Every page works on this workspace (the sidebar names it). To switch, type another folder under "
                     f"{root} and press Enter: an existing workspace opens with its documents; a new folder becomes an "
                     "empty workspace."))
if state.get(state.WORKSPACE_ERROR):
    st.error(md_escape(state.get(state.WORKSPACE_ERROR)), icon=":material/block:")

try:
    dm = current_docmaster()
except DocMasterError as e:
    st.error(md_escape(f"Cannot open the workspace: {e}"))
    st.stop()

stopped, journals = interrupted_ingest(dm)
# the notice goes once a new ingest starts (a newcomer saw "An earlier ingest stopped ..." above the progress of
# the ingest that was redoing it)
stopped_notice = st.empty()
resume = False
if stopped:  # a closed tab stopped an ingest: said, and resumable from the saved uploads
    names = ", ".join(p.name for p in stopped[:5]) + (f" and {len(stopped) - 5} more" if len(stopped) > 5 else "")
    with stopped_notice.container():
        st.warning(md_escape(f"An earlier ingest stopped before it finished (its page was left or its tab closed): "
                             f"{plural(len(stopped), 'file')} not ingested: {names}. The documents done before it "
                             "stopped are in the collection below."), icon=":material/warning:")
        c1, c2 = st.columns([1, 1])
        resume = c1.button(f"Ingest the {plural(len(stopped), 'remaining file')}", key="w_upload_resume",
                           type="primary")
        if c2.button("Forget it", key="w_upload_dismiss"):
            dismiss_interrupted(journals)
            st.rerun()
if resume:
    stopped_notice.empty()
    dismiss_interrupted(journals)
    _ingest_with_progress(dm, stopped)
    st.rerun()

max_mb = int(st.get_option("server.maxUploadSize"))
# after an ingest the uploader starts empty (a new key): the files are in the workspace, and an
# "Ingest N files" button left under them would only offer to ingest them again
gen = int(st.session_state.get(K_UPLOAD_GEN, 0))
files = st.file_uploader(
    "PDF files (and MinerU `*_content_list.json` files)",
    type=["pdf", "json"],
    accept_multiple_files=True,
    key=W_FILES if not gen else f"{W_FILES}_{gen}",
    help=f"Drag and drop many files at once. Each file may be at most {max_mb} MB "
    "(server.maxUploadSize in .streamlit/config.toml).",
)
st.caption(
    f"Upload limit: {max_mb} MB per file (change `server.maxUploadSize` in `.streamlit/config.toml`). "
    f"Documents over {dm.settings.parsing.max_file_mb:g} MiB or "
    f"{dm.settings.parsing.page_limit} pages are refused by the parser."
)

if files:
    limit = max_mb * 1024 * 1024
    for f in files:
        if f.size > limit:
            st.error(md_escape(f"{f.name}: {f.size / 2**20:.1f} MB exceeds the {max_mb} MB upload limit"))
    usable = [f for f in files if f.size <= limit]
    if st.button(f"Ingest {plural(len(usable), 'file')}", type="primary", disabled=not usable, key="w_upload_ingest"):
        saved = save_uploads(dm.path / "uploads", ((f.name, f.getvalue()) for f in usable))
        # a content list whose PDF is in the same batch is picked up by the parser beside it
        pdf_stems = {p.name[:-4] for p in saved if p.suffix.lower() == ".pdf"}
        todo = [p for p in saved if not (p.name.endswith(MINERU_SUFFIX) and p.name[: -len(MINERU_SUFFIX)] in pdf_stems)]
        stopped_notice.empty()
        if _ingest_with_progress(dm, todo):  # (a busy workspace ingests nothing: its error and the files stay)
            st.session_state[K_UPLOAD_GEN] = gen + 1
            st.rerun()  # the uploader empties; "Last upload" below says what happened

n_docs = len(dm.documents())
with st.container(border=not n_docs):
    if not n_docs:
        st.markdown("**No PDFs at hand?** Load three small example documents the app makes itself (a paper, a "
                    "manual and a report, with sections, tables, figures and equations) to try every page.")
    if st.button("Load an example collection", icon=":material/auto_stories:", key=W_EXAMPLES,
                 type="primary" if not n_docs else "secondary"):
        from docmaster_core.examples import EXAMPLE_CONDITION, EXAMPLE_QUESTION, write_examples

        results = _ingest_with_progress(dm, write_examples(dm.path / "uploads" / "examples"))
        if any(r["status"] != "failed" for r in results):
            if not state.get(state.FILTER_CONDITION):
                state.put(state.FILTER_CONDITION, EXAMPLE_CONDITION)  # the Filter page opens with it
            st.success(md_escape(f"Examples loaded. Try the Filter page with \"{EXAMPLE_CONDITION}\" and ask the "
                                 f"Chat \"{EXAMPLE_QUESTION}\""), icon=":material/check_circle:")

last = state.get(state.INGEST_RESULTS) or []
if last:
    st.subheader("Last upload")
    st.caption(md_escape(ingest_summary(last)))
    for r in last:
        if r["status"] == "failed":
            st.error(md_escape(r["reason"] or Path(r["file"]).name), icon=":material/error:")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "file": Path(r["file"]).name,
                    "status": r["status"],
                    "pages": r["pages"],
                    "nodes": r["nodes"],
                    "seconds": round(r["timings"].get("total", sum(r["timings"].values()) if r["timings"] else 0.0), 1),
                    "note": r["reason"],
                }
                for r in last
            ]
        ),
        hide_index=True,
        width="stretch",
        column_config={"note": st.column_config.TextColumn("note", width="large")},
    )
    for r in last:  # a note is read whole here, not cut in its cell
        if r["status"] != "failed" and r["reason"]:
            st.caption(md_escape(f"{Path(r['file']).name}: {r['reason']}"))

st.subheader("Collection")
notice = state.get(state.REMOVE_NOTICE) or {}
if notice.get("text"):
    (st.success if notice.get("ok") else st.error)(md_escape(notice["text"]))
    state.put(state.REMOVE_NOTICE, {**notice, "text": ""})  # said once
rows = collection_rows(dm)
if rows:
    df = pd.DataFrame(rows)
    c1, c2, c3 = st.columns(3)
    c1.metric("Documents", len(df))
    c2.metric("Pages", int(df["pages"].sum()))
    c3.metric("Nodes", int(df["nodes"].sum()))
    st.caption("Newest first. Tick rows to remove documents from the workspace.")
    # sized to fit the frame (~900 px at a 1400 px window): the doc_id stays in the data, not on screen
    small = {c: st.column_config.NumberColumn(c, width=46) for c in
             ("pages", "nodes", "titles", "texts", "tables", "images", "equations")}
    event = st.dataframe(df, hide_index=True, width="stretch", key=f"w_upload_collection_{notice.get('gen', 0)}",
                         on_select="rerun", selection_mode="multi-row",
                         column_order=[c for c in df.columns if c != "doc_id"],
                         column_config={"file": st.column_config.TextColumn("file", width=180),
                                        "title": st.column_config.TextColumn("title", width=150),
                                        "added": st.column_config.TextColumn("added", width=110),
                                        "parser": st.column_config.TextColumn("parser", width=60),
                                        "status": st.column_config.TextColumn("status", width=60), **small})
    picked = [rows[i]["doc_id"] for i in selected_rows(event) if i < len(rows)]
    examples = example_doc_ids(dm)
    b1, b2, _ = st.columns([1, 1, 2])
    with b1:
        if st.button(f"Remove {len(picked)} selected" if picked else "Remove selected", key="w_upload_remove",
                     icon=":material/delete:", disabled=not picked,
                     help="Removes the ticked documents with their nodes, vectors and indexes (asks first)."):
            state.put(state.REMOVE_PENDING, picked)
    with b2:
        if examples:
            st.button("Remove the example documents", key="w_upload_remove_examples", icon=":material/layers_clear:",
                      on_click=remove_now, args=(examples,),
                      help="Removes the three generated example documents; your own documents stay.")
    by_id = {r["doc_id"]: r["file"] for r in rows}
    pending = [d for d in state.get(state.REMOVE_PENDING) or [] if d in by_id]
    if pending:
        with st.container(border=True):
            st.warning(md_escape(f"Remove {plural(len(pending), 'document')} from the workspace: "
                                 + "; ".join(by_id[d] for d in pending[:10]) + (" ..." if len(pending) > 10 else "")
                                 + "? Their nodes, vectors and indexes are deleted; saved filter runs keep their "
                                 "names. The uploaded files stay in the workspace folder."))
            y, n, _ = st.columns([1, 1, 4])
            y.button("Remove", type="primary", key="w_upload_remove_confirm", on_click=remove_now, args=(pending,))
            if n.button("Cancel", key="w_upload_remove_cancel"):
                state.put(state.REMOVE_PENDING, [])
                st.rerun()
elif files:  # (also what stays on screen, faded, while they are being ingested: not "no documents yet")
    chosen = "the chosen file is" if len(files) == 1 else f"the {len(files)} chosen files are"
    st.info(f"The collection is empty until {chosen} ingested (the **Ingest** button above; each file's progress "
            "shows under it).")
else:
    st.info("No documents yet: drop PDFs above (or browse for them); an **Ingest** button appears under the chosen "
            "files.")
fails = failure_rows(dm)
if fails:
    with st.expander(f"{plural(len(fails), 'file')} could not be ingested (upload a fixed copy to try again)"):
        st.dataframe(pd.DataFrame(fails), hide_index=True, width="stretch")
