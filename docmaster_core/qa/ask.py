"""Follow-up question answering over chosen documents (SPEC F7), with a deep mode.

``ask`` retrieves passages with the same tri-modal pipeline as the filter (the
combined, RRF-fused lists of tree traversal, semantic search and hyper-edge matching,
per document), widens the pool with BM25 nodes, and keeps the ``top_k`` passages that
best *answer* the question (term coverage against the document's background, answer
type, cosine; tables row by row with headers; see
:mod:`~docmaster_core.qa.answering`), numbers them ``E1..En`` and asks the
LLM for an answer with citations. With the offline backend, when the offline evidence
(:func:`~docmaster_core.text.answer_units.verdict`) says the documents do not hold
the answer, no answer is extracted: the result says "The documents do not say ..."
with outcome ``not_found`` and the closest passages marked as not answering; an LLM
may reply ``"found": false`` itself. Citations are checked against the passages given: a citation whose
id was not given is dropped, and document, page, section path and node id are always
taken from the passage itself, so every citation points at a passage the model saw.
When a quote does not occur in its passage, the passage's sentence that best covers
the question is quoted instead. Each citation carries file, page, section path, node
id, quote and the passage's page box (PDF points).

Deep mode (from Doc-Researcher, arXiv 2510.21603, Sec. 3: query decomposition and
iterative "deep research" retrieval): the question is split into sub-queries (the
LLM's ``decompose`` when the backend offers one, else a rule-based split at
conjunctions, semicolons and comparisons; the full question is always kept); each
sub-query is retrieved; then, for ``rounds - 1`` more rounds, each sub-query vector
is moved towards the centroid of its best new passages (Rocchio pseudo-relevance
feedback, ``q' = normalise(q + beta * mean(top-3))``) and retrieved again, stopping
early when a round finds no new passage. The union (at most ``2 * top_k`` passages,
each sub-query's best two guaranteed) is answered as one.

Which documents: ``docs`` given (file names, paths or doc ids), every document with
``all_docs``, else the matches of the last saved filter run, else every document of the
workspace. Among several, a question that *names* documents (a file name, a title, a
party or company of the opening text; :mod:`~docmaster_core.qa.names`) is answered from
those only, and its passages are chosen by the rest of the question (the names would pull
up the preamble that holds them). :func:`scope_line` says which in one line (the CLI
prints it; ``doc_source`` is then ``"named"``).
"""
from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..config import RetrievalSettings
from ..errors import LLMError, RetrievalError
from ..model import Answer, Citation, Evidence
from ..protocols import LLM, Embedder, RunStore
from .answering import not_found_answer, select_passages
from .candidates import combined_candidates, dedupe_candidates
from .names import Route, named_apart, refers_back, route_by_names
from ..text.answer_units import NOT_FOUND_PREFIX, asks_about_several
from ..retrieval.retriever import Retriever, check_top_k

__all__ = ["QAResult", "select_documents", "gather_evidence", "decompose_question", "ask", "validate_citations",
           "searchable_documents", "scope_line"]


@dataclass
class QAResult:
    """The result of :func:`ask`.

    Attributes:
        question: The question.
        answer: The :class:`Answer` (citations validated).
        evidence: The passages given to the model, ``E1..En``.
        doc_ids: Documents searched.
        doc_source: ``"given"``, ``"last-filter-run"``, ``"all"``, ``"named"`` (the
            question named the documents searched, among those of the scope) or
            ``"follow-up"`` (it referred back to the documents the previous question named).
        source_run: The filter run whose kept documents were searched
            (``doc_source == "last-filter-run"``), else None.
        n_workspace: Documents in the workspace when the question was asked.
        sub_queries: Sub-queries used (deep mode; else just the question).
        rounds: Retrieval rounds run.
        dropped_citations: Citation ids the model gave that were not among the passages.
        timings: Seconds: ``retrieve``, ``answer``, ``total``.
        run_id: Id of the saved run, or None.
        warnings: One line per document that could not be searched (e.g. its vector
            file is missing; ``docmaster check --repair`` rebuilds it).
        verdict: The offline evidence on whether the documents answer the question
            (:meth:`~docmaster_core.text.answer_units.Verdict.to_dict`); it decides
            the outcome for the offline backend, an LLM decides for itself.
        candidates: A question over more than ``candidates.min_docs`` documents (not in
            deep mode) searches only the candidate documents of the collection indexes
            (:mod:`docmaster_core.retrieval.candidates`): ``{"candidates",
            "not_candidates", ...}``; empty when every document was searched.
        named: The question's words that named the documents searched (``doc_source ==
            "named"``), else empty.
        scope_files: File names of the documents searched when they were named (or
            followed up).
        named_outside: File names of documents the question names that are *not* among
            those searched (the scope was narrowed, and nothing in it is named): said beside
            the answer, never searched without the user's say.
        need: The question without the names: what chose the passages (the question
            itself when nothing was named).
    """

    question: str
    answer: Answer
    evidence: list[Evidence]
    doc_ids: list[str]
    doc_source: str
    sub_queries: list[str] = field(default_factory=list)
    rounds: int = 1
    dropped_citations: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    run_id: int | None = None
    warnings: list[str] = field(default_factory=list)
    verdict: dict[str, Any] = field(default_factory=dict)
    source_run: int | None = None
    n_workspace: int = 0
    candidates: dict[str, Any] = field(default_factory=dict)
    named: list[str] = field(default_factory=list)
    scope_files: list[str] = field(default_factory=list)
    need: str = ""
    named_outside: list[str] = field(default_factory=list)

    @property
    def evidence_doc_ids(self) -> list[str]:
        """Distinct documents the passages came from, in passage order."""
        return list(dict.fromkeys(e.doc_id for e in self.evidence))

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "question": self.question,
            "answer": self.answer.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence],
            "doc_ids": list(self.doc_ids),
            "doc_source": self.doc_source,
            "source_run": self.source_run,
            "n_workspace": self.n_workspace,
            "scope": scope_line(self.doc_source, len(self.doc_ids), self.n_workspace, self.source_run,
                                files=self.scope_files),
            **({"named": list(self.named), "need": self.need} if self.named else {}),
            **({"named_outside": list(self.named_outside)} if self.named_outside else {}),
            "sub_queries": list(self.sub_queries),
            "rounds": self.rounds,
            "dropped_citations": list(self.dropped_citations),
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "evidence_doc_ids": self.evidence_doc_ids,
            "warnings": list(self.warnings),
            "outcome": self.answer.outcome,
            "verdict": dict(self.verdict),
            **({"candidates": dict(self.candidates)} if self.candidates else {}),
        }


def select_documents(ws, docs: Sequence[str] | None = None, all_docs: bool = False,
                     with_run: bool = False) -> tuple[list[str], str] | tuple[list[str], str, int | None]:
    """The documents a question is asked over.

    Args:
        ws: The workspace.
        docs: Document references; they win over everything else.
        all_docs: Every document of the workspace (``docmaster ask --all``).
        with_run: Also return the id of the filter run whose matches were chosen.

    Returns:
        ``(doc_ids, source)`` (``(doc_ids, source, run_id)`` with ``with_run``): the
        given documents (``"given"``), else with ``all_docs`` every document
        (``"all"``), else the matches of the newest filter run (``"last-filter-run"``;
        documents removed since are skipped), else all documents (``"all"``).

    Raises:
        RetrievalError: a given document is unknown, the last filter run matched
            nothing (that is still in the workspace), or the workspace is empty.
    """
    from ..errors import WorkspaceError

    def out(ids, source, run_id=None):
        return (ids, source, run_id) if with_run else (ids, source)

    if docs:
        found = []
        for ref in docs:
            try:
                found.append(ws.document(ref).doc_id)
            except WorkspaceError as e:
                raise RetrievalError(str(e)) from e
        return out(list(dict.fromkeys(found)), "given")
    all_ids = [d.doc_id for d in ws.documents()]
    if not all_ids:
        raise RetrievalError(f"workspace {ws.path} has no documents")
    if all_docs:
        return out(all_ids, "all")
    runs = ws.recent_runs("filter", 1)
    if runs:
        res = runs[0]["result"]
        known = set(all_ids)
        m = [d for d in res.get("matches", []) if d in known]
        if not m:
            raise RetrievalError(
                f"the last filter run (#{runs[0]['run_id']}, condition {res.get('condition', '')!r}) matched no "
                "document that is in the workspace; ask over all documents with --all, name documents with "
                "--docs, or run another filter"
            )
        return out(m, "last-filter-run", int(runs[0]["run_id"]))
    return out(all_ids, "all")


def last_routed(ws) -> list[str]:
    """The documents the newest saved question of the workspace was answered from because it
    named them (or followed up on them): what a follow-up ("Can it be terminated?",
    ``docmaster ask --follow-up``) continues with; empty when that question named none."""
    runs = ws.recent_runs("ask", 1)
    params = (runs[0].get("params") or {}) if runs else {}
    return list(params.get("docs") or []) if params.get("doc_source") in ("named", "follow-up") else []


def scope_line(source: str, n: int, n_all: int, run_id: int | None = None, files: Sequence[str] = ()) -> str:
    """Which documents a question was answered from, in words (the CLI's scope line).

    Examples: ``"all 9 documents"``, ``"the 3 of 9 documents kept by filter run 7"``,
    ``"2 chosen documents (of 9)"``, ``"cuad-077_....pdf (named in the question)"``,
    ``"cuad-077_....pdf (named earlier in the conversation)"``.
    """
    if source in ("named", "follow-up"):
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        why = "named in the question" if source == "named" else "named earlier in the conversation"
        return f"{shown or f'{n} documents'} ({why})"
    def docs(k: int) -> str:
        return f"{k} document{'s' * (k != 1)}"

    of = f" (of {n_all})" if n_all and n != n_all else ""
    if source == "last-filter-run":  # "the 5 of 15 documents kept by filter run 16" ("run 16 (of 15)" misread)
        part = f"the {n} of {docs(n_all)}" if n_all and n != n_all else f"the {docs(n)}"
        return f"{part} kept by filter run {run_id}" if run_id is not None else f"{part} kept by the last filter run"
    if source == "all" or (n_all and n == n_all):
        return f"all {docs(n)}" if n != 1 else "the 1 document"
    return f"{n} chosen document{'s' * (n != 1)}{of}"


def searchable_documents(view, doc_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``doc_ids`` into the ones the corpus view holds and warnings for the rest.

    A document is missing from the view when its vector file is missing or does not
    match its tree (:func:`~docmaster_core.retrieval.corpus.load_corpus` skips it).

    Returns:
        ``(searchable doc_ids, warnings)``.

    Raises:
        RetrievalError: none of the documents can be searched.
    """
    ok = [d for d in doc_ids if view.has(d)]
    skipped = getattr(view, "skipped", {}) or {}
    warnings = [skipped.get(d, f"document {d} cannot be searched; skipped") for d in doc_ids if not view.has(d)]
    if doc_ids and not ok:
        raise RetrievalError("no chosen document can be searched: " + warnings[0])
    return ok, warnings


def gather_evidence(retr: Retriever, question: str | np.ndarray, doc_ids: Sequence[str], top_k: int,
                    per_doc: int | None = None) -> list[Evidence]:
    """The ``top_k`` passages for a question over ``doc_ids``, numbered ``E1..En``.

    For a text question (and no ``per_doc``) the passages are chosen by answer support
    (:func:`~docmaster_core.qa.answering.select_passages`: a wider candidate
    pool re-ranked by term coverage, answer type and cosine; tables given row by row
    with their headers). Otherwise candidates are each document's combined (RRF) list
    of ``per_doc`` nodes (default ``top_k``), ordered by cosine with the question.
    Passages repeating another passage (:func:`dedupe_candidates`) are dropped and the
    candidate lists widened (up to 4x) to fill ``top_k``.

    Raises:
        RetrievalError: ``top_k`` or ``per_doc`` < 1.
    """
    from ..retrieval.corpus import node_evidence

    check_top_k(top_k)
    check_top_k(per_doc, "per_doc")
    if isinstance(question, str) and per_doc is None:
        from .answering import select_passages

        return select_passages(retr, question, doc_ids, top_k).evidence
    view = retr.view
    per = per_doc or top_k
    prev = -1
    chosen: list[tuple[float, int, int, str]] = []
    for _ in range(3):
        cands = combined_candidates(retr, question, doc_ids, per, view)[0]
        chosen = dedupe_candidates(cands, view, top_k)
        if len(chosen) >= top_k or len(cands) <= prev or len(chosen) == min(len(cands), top_k):
            break
        prev = len(cands)
        per *= 2
    return [node_evidence(view, di, nid, who, c, f"E{i + 1}") for i, (c, di, nid, who) in enumerate(chosen)]


_SPLIT_RE = re.compile(r"\s*(?:;|\?\s+|\.\s+(?=[A-Z])|,?\s+and\s+(?:also\s+)?(?=(?:what|which|how|why|when|where|who|whether|does|do|is|are|did|list|give)\b))\s*", re.I)
_COMPARE_RE = re.compile(r"\b(?:compare|difference between|differences between|contrast)\s+(.+?)\s+(?:and|with|vs\.?|versus)\s+(.+?)(?:\s+(?:in terms of|on|regarding|for)\s+(.+))?\??$", re.I)


def decompose_question(question: str, llm=None, max_sub: int = 4) -> list[str]:
    """Sub-queries of a question (Doc-Researcher query decomposition), the question first.

    Splits at semicolons, sentence ends, and "and" before a new wh-/auxiliary clause, and turns
    "compare A and B (in terms of C)" into one sub-query per side.

    Returns:
        1 to ``max_sub + 1`` distinct strings.
    """
    q = " ".join(question.split())
    subs: list[str] = []  # rule-based: no backend offers a decomposition task
    m = _COMPARE_RE.search(q)
    if m:
        aspect = f" {m.group(3).rstrip('?')}" if m.group(3) else ""
        a, b = m.group(1), m.group(2).rstrip("?")
        bw = b.split()
        if not aspect and len(a.split()) <= 3 and len(bw) > 2:
            # "compare how A and B <predicate>": the predicate belongs to both sides
            subs = [f"{a} {' '.join(bw[1:])}", b]
        else:
            subs = [f"{a}{aspect}", f"{b}{aspect}"]
    else:
        parts = [p.strip(" ,?") for p in _SPLIT_RE.split(q) if p and p.strip(" ,?")]
        subs = [p for p in parts if len(p.split()) >= 3] if len(parts) > 1 else []
    out = [q]
    for s in subs[:max_sub]:
        if s.lower() != q.lower() and s not in out:
            out.append(s)
    return out


def _deep_evidence(retr: Retriever, question: str, doc_ids: Sequence[str], top_k: int, llm, rounds: int,
                   beta: float = 0.5) -> tuple[list[Evidence], list[str], int]:
    from ..retrieval.corpus import node_evidence

    view = retr.view
    subs = decompose_question(question, llm)
    qs: list[str | np.ndarray] = list(subs)  # text in round 1 (explicit references), vectors after
    seen: dict[tuple[int, int], tuple[float, str, int]] = {}  # (doc, node) -> (best cos, strategy, sub-query)
    guaranteed: list[tuple[int, int]] = []
    ran = 0
    for rnd in range(max(1, rounds)):
        ran = rnd + 1
        new_any = False
        for si, q in enumerate(qs):
            cands, qv = combined_candidates(retr, q, doc_ids, top_k, view)
            cands = cands[:top_k]
            fresh = [(c, di, nid, who) for c, di, nid, who in cands if (di, nid) not in seen]
            for c, di, nid, who in cands:
                key = (di, nid)
                if key not in seen or c > seen[key][0]:
                    seen[key] = (c, who, si)
            if rnd == 0:
                guaranteed.extend((di, nid) for _, di, nid, _ in cands[:2])
            if fresh:
                new_any = True
                top = np.stack([view.emb[view.docs[di].start + nid] for _, di, nid, _ in fresh[:3]])
                v = qv + beta * top.mean(axis=0)
                qs[si] = (v / max(np.linalg.norm(v), 1e-12)).astype(np.float32)
        if not new_any:
            break
    limit = 2 * top_k
    order = list(dict.fromkeys(guaranteed))[:limit]
    rest = sorted((k for k in seen if k not in order), key=lambda k: -seen[k][0])
    order += rest[: max(0, limit - len(order))]
    order.sort(key=lambda k: -seen[k][0])
    kept = dedupe_candidates([(seen[k][0], k[0], k[1], seen[k][1]) for k in order], view, len(order))
    ev = [node_evidence(view, di, nid, who, c, f"E{i + 1}") for i, (c, di, nid, who) in enumerate(kept)]
    return ev, subs, ran


def _quoted_from(quote: str, passage: str) -> bool:
    """True when ``quote`` (whitespace-normalised) is in ``passage`` (raw text), whole, as
    sentences that each are, or as a run of the passage's own units in reading order: an
    answer quotes the sentences or table rows it took from a passage, joined by spaces
    (rows "ResNet 56 | error (%): 6.97 ResNet 110 | error (%): 6.43", which the passage
    gives one per paragraph)."""
    from ..text.words import answer_sentences

    flat = " ".join(passage.split())
    if quote in flat:
        return True
    parts = answer_sentences(quote)
    if len(parts) > 1 and all(p in flat for p in parts):
        return True
    rest = quote
    for para in re.split(r"\n\s*\n", passage):
        for unit in answer_sentences(para):
            if rest.startswith(unit):
                rest = rest[len(unit):].lstrip()
    return not rest


def validate_citations(answer: Answer, evidence: Sequence[Evidence], files: dict[str, str],
                       question: str = "") -> tuple[Answer, list[str]]:
    """Keep only citations of given passages and fill them from the passages.

    Every kept citation takes document, node id, page, section path and page box from
    its passage, so it can only point at a passage the model was given (the page is the
    one its quote starts on: a passage over two pages may be cited once per page). A quote that
    does not occur verbatim (whitespace-normalised) in its passage is replaced by the
    passage's sentence that best covers the question (not its opening words). An
    answer whose outcome is ``not_found`` keeps no supporting citation: the passages
    it named move to ``closest`` with ``supports=False``.

    Returns:
        ``(answer, dropped_ids)``; the answer's citations are rebuilt in place.
    """
    from .answering import best_quote, citation_of

    by_id = {e.evidence_id: e for e in evidence}
    kept, dropped, seen = [], [], set()
    for c in answer.citations:
        e = by_id.get(c.evidence_id)
        if e is None:
            dropped.append(c.evidence_id)
            continue
        if (c.evidence_id, c.quote) in seen:  # a passage over two pages may be cited once per page
            continue
        seen.add((c.evidence_id, c.quote))
        norm = " ".join(e.text.split())
        quote = " ".join((c.quote or "").split())
        if not quote or not _quoted_from(quote, e.text):
            quote = best_quote(question, e.text, e.node_type) or " ".join(norm.split()[:40])
        kept.append(citation_of(e, quote, files.get(e.doc_id, ""), supports=c.supports))
    closest = []
    for c in answer.closest:
        e = by_id.get(c.evidence_id)
        if e is not None:
            closest.append(citation_of(e, c.quote if c.quote and c.quote in " ".join(e.text.split())
                                       else best_quote(question, e.text, e.node_type),
                                       files.get(e.doc_id, ""), supports=False))
    if answer.outcome == "not_found":
        closest = closest or [citation_of(by_id[k.evidence_id], k.quote, k.file, supports=False) for k in kept]
        kept = []
    answer.citations = kept
    answer.closest = closest
    return answer, dropped


def ask(ws: RunStore, embedder: Embedder, llm: LLM, settings: RetrievalSettings, question: str, *,
        docs: Sequence[str] | None = None, top_k: int | None = None, deep: bool = False, rounds: int = 3,
        retriever: Retriever | None = None, load_index=None, index_key: object = None, save: bool = True,
        on_piece: Callable[[str], None] | None = None, all_docs: bool = False, candidates=None,
        follow: Sequence[str] | None = None) -> QAResult:
    """Answer ``question`` over chosen documents with cited passages (SPEC F7).

    Args:
        ws: The workspace.
        embedder: The node embedder.
        llm: The LLM facade (``answer``).
        settings: RetrievalSettings.
        question: The question.
        docs: Document references; default the last filter run's matches (else all).
        all_docs: Ask over every document of the workspace (``docs`` still wins).
        top_k: Passages given to the model (default ``settings.top_k``; deep mode up to
            twice that); must be >= 1 when given.
        deep: Query decomposition and iterative retrieval (Doc-Researcher).
        rounds: Retrieval rounds in deep mode.
        retriever, load_index, index_key: As in :func:`~docmaster_core.filtering.run.run_filter`.
        save: Save the run (kind ``"ask"``) in the workspace.
        on_piece: Called with each piece of the answer's text as it comes (a chat
            model's tokens; an offline or not-found answer in word groups); the result
            is the same as without it (see :func:`answer_pieces`).
        candidates: :class:`~docmaster_core.config.CandidateSettings`: over more than
            ``min_docs`` documents (not in deep mode) only the candidate documents of the
            collection indexes for the question are searched (the passages given are
            the best by cosine, so they come from the documents with the closest nodes);
            None: every document is searched.
        follow: The documents the previous question of the conversation was answered from
            because it named them (``QAResult.doc_ids`` of a ``"named"`` or ``"follow-up"``
            result). A question that names no document of its own and refers back to one
            ("Can it be terminated early?", "this agreement"; :func:`~docmaster_core.qa.names.refers_back`)
            is answered from those of them in the scope (``doc_source == "follow-up"``).

    Documents that cannot be searched (vector file missing or damaged) are skipped and
    named in ``QAResult.warnings``.

    Raises:
        RetrievalError: empty question, ``top_k`` < 1, unknown documents, or nothing to
            search.
    """
    t_all = time.perf_counter()
    q = " ".join((question or "").split())
    if not q:
        raise RetrievalError("the question is empty")
    check_top_k(top_k)
    k = top_k if top_k is not None else settings.top_k
    doc_ids, source, source_run = select_documents(ws, docs, all_docs=all_docs, with_run=True)
    n_workspace = len(ws.documents())
    retr = retriever or Retriever(ws, embedder, settings, load_index=load_index, index_key=index_key)
    doc_ids, warnings = searchable_documents(retr.view, doc_ids)
    t0 = time.perf_counter()
    route = route_by_names(q, retr.view, doc_ids) if len(doc_ids) > 1 else None
    named_outside: list[str] = []
    if route is None and len(doc_ids) < len(retr.view.docs):
        # a name of a document outside the scope is said, not followed: the scope is the user's
        wide = route_by_names(q, retr.view, None)
        if wide is not None and not set(wide.doc_ids) & set(doc_ids):
            named_outside = [d.file_name for d in retr.view.docs if d.doc_id in set(wide.doc_ids)]
    need = q
    if route is None and follow and len(doc_ids) > 1 and refers_back(q) and not named_outside:
        # a follow-up ("Can it be terminated early?") continues with the documents the last question named; a
        # question naming a document outside the scope is none (a newcomer's "MoCo" question, asked after one about
        # SciTab with MoCo filtered out, was answered from SciTab "named earlier in the conversation")
        kept = [d for d in dict.fromkeys(follow) if d in set(doc_ids)]
        if kept:
            route, named_outside = Route(kept, [], q), []
    if route is not None:  # the names pick the documents, the rest of the question the passages
        doc_ids, source, source_run = route.doc_ids, "named" if route.names else "follow-up", None
        need = route.need if len(route.need.split()) >= 2 else q
    cand_info: dict[str, Any] = {}
    search_retr, search_ids = retr, doc_ids
    if candidates is not None and not deep and len(doc_ids) > candidates.min_docs and retr.view.collection is not None:
        search_retr, search_ids, cand_info = _question_candidates(retr, need, doc_ids, candidates)
    # several documents asked about, or named ("Compare how RAPTOR and LightRAG build their index"):
    # each one's best passages first, so that one document's passages do not crowd out the others'
    # (several named by the same names, a contract and its amendments, are answered as one: from the best passages)
    several_named = route is not None and len(set(doc_ids)) > 1 and (asks_about_several(q) or named_apart(route, retr.view))
    if deep:
        evidence, subs, ran = _deep_evidence(retr, need, doc_ids, k, llm, rounds)
        di_of = {d.doc_id: i for i, d in enumerate(retr.view.docs)}
        sel = select_passages(retr, need, doc_ids, max(1, len(evidence)), candidates=[
            (e.score, di_of[e.doc_id], e.node_id, e.strategy) for e in evidence])
    else:
        sel, subs, ran = select_passages(search_retr, need, search_ids, k, whole_documents=route is not None,
                                         per_document=len(search_ids) > 1 and (several_named or (
                                             route is None and asks_about_several(q)))), [need], 1
        if route is None and llm.is_offline and sel.verdict.found and about_one_document(q, sel.evidence):
            # the passages of the best passage's document alone, searched as if it were chosen (document,
            # then passage retrieval); kept when they answer
            focused = select_passages(retr, need, [sel.evidence[0].doc_id], k)
            if focused.evidence and focused.verdict.found:
                sel = focused
    evidence = sel.evidence
    t_ret = time.perf_counter() - t0
    t0 = time.perf_counter()
    backend = llm.backend_name
    records = ws.documents()
    files = {d.doc_id: d.file_name for d in records}
    if not evidence:
        ans = Answer(f"{NOT_FOUND_PREFIX} anything about this: no passage was retrieved from the chosen documents.",
                     [], 0, backend, outcome="not_found", reason="no passage was retrieved")
    elif not sel.verdict.found and llm.is_offline:
        ans = not_found_answer(q, sel, files, backend)
    else:  # a model reads the whole question; the offline answerer ranks sentences by what is asked
        one_doc = route is None and about_one_document(q, evidence)
        several = len({e.doc_id for e in evidence}) > 1 and (several_named or (route is None and asks_about_several(q)))
        ans = _llm_answer(llm, need if llm.is_offline else q, evidence, doc_ids[0] if len(doc_ids) == 1 else None,
                          on_piece, one_document=one_doc, several=several)
        if several and llm.is_offline:  # which documents answer: each one's sentences under its name
            ans = by_document(ans, evidence, {d.doc_id: document_label(d.file_name, d.title) for d in records})
        note = getattr(llm, "last_context_note", lambda: None)()
        if note:  # passages left out to fit the model's context window: said where the warnings are
            warnings = [*warnings, note]
    streamed = bool(evidence) and not llm.is_offline  # a chat model's answer came as tokens
    if on_piece is not None and not streamed:
        for piece in answer_pieces(ans.text):
            on_piece(piece)
    ans, dropped = validate_citations(ans, evidence, files, need)
    t_ans = time.perf_counter() - t0
    out = QAResult(q, ans, evidence, doc_ids, source, subs, ran, dropped,
                   {"retrieve": t_ret, "answer": t_ans, "total": time.perf_counter() - t_all}, warnings=warnings,
                   verdict=sel.verdict.to_dict(), source_run=source_run, n_workspace=n_workspace,
                   candidates=cand_info, named=route.names if route else [],
                   scope_files=[files.get(d, d) for d in doc_ids] if route else [], need=need,
                   named_outside=named_outside)
    if save:
        params = {"question": q, "docs": doc_ids, "doc_source": source, "source_run": source_run,
                  "top_k": k, "deep": deep,
                  "verdict": sel.verdict.to_dict(),
                  "rounds": rounds if deep else 1, "backend": backend}
        out.run_id = ws.save_run("ask", params, out.to_dict())
    return out


def _question_candidates(retr: Retriever, q: str, doc_ids: list[str], cs) -> tuple[Retriever, list[str], dict]:
    """Stage 1 for a question at scale: the candidate documents of the dense (question
    vector) and BM25 (question terms) collection indexes among ``doc_ids``, and a
    retriever over a view of just them (its BM25 scores from the collection index, as a
    filter's candidates: :func:`~docmaster_core.retrieval.candidates.candidate_view`)."""
    from ..retrieval.candidates import candidate_documents, candidate_view
    from ..store.lexical_index import lexical_index
    from ..text.terms import condition_terms

    view = retr.view
    lex = lexical_index(retr.ws, view.collection)
    cand = candidate_documents(view, lex, retr.encode(q)[None, :], [condition_terms(q)], cs,
                               doc_mask=view.doc_mask(doc_ids))
    sub = candidate_view(view, cand.doc_indices, retr.ws, lex)  # BM25 with the collection's statistics
    ids = [d.doc_id for d in sub.docs]
    return retr.with_view(sub), ids, {**cand.to_dict(), "not_candidates": len(doc_ids) - len(ids),
                                       "pool_docs": cs.pool_docs}


def answer_pieces(text: str, words: int = 4) -> Iterator[str]:
    """``text`` in groups of ``words`` words (with their spaces), for display as a stream."""
    toks = (text or "").split(" ")
    for i in range(0, len(toks), words):
        chunk = " ".join(toks[i:i + words])
        yield chunk if i + words >= len(toks) else chunk + " "


#: Share of the passages the best passage's document must hold for a question to be about it alone.
ONE_DOCUMENT_SHARE = 0.5


def about_one_document(question: str, evidence: Sequence[Evidence]) -> bool:
    """A question over several documents it does not name is about one of them when it does not
    ask about several (:func:`~docmaster_core.text.answer_units.asks_about_several`) and the
    best passage's document holds at least ``ONE_DOCUMENT_SHARE`` of the passages: "What batch
    size was used to train the DPR retriever?" over 4 papers (DPR holds 5 of 8), not "What is
    the governing law?" over 15 contracts (the best contract holds 1-2 of 8: each has its own).
    Measured: 47 of 58 one-paper questions over 4-paper scopes at >= 0.5, 8 generic questions
    over 15 contracts at 0.12-0.25 (docs/results/qa.md).

    Args:
        question: The question as asked.
        evidence: The passages, best first.
    """
    docs = [e.doc_id for e in evidence]
    if len(set(docs)) < 2 or asks_about_several(question):
        return False
    return docs.count(docs[0]) >= ONE_DOCUMENT_SHARE * len(docs)


def document_label(file_name: str, title: str = "", max_chars: int = 48) -> str:
    """A document as an answer names it: its title, when it has a short one, and its file name,
    each shortened to ``max_chars`` characters ("HOSTING AGREEMENT (cuad-150_vitalibisinc-...pdf)")."""
    def short(x: str) -> str:
        x = " ".join((x or "").split())
        return x if len(x) <= max_chars else x[: max_chars - 1].rstrip() + "…"

    return f"{short(title)} ({short(file_name)})" if title and len(title) <= 2 * max_chars else short(file_name)


def by_document(ans: Answer, evidence: Sequence[Evidence], labels: dict[str, str]) -> Answer:
    """An extractive answer about several documents, each document's quoted sentences under
    its name (:func:`document_label`): "NAME:" on its own line, the document's sentences with
    their markers below, a blank line between documents. Unchanged when the answer quotes
    fewer than two documents (or is not a list of ``sentence [E3]`` pieces).

    Args:
        ans: The offline answer, sentences in document order.
        evidence: The passages it cites (``[E3]`` -> its document).
        labels: ``{doc_id: name}``.
    """
    doc_of = {e.evidence_id: e.doc_id for e in evidence}
    pieces = [(m.group(0).strip(), doc_of.get(m.group(1))) for m in re.finditer(r"\s*.+?\[(E\d+)\]", ans.text or "")]
    if len({d for _, d in pieces}) < 2 or None in {d for _, d in pieces} \
            or "".join(p for p, _ in pieces).replace(" ", "") != (ans.text or "").replace(" ", ""):
        return ans
    groups: list[tuple[str, list[str]]] = []
    for piece, doc in pieces:
        if groups and groups[-1][0] == doc:
            groups[-1][1].append(piece)
        else:
            groups.append((doc, [piece]))
    text = "\n\n".join(f"{labels.get(d, d)}:  \n" + " ".join(ps) for d, ps in groups)
    return dataclasses.replace(ans, text=text)


def _llm_answer(llm: LLM, question: str, evidence: list[Evidence], doc_id: str | None,
                on_piece: Callable[[str], None] | None, one_document: bool = False, several: bool = False) -> Answer:
    """The backend's answer; with ``on_piece`` and a chat model, streamed token by token
    (citations from its ``[E3]`` markers, validated afterwards like any answer). A
    failure gives an answer with empty text and ``error`` set. ``one_document`` goes to the
    offline answerer only, as ``several`` (a chat model reads the whole question and chooses itself)."""
    if on_piece is None or llm.is_offline:
        try:
            if llm.is_offline and (one_document or several):
                return llm.answer(question, evidence, doc_id=doc_id, one_document=one_document, several=several)
            return llm.answer(question, evidence, doc_id=doc_id)
        except LLMError as e:
            return Answer("", [], 0, llm.backend_name, error=str(e))
    parts: list[str] = []
    error = None
    try:
        for piece in llm.answer_stream(question, evidence, doc_id=doc_id):
            parts.append(str(piece))
            on_piece(str(piece))
    except LLMError as e:
        error = str(e)
    text = "".join(parts)
    by_id = {e.evidence_id: e for e in evidence}
    cited = list(dict.fromkeys(m for m in _MARK.findall(text) if m in by_id))
    cites = [Citation(i, by_id[i].doc_id, by_id[i].node_id, by_id[i].page, list(by_id[i].section_path), "")
             for i in cited]
    return Answer(text, cites, 0, llm.backend_name, error=error)


_MARK = re.compile(r"\[(E\d+)\]")
