"""Question answering for the chat page (SPEC F7), through the engine's one path:
``DocMaster.ask_stream`` (the answer's text as it comes, for ``st.write_stream``) or
``DocMaster.ask``; both give the same result as ``docmaster ask``: passages chosen by
answer support, a plain "not found" when the documents do not answer, and citations
validated against the passages given. This module only turns the result into dicts
for display (:func:`citation_dicts`).
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["citation_dicts", "ask", "SCOPES", "chat_scope", "empty_scope_note", "narrowed_note"]

#: The chat's scopes, the default first: every document, those kept by the last filter
#: run (the workspace's newest saved one, as ``docmaster ask`` without ``--all``), or a
#: chosen set.
SCOPES = ("all", "filter", "chosen")


def chat_scope(scope: str, all_ids: list[str], chosen: list[str] | None,
               last: tuple[int | None, list[str], str]) -> dict[str, Any]:
    """The documents a chat question is answered from, and the line that says so.

    Args:
        scope: One of :data:`SCOPES` (anything else counts as ``"all"``).
        all_ids: The workspace's doc ids.
        chosen: The doc ids the user chose (scope ``"chosen"``).
        last: :func:`ui.citations.last_filter` ``(run_id, kept doc ids, condition)``.

    Returns:
        ``{"scope", "doc_ids", "n", "n_all", "run_id", "label", "n_kept"}`` (``n_kept``: the
        documents the last filter run kept, removed ones included; 0 for other scopes);
        ``label`` is e.g.
        ``"all 9 documents"`` or ``"the 3 of 9 documents kept by filter run 7"``
        (:func:`docmaster_core.qa.ask.scope_line`), shown as "Answering from: ...".
    """
    from docmaster_core.qa.ask import scope_line

    scope = scope if scope in SCOPES else "all"
    known = set(all_ids)
    run_id, kept, _cond = last
    n_all = len(all_ids)
    if scope == "filter":
        ids = [d for d in kept if d in known]
        if run_id is None:
            label = "no filter run yet (run one on the Filter page)"
        elif not kept:
            label = f"no document: filter run {run_id} kept none"
        elif not ids:
            label = f"no document: the documents filter run {run_id} kept are no longer in the workspace"
        else:
            label = scope_line("last-filter-run", len(ids), n_all, run_id)
    elif scope == "chosen":
        ids = [d for d in (chosen or []) if d in known]
        label = scope_line("given", len(ids), n_all) if ids else "no document chosen yet"
    else:
        ids = list(all_ids)
        label = scope_line("all", n_all, n_all)
    return {"scope": scope, "doc_ids": ids, "n": len(ids), "n_all": n_all, "run_id": run_id, "label": label,
            "n_kept": len(kept) if scope == "filter" else 0}


def empty_scope_note(sc: dict[str, Any]) -> str | None:
    """For a scope without documents (:func:`chat_scope`): why the chat input is off and
    what to do, shown beside it with a button that answers from every document; None when
    the scope has documents or the workspace has none."""
    if sc["doc_ids"] or not sc["n_all"]:
        return None
    if sc["scope"] == "chosen":
        return "Choose one or more documents above to ask about them."
    if sc["run_id"] is None:
        return "No filter run yet: run one on the Filter page to ask about the documents it keeps."
    if sc.get("n_kept"):
        return (f"The documents the last filter run (#{sc['run_id']}) kept have been removed from the workspace. "
                "Choose another scope above.")
    return (f"The last filter run (#{sc['run_id']}) kept no document, so there is nothing to answer from here. "
            "Choose another scope above.")


def narrowed_note(msg: dict[str, Any]) -> str | None:
    """For an answer given from fewer than all documents: the line that says the other
    documents were not searched, when the answer is "not found" or the question names a
    document outside them (``named_outside``); else None. ``n_chosen`` (the chosen scope's
    size, when a name in the question narrowed it) splits "the other documents" into those
    of the chosen scope and those outside it."""
    n, n_all = int(msg.get("n_scope") or 0), int(msg.get("n_all") or 0)
    outside = list(msg.get("named_outside") or [])
    if outside and n and n < n_all:
        names = ", ".join(outside[:3])
        return (f"The question names {names}, which {'is' if len(outside) == 1 else 'are'} not among the documents "
                f"searched ({msg.get('scope_label', f'{n} documents')}); this answer comes from those. Search all "
                f"{n_all} documents to answer from {'it' if len(outside) == 1 else 'them'}.")
    if msg.get("outcome") != "not_found" or not n or n >= n_all:
        return None
    searched = f"Only {msg.get('scope_label', f'{n} documents')} {'was' if n == 1 else 'were'} searched"
    chosen = int(msg.get("n_chosen") or 0)
    if n < chosen < n_all:  # a name narrowed a chosen scope: say both parts (a newcomer read "the other 14" with 3)
        inside, outside_n = chosen - n, n_all - chosen
        return (f"{searched}; the other {inside} of the {chosen} documents in the chosen scope "
                f"{'was' if inside == 1 else 'were'} not, nor the {outside_n} outside it.")
    other = n_all - n
    return f"{searched}; the other {other} document{'s were' if other != 1 else ' was'} not."


def _ev_dict(e: Any) -> dict[str, Any]:
    return e.to_dict() if hasattr(e, "to_dict") else dict(e)


def citation_dicts(dm: Any, citations: list[Any], evidence: list[Any] | None = None) -> list[dict[str, Any]]:
    """Citations as dicts with the cited passage text and its document's file and source.

    Returns:
        ``[{"evidence_id", "doc_id", "node_id", "page", "section_path", "quote",
        "text", "file", "source_path", "bbox"}]``.
    """
    by_ev = {(_ev_dict(e)["evidence_id"]): _ev_dict(e) for e in (evidence or [])}
    docs = {d.doc_id: d for d in dm.documents()}
    trees: dict[str, Any] = {}
    out = []
    for c in citations:
        c = c.to_dict() if hasattr(c, "to_dict") else dict(c)
        ev = by_ev.get(c.get("evidence_id"), {})
        doc_id = c.get("doc_id") or ev.get("doc_id")
        text, bbox = ev.get("text", ""), ev.get("bbox")
        nid = c.get("node_id", ev.get("node_id", -1))
        if doc_id in docs and isinstance(nid, int) and nid >= 0 and (not text or bbox is None):
            if doc_id not in trees:
                trees[doc_id] = dm.tree(doc_id)
            node = trees[doc_id].nodes[nid] if nid < len(trees[doc_id].nodes) else None
            if node is not None:
                text = text or node.content
                if bbox is None:
                    bbox = next((list(b[1:5]) for b in node.bboxes if int(b[0]) == int(c.get("page") or node.page_start)),
                                None)
        rec = docs.get(doc_id)
        out.append({
            "evidence_id": c.get("evidence_id", ""),
            "doc_id": doc_id,
            "node_id": nid,
            "page": c.get("page") or ev.get("page"),
            "section_path": c.get("section_path") or ev.get("section_path") or [],
            "quote": c.get("quote", ""),
            "text": text,
            "file": c.get("file") or (rec.file_name if rec else ""),
            "source_path": rec.source_path if rec else None,
            "bbox": bbox,
        })
    return out


def ask(dm: Any, question: str, docs: list[str] | None, write_stream: Callable[[Any], Any] | None = None,
        top_k: int | None = None, follow: list[str] | None = None) -> dict[str, Any]:
    """Answer ``question`` over ``docs`` (None = all documents) with cited passages,
    through the engine's one answering path (``DocMaster.ask_stream`` when streaming,
    else ``DocMaster.ask``), so the app answers exactly as ``docmaster ask`` does.

    Args:
        dm: The DocMaster facade.
        question: The user's question.
        docs: doc ids to search, or None for all.
        write_stream: ``st.write_stream`` (or None to not stream); pieces are
            Markdown-escaped before display, the returned text is the raw answer.
        top_k: Passages given to the model (default ``settings.retrieval.top_k``).
        follow: The documents the previous answer was routed to by names (its
            ``"routed"``), for a follow-up that refers back to them ("Can it be terminated?").

    Returns:
        ``{"text", "citations": citation_dicts(...), "closest": citation_dicts(...),
        "outcome": "answered" | "not_found", "backend", "error", "streamed": bool,
        "passages": int}``, plus ``"named_scope"`` (e.g. ``"cuad-077....pdf (named in the
        question)"``), ``"n_named"`` and ``"routed"`` (their doc ids) when the question named
        the documents it was answered from (:mod:`docmaster_core.qa.names`) or followed up
        on the ones named before.

    Raises:
        RetrievalError: empty question or unknown documents.
    """
    from .indexing import index_params
    from .text import md_escape

    doc_ids = list(docs) if docs else [d.doc_id for d in dm.documents()]
    # the conversation is kept as the workspace's chat log (DocMaster.save_chat_log), not as one saved run per
    # question: run numbers are the filter's, and no longer jump by the questions asked between two filter runs
    # ("A became run #16 after 3 runs", newcomers 15 and 16)
    if write_stream is not None:
        stream = dm.ask_stream(question, docs=doc_ids, top_k=top_k, params=index_params(), follow=follow,
                               save=False)
        write_stream(md_escape(piece) for piece in stream)
        res = stream.result
    else:
        res = dm.ask(question, docs=doc_ids, top_k=top_k, params=index_params(), follow=follow, save=False)
    a = res.answer
    named = res.doc_source in ("named", "follow-up")
    return {"text": a.text, "citations": citation_dicts(dm, a.citations, res.evidence),
            "closest": citation_dicts(dm, a.closest, res.evidence), "outcome": a.outcome, "backend": a.backend,
            "error": a.error, "streamed": write_stream is not None, "passages": len(res.evidence),
            **({"named_scope": res.to_dict()["scope"], "n_named": len(res.doc_ids), "routed": list(res.doc_ids)}
               if named else {}),
            **({"named_outside": list(res.named_outside)} if res.named_outside else {})}
