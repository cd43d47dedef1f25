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
from typing import Any

import streamlit as st

from .render import render_page_image, section_line
from .text import md_escape

__all__ = ["renumber", "anchor_id", "linked_answer", "render_answer", "last_filter"]

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
        follow, numbered on; markers of unknown ids are left as they are.
    """
    order: list[str] = []
    known = {c.get("evidence_id") for c in citations}
    for m in _MARK.findall(text or ""):
        if m in known and m not in order:
            order.append(m)
    order += [c.get("evidence_id") for c in citations if c.get("evidence_id") not in order]
    new = {old: f"E{i}" for i, old in enumerate(order, 1)}
    text2 = _MARK.sub(lambda m: f"[{new.get(m.group(1), m.group(1))}]", text or "")
    by_old = {c.get("evidence_id"): c for c in citations}
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
    return (f"[{c['evidence_id']}] {c.get('file', '')} · p. {c.get('page', '?')} · "
            f"{section_line(c.get('section_path') or [])}")


def render_answer(msg: dict[str, Any], turn: int) -> None:
    """Draw one assistant message: the answer with linked markers, the backend line,
    the list of cited passages (each with its anchor) and the Sources control that
    opens a cited passage with its page image.

    Args:
        msg: ``{"text", "citations", "backend", "error"}`` as kept in the chat history.
        turn: Position of the message in the history (makes anchors and keys unique).
    """
    text, cites = renumber(msg.get("text", ""), list(msg.get("citations") or []))
    st.markdown(linked_answer(text, turn, {c["evidence_id"] for c in cites}))
    if msg.get("error"):
        st.warning(md_escape(msg["error"]))
    st.caption(md_escape(f"{msg.get('backend', '')} · {len(cites)} citation(s)"))
    if not cites:
        return
    for c in cites:
        st.html(f'<a id="{anchor_id(turn, c["evidence_id"])}"></a>')
        st.caption(md_escape(_citation_line(c)))
    ids = [c["evidence_id"] for c in cites]
    pick = st.pills("Open a source", ids, key=f"w_chat_source_{turn}", help="Shows the passage and its page")
    if pick:
        c = next(x for x in cites if x["evidence_id"] == pick)
        with st.container(border=True):
            st.markdown("**" + md_escape(_citation_line(c)) + "**")
            if c.get("quote"):
                st.caption(md_escape("Quote: " + c["quote"]))
            st.markdown(md_escape(c.get("text") or "(passage text unavailable)"))
            if c.get("page"):
                boxes = [c["bbox"]] if c.get("bbox") else []
                render_page_image(c.get("source_path"), int(c["page"]), boxes, [c["evidence_id"]],
                                  caption=f"{c.get('file', '')} · page {c['page']}")


@st.cache_data(max_entries=8, show_spinner=False)
def _saved_run_matches(workspace: str, run_id: int) -> tuple[list[str], str]:
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(workspace, create=False)
    try:
        for r in ws.runs("filter"):
            if r["run_id"] == run_id:
                return list(r["result"].get("matches") or []), str(r["params"].get("condition", ""))
    finally:
        ws.close()
    return [], ""


def last_filter(dm: Any) -> tuple[int | None, list[str], str]:
    """"The last filter": the workspace's newest saved filter run, the same run
    ``docmaster ask`` defaults to. The Filter page saves configuration A last, so
    after a run on that page it is A's result (as decided, before any moved cut).

    Returns:
        ``(run_id, kept doc ids, condition)``; ``(None, [], "")`` when no filter was run.
    """
    last = dm.ws.last_run_params("filter")
    if last is None:
        return None, [], ""
    kept, cond = _saved_run_matches(str(dm.ws.path), int(last[0]))
    return int(last[0]), kept, cond
