"""Chat answers on screen: contiguous citation numbers, clickable [E1] markers, the
cited passages with their page images, and "the last filter" the chat answers from.

The engine numbers passages ``E1..En`` in retrieval order, so an answer may cite
``[E1] [E7] [E2]``. For display the citations are renumbered ``E1, E2, E3`` in
first-use order (:func:`renumber`); the stored answer is unchanged. Each marker in the
answer becomes a Markdown link to its citation's anchor (:func:`linked_answer`), and
the Sources control under the answer opens a cited passage with its page image and box.
All document text is escaped (:func:`ui.text.md_escape`); the only HTML written is an
empty anchor element carrying an id made of the turn number and the citation number.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import streamlit as st

from .render import render_page_image, section_line
from .text import md_escape

__all__ = ["renumber", "anchor_id", "linked_answer", "render_answer", "last_filter", "filter_run_words",
           "search_all_later", "SCOPE_SWITCHED"]

#: Session key: the chat scope was switched to all documents by "Search all documents".
SCOPE_SWITCHED = "dm_chat_scope_switched"

_MARK = re.compile(r"\[(E\d+)\]")
_ESCAPED_MARK = re.compile(r"\\\[(E\d+)\\\]")


def renumber(text: str, citations: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Citation ids made contiguous in first-use order, for display.

    Args:
        text: The answer with ``[E7]``-style markers.
        citations: Citation dicts with ``"evidence_id"`` (see :func:`ui.chat.citation_dicts`).

    Returns:
        ``(text, citations)``: markers rewritten ``E1, E2, ...`` in the order the text
        first uses them; citations in that order with ``"evidence_id"`` renumbered and
        the engine's id kept as ``"source_id"``. Citations the text does not mention
        follow, numbered on; markers of unknown ids are left as they are. A passage the
        engine cited once per page (it runs over two pages) is one citation here, its
        quotes joined, its first page as ``"page"`` and all of them as ``"pages"``.
    """
    order: list[str] = []
    known = {c.get("evidence_id") for c in citations}
    for m in _MARK.findall(text or ""):
        if m in known and m not in order:
            order.append(m)
    order += [c.get("evidence_id") for c in citations if c.get("evidence_id") not in order]
    new = {old: f"E{i}" for i, old in enumerate(order, 1)}
    text2 = _MARK.sub(lambda m: f"[{new.get(m.group(1), m.group(1))}]", text or "")
    by_old: dict[str, dict[str, Any]] = {}
    for c in citations:
        o = c.get("evidence_id")
        if o not in by_old:
            by_old[o] = {**c, "pages": [c.get("page")]}
            continue
        have = by_old[o]
        have["quote"] = " ".join(q for q in (have.get("quote"), c.get("quote")) if q)
        if c.get("page") not in have["pages"]:
            have["pages"].append(c.get("page"))
    cites = [{**by_old[o], "evidence_id": new[o], "source_id": o} for o in order if o in by_old]
    return text2, cites


def anchor_id(turn: int, evidence_id: str) -> str:
    """The page anchor of a citation of a chat turn, e.g. ``"cite-3-e1"``."""
    return f"cite-{int(turn)}-{re.sub(r'[^a-z0-9]', '', str(evidence_id).lower())}"


def linked_answer(text: str, turn: int, ids: set[str]) -> str:
    """The answer as escaped Markdown whose ``[E1]`` markers (of ``ids``) are links to
    their citation's anchor (:func:`anchor_id`)."""
    escaped = md_escape(text)
    return _ESCAPED_MARK.sub(
        lambda m: f"[\\[{m.group(1)}\\]](#{anchor_id(turn, m.group(1))})" if m.group(1) in ids else m.group(0), escaped
    )


def _citation_line(c: dict[str, Any]) -> str:
    pages = [p for p in c.get("pages") or [c.get("page")] if p is not None]
    where = f"pp. {', '.join(map(str, pages))}" if len(pages) > 1 else f"p. {pages[0] if pages else '?'}"
    return f"[{c['evidence_id']}] {c.get('file', '')} · {where} · {section_line(c.get('section_path') or [])}"


def passage_with_quote(text: str, quote: str) -> str:
    """Markdown of a cited passage shown once, its quoted words in bold where they occur
    in it (both escaped: document text is never markup); a quote not found in the
    passage is shown above it. ``"(passage text unavailable)"`` without a text."""
    q = " ".join(quote.split())
    flat = " ".join(text.split())
    if not flat:
        return md_escape("Quote: " + q) if q else "(passage text unavailable)"
    i = flat.find(q) if q else -1
    if i < 0:
        return (md_escape("Quote: " + q) + "\n\n" if q else "") + md_escape(text)
    return md_escape(flat[:i]) + "**" + md_escape(q) + "**" + md_escape(flat[i + len(q):])


def _closest_line(c: dict[str, Any]) -> str:
    quote = " ".join(str(c.get("quote") or "").split())
    return _citation_line(c) + (f" · \u201c{quote[:240]}\u201d" if quote else "")


def render_answer(msg: dict[str, Any], turn: int, on_search_all: Callable[[str], None] | None = None) -> None:
    """Draw one assistant message: the answer with linked markers, the backend line
    (with the documents it was answered from), the list of cited passages (each with
    its anchor) and the Sources control that opens a cited passage with its page image.

    A "not found" answer lists its closest passages instead (they do not answer the
    question), as ``docmaster ask`` does; when it was answered from fewer than all
    documents it says the others were not searched and offers to search them all.

    Args:
        msg: ``{"text", "citations", "closest", "outcome", "backend", "error",
            "question", "scope_label", "n_scope", "n_all"}`` as kept in the chat history
            (older entries may lack the later keys).
        turn: Position of the message in the history (makes anchors and keys unique).
        on_search_all: Called with the question when "Search all documents" is pressed.
    """
    from .chat import narrowed_note

    text, cites = renumber(msg.get("text", ""), list(msg.get("citations") or []))
    closest = [] if cites else renumber(text, list(msg.get("closest") or []))[1]
    st.markdown(linked_answer(text, turn, {c["evidence_id"] for c in cites}))
    if msg.get("error"):
        st.warning(md_escape(msg["error"]))
    note = narrowed_note(msg)
    if note:
        with st.container(border=True):
            st.markdown(":material/info: " + md_escape(note))
            if on_search_all is not None and msg.get("question"):
                st.button(f"Search all {int(msg.get('n_all') or 0)} documents", key=f"w_chat_search_all_{turn}",
                          icon=":material/travel_explore:", on_click=on_search_all, args=(msg["question"],))
    line = f"{msg.get('backend', '')} · {len(cites)} citation(s)"
    if closest:
        line += f" · {len(closest)} closest passage(s)"
    if msg.get("scope_label"):
        line += f" · answered from {msg['scope_label']}"
    st.caption(md_escape(line))
    shown = cites or closest
    if not shown:
        return
    if closest:
        st.caption("Closest passages (they do not answer the question):")
    for c in shown:
        st.html(f'<a id="{anchor_id(turn, c["evidence_id"])}"></a>')
        st.caption(md_escape(_closest_line(c) if closest else _citation_line(c)))
    ids = [c["evidence_id"] for c in shown]
    pick = st.pills("Open a source" if cites else "Open a closest passage", ids, key=f"w_chat_source_{turn}",
                    help="Shows the passage and its page below this answer. Pages are counted in the PDF from 1; "
                         "the number printed on the sheet may differ (a cover page, roman-numbered front matter).")
    if pick:
        c = next(x for x in shown if x["evidence_id"] == pick)
        with st.container(border=True):
            st.markdown("**" + md_escape(_citation_line(c)) + "**")
            st.markdown(passage_with_quote(c.get("text") or "", c.get("quote") or ""))
            if c.get("page"):
                boxes = [c["bbox"]] if c.get("bbox") else []
                render_page_image(c.get("source_path"), int(c["page"]), boxes, [c["evidence_id"]],
                                  caption=f"{c.get('file', '')} · page {c['page']} of the PDF")


@st.cache_data(max_entries=8, show_spinner=False)
def _saved_run_matches(workspace: str, run_id: int) -> tuple[list[str], str]:
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(workspace, create=False)
    try:
        r = ws.run(run_id)
    finally:
        ws.close()
    if r is None or r["kind"] != "filter":
        return [], ""
    return list(r["result"].get("matches") or []), str(r["params"].get("condition", ""))


def last_filter(dm: Any) -> tuple[int | None, list[str], str]:
    """"The last filter": the workspace's newest saved filter run, the same run
    ``docmaster ask`` defaults to. The Filter page saves configuration A last, so
    after a run on that page it is A's result (as decided, before any moved cut).

    Returns:
        ``(run_id, kept doc ids, condition)``; ``(None, [], "")`` when no filter was run.
    """
    last = dm.last_run_params("filter")
    if last is None:
        return None, [], ""
    kept, cond = _saved_run_matches(str(dm.path), int(last[0]))
    return int(last[0]), kept, cond


def filter_run_words(dm: Any, run_id: int | None) -> str:
    """A saved filter run in words for the Chat page: "filter run #8 (configuration A of the
    Filter page, as decided, before any moved cut)", or "filter run #8 (from the command
    line or a script)" for a run the Filter page did not make; "" without a run."""
    if run_id is None:
        return ""
    last = dm.last_run_params("filter")
    params = last[1] if last is not None and int(last[0]) == int(run_id) else {}
    name = params.get("app_configuration") if isinstance(params, dict) else None
    if name:
        return f"filter run #{run_id} (configuration {name} of the Filter page, as decided, before any moved cut)"
    if isinstance(params, dict) and params.get("app_config"):
        return f"filter run #{run_id} (the Filter page, as decided, before any moved cut)"
    return f"filter run #{run_id} (from the command line or a script)"


def search_all_later(question: str | None, scope_widget: str) -> None:
    """Callback of "Search all documents": the chat scope becomes all documents (for
    the rest of the session) and ``question`` (when given) is asked again on the coming
    run."""
    from . import state

    state.put(state.CHAT_SCOPE, "all")
    st.session_state[scope_widget] = "all"
    st.session_state[SCOPE_SWITCHED] = True  # the Chat page says the scope was switched, and how to change it
    state.put(state.CHAT_PENDING, question)
