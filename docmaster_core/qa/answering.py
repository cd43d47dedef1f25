"""Passage selection for questions, the offline "not found" answer, and quotes that
point at the supporting words (used by :func:`docmaster_core.qa.ask.ask`).

Selection: each document's combined (RRF) list is widened to ``pool_factor * top_k``
candidates, repeated passages are dropped, and every candidate is scored by
``0.5 * cosine(node, question) + 0.5 * best unit support + 0.1 * passage coverage``
(+0.3 for an element the question names, e.g. "Table 2"), where a unit's support is
``coverage * (0.6 + 0.4 * answer-type match)`` (see :mod:`~docmaster_core.text.answer_units`). The best
``top_k`` become ``E1..En``, best first, so the passage quoted first is the one whose
words answer. A table passage is given as its caption followed by its best-supported
rows, each with its column headers, so a cell is always quoted with its row.

The passage text given to the model may thus differ from the node's raw text (table
rows re-rendered, an adjacent equation or lead-in sentence added, "Figure 2." written
"Figure 2:"); page, box and node id stay the node's own.

Not found (offline): :func:`~docmaster_core.text.answer_units.verdict` over the selected passages (for deep
mode, also over pairs of passages from two different sections). The answer then says
"The documents do not say ..." and lists the closest passages with ``supports=False``.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..text.words import answer_sentences, dot_leader_share, normalize_ws, split_sentences
from ..model import Answer, Citation, Evidence, NodeType
from ..text import answer_units as S
from ..tree.roles import in_reference_list
from .candidates import combined_candidates, dedupe_candidates
from ..text.answer_units import rank_answer_units

__all__ = ["Selection", "select_passages", "rerank_evidence", "table_text", "not_found_answer", "best_quote",
           "collection_background",
           "citation_of", "clause_path", "rank_answer_units"]

MAX_TABLE_ROWS = 6
# "Figure 2. Residual ..." would split into "Figure 2." and the caption: label + colon
_CAPTION_LABEL = re.compile(r"^(\W*(?:Fig(?:ure)?\.?|Table))\s*([0-9IVX]+)\.(?=\s)")


@dataclass
class Selection:
    """Passages chosen for a question and the offline verdict.

    Attributes:
        evidence: ``E1..En``, best supported first.
        verdict: The :class:`~docmaster_core.text.answer_units.Verdict` over them.
        profile: The question's :class:`~docmaster_core.text.answer_units.QuestionProfile`.
    """

    evidence: list[Evidence]
    verdict: S.Verdict
    profile: S.QuestionProfile


def _node_units(tree, nid: int, text: str) -> tuple[list[str], str]:
    n = tree.nodes[nid]
    extra = n.extra if isinstance(n.extra, dict) else {}
    return S.passage_units(text, n.type.value, extra.get("rows"), extra.get("caption")), n.type.value


def table_text(tree, nid: int, profile: S.QuestionProfile, bg: S.Background, max_chars: int = 1500) -> str | None:
    """A table passage for a question: caption, then the ``MAX_TABLE_ROWS`` rows with the
    best support (each ``"row | header: cell | ..."``), separated by blank lines; None
    when the node is not a table with rows."""
    n = tree.nodes[nid]
    extra = n.extra if isinstance(n.extra, dict) else {}
    if n.type != NodeType.TABLE or not extra.get("rows"):
        return None
    rows = S.table_rows(extra["rows"])
    if not rows:
        return None
    sc = S.score_units(profile, rows, ["TABLE"] * len(rows), bg)
    lex = sc.coverage * (0.6 + 0.4 * sc.type_match)
    best = np.argsort(-lex, kind="stable")[:MAX_TABLE_ROWS]
    cap = normalize_ws(str(extra.get("caption") or ""))
    if len(cap) > 400:
        cap = cap[:400].rsplit(" ", 1)[0] + " ..."
    parts = ([cap] if cap else []) + [rows[int(i)] for i in best]
    out = "\n\n".join(parts)
    return out[:max_chars]


def _score_passage(profile, bg, units, ntype, full_text) -> tuple[float, float]:
    """``(best unit support, passage coverage)``."""
    if not units:
        return 0.0, 0.0
    sc = S.score_units(profile, units, [ntype] * len(units), bg)
    lex = sc.coverage * (0.6 + 0.4 * sc.type_match)
    whole = S.score_units(profile, [full_text], [ntype], bg)
    pcov = float(whole.coverage[0])
    # the passage as one unit (an equation with its lead-in sentence), slightly discounted
    best = max(float(lex.max()), 0.9 * pcov * (0.6 + 0.4 * float(whole.type_match[0])))
    return best, pcov


#: A candidate passage with at least this share of its characters in dot leaders is a table of
#: contents (:func:`~docmaster_core.text.words.dot_leader_share`) and is no passage to answer from.
TOC_LEADER_SHARE = 0.3


#: A question about the documents' citations ("Which paper does it cite for BM25?"): its answer may be a
#: reference-list entry, which other questions never take (:func:`~docmaster_core.tree.roles.in_reference_list`).
CITATION_Q = re.compile(r"\b(?:cites?|cited|citing|citations?|references?|bibliograph\w*|reference list)\b", re.I)


def rerank_evidence(view, profile: S.QuestionProfile, bg: S.Background,
                    cands: Sequence[tuple[float, int, int, str]], top_k: int,
                    per_document: bool = False) -> list[Evidence]:
    """Score candidates ``(cosine, doc index, node id, strategies)`` for the question and
    return the best ``top_k`` as evidence ``E1..En`` (tables given as :func:`table_text`; tables of
    contents left out, and reference-list entries unless the question asks about citations,
    :data:`CITATION_Q`).
    With ``per_document`` (a question about several documents) each document's best passage
    comes first, documents in the order of their best passages, then the rest by score."""
    from ..retrieval.corpus import evidence_text, node_evidence

    cites = bool(CITATION_Q.search(profile.text))
    scored = []
    for cos, di, nid, who in cands:
        tree = view.docs[di].tree
        text = table_text(tree, nid, profile, bg) or _with_neighbours(tree, nid, evidence_text(tree, nid))
        if dot_leader_share(text) >= TOC_LEADER_SHARE:
            continue  # a table of contents names the section asked about, and says nothing of it
        if not cites and in_reference_list(tree.nodes[nid].section_path):
            continue  # a cited title ("PCA-SIFT: A more distinctive representation") is no answer of the document
        if tree.nodes[nid].type in (NodeType.IMAGE, NodeType.TABLE):
            text = _CAPTION_LABEL.sub(r"\1 \2:", text, count=1)
        units, ntype = _node_units(tree, nid, text)
        heading = " ".join(tree.nodes[nid].section_path[-1:])
        best, pcov = _score_passage(profile, bg, units, ntype, f"{heading} {text}")
        s = 0.5 * float(cos) + 0.5 * best + 0.1 * pcov + (0.3 if "reference" in who else 0.0) + (
            COUNTED_BONUS if who in ("counted", "hardware") else 0.0)
        scored.append((s, cos, di, nid, who, text))
    scored.sort(key=lambda t: -t[0])
    if per_document:
        lead: dict[int, int] = {}
        for j, t in enumerate(scored):
            lead.setdefault(t[2], j)
        first = sorted(lead.values())
        scored = [scored[j] for j in first] + [t for j, t in enumerate(scored) if j not in set(first)]
    out = []
    for i, (s, cos, di, nid, who, text) in enumerate(scored[:top_k]):
        e = node_evidence(view, di, nid, who, cos, f"E{i + 1}")
        e.text = text
        out.append(e)
    return out


def _verdict_texts(evidence: Sequence[Evidence], pairs: bool) -> list[str]:
    """Passage texts with their section path; with ``pairs``, also the union of the two
    best passages of two different sections (a question that needs two sections)."""
    texts = [f"{' '.join(e.section_path)} {e.text}" for e in evidence]
    if pairs:
        top = list(evidence[:6])
        for a in range(len(top)):
            for b in range(a + 1, len(top)):
                if top[a].section_path[:1] != top[b].section_path[:1] or top[a].doc_id != top[b].doc_id:
                    texts.append(texts[a] + " " + texts[b])
    return texts


def _keyword_candidates(view, question: str, qv: np.ndarray, doc_index: Sequence[int], per_doc: int,
                        have: set) -> list[tuple[float, int, int, str]]:
    """The ``per_doc`` best BM25 nodes of each document (exact terms the embedder blurs:
    names, line items, symbols) not already among the candidates."""
    from ..retrieval.keyword import keyword_scores

    ks = keyword_scores(view, question)
    out = []
    for di in doc_index:
        a, b = int(view.offsets[di]), int(view.offsets[di + 1])
        sub = ks[a:b]
        for r in np.argsort(-sub, kind="stable")[:per_doc]:
            if sub[r] <= 0:
                break
            if (di, int(r)) not in have and view.docs[di].tree.nodes[int(r)].type != NodeType.ROOT:
                out.append((float(view.emb[a + int(r)] @ qv), di, int(r), "keyword"))
    return out


#: Score added to a passage that writes a number beside the noun a "how many X" question counts
#: (:func:`_counted_candidates`), or names the hardware a hardware question asks for
#: (:func:`_hardware_candidates`): its embedding is far from the question, so cosine alone drops it.
COUNTED_BONUS = 0.15


def _counted_candidates(view, profile: S.QuestionProfile, qv: np.ndarray, doc_index: Sequence[int], limit: int
                        ) -> list[tuple[float, int, int, str]]:
    """For a "how many X / how large is X" question, the ``limit`` nodes of the documents
    ``doc_index`` (those the retrieval found candidates in) closest to the question that write a number beside X ("SUBJQA includes over 10,000 English
    examples", :func:`~docmaster_core.text.answer_units.beside_number`), best first: the number
    is the answer, but a long paragraph that gives it in passing (an introduction) sits far
    from the question in embedding space and shares few of its words. Only the nodes whose
    cached term counts (:func:`~docmaster_core.retrieval.keyword.doc_term_counts`) hold the
    noun as the question writes it, singular or plural, are read."""
    from ..retrieval.keyword import doc_term_counts

    if not profile.counted:
        return []
    forms = {profile.words.get(t, t).lower() for t in profile.counted}
    forms |= {f[:-1] for f in forms if f.endswith("s")} | {f + "s" for f in forms if not f.endswith("s")}
    stems = tuple(profile.counted)
    hits = []
    for di in doc_index:
        dv = view.docs[di]
        _, r, c, _, _, gid = doc_term_counts(view, dv)  # registers the document's terms in view.term_ids
        ids = [view.term_ids[f] for f in forms if f in view.term_ids]
        if not ids:
            continue
        for nid in np.unique(r[np.isin(gid[c], ids)]).tolist():
            if nid and S.beside_number((dv.tree.nodes[nid].content or "").lower(), stems):
                hits.append(dv.start + nid)
    if not hits:
        return []
    sims = view.emb[hits] @ qv
    return [(float(sims[j]), int(view.doc_of[hits[j]]), int(view.node_of[hits[j]]), "counted")
            for j in np.argsort(-sims, kind="stable")[:limit]]


def _hardware_candidates(view, profile: S.QuestionProfile, qv: np.ndarray, doc_index: Sequence[int], limit: int
                         ) -> list[tuple[float, int, int, str]]:
    """For a hardware question ("on what hardware were the models trained?", answer type
    ``"hardware"``), the ``limit`` content nodes of the documents ``doc_index`` closest to the
    question that name computing hardware (:func:`~docmaster_core.text.answer_units.names_hardware`),
    best first: "We conducted our experiments on a Linux machine with 350 Ascend 910B-3 NPUs"
    sits in a setup paragraph far from the question in embedding space, as "a number beside the
    counted noun" does (:func:`_counted_candidates`)."""
    if profile.answer_type != "hardware":
        return []
    hits = []
    for di in doc_index:
        dv = view.docs[di]
        hits.extend(dv.start + n.id for n in dv.tree.nodes
                    if n.id and n.type.is_content and S.names_hardware(n.content or ""))
    if not hits:
        return []
    sims = view.emb[hits] @ qv
    return [(float(sims[j]), int(view.doc_of[hits[j]]), int(view.node_of[hits[j]]), "hardware")
            for j in np.argsort(-sims, kind="stable")[:limit]]


def _expand_sections(view, cands: Sequence[tuple[float, int, int, str]], qv: np.ndarray,
                     per_section: int = 2) -> list[tuple[float, int, int, str]]:
    """Replace a section heading (TITLE node, given with its generated summary) by the
    section's ``per_section`` content nodes closest to the question: a citation then
    points at the document's own words on their page, e.g. a table rather than a
    summary that repeats its cells without headers."""
    out: list[tuple[float, int, int, str]] = []
    have = {(c[1], c[2]) for c in cands if view.docs[c[1]].tree.nodes[c[2]].type != NodeType.TITLE}
    for c in cands:
        cos, di, nid, who = c
        tree = view.docs[di].tree
        if tree.nodes[nid].type not in (NodeType.TITLE, NodeType.ROOT):
            out.append(c)
            continue
        if tree.nodes[nid].type == NodeType.ROOT:
            continue
        start = int(view.offsets[di])
        sub = [i for i in tree.subtree(nid) if tree.nodes[i].type.is_content and (di, i) not in have]
        if not sub:
            continue
        sims = view.emb[[start + i for i in sub]] @ qv
        for j in np.argsort(-sims, kind="stable")[:per_section]:
            i = sub[int(j)]
            have.add((di, i))
            out.append((float(sims[int(j)]), di, i, f"{who}+section"))
    return out


#: A passage ending in a word broken at a line end ("the segmenta-").
_BROKEN_WORD = re.compile(r"[a-z]{2,}-\s*$")

#: Characters of the siblings a paragraph ending in ":" is given with (:func:`_with_neighbours`).
ANNOUNCED_CHARS = 600


def _with_neighbours(tree, nid: int, text: str) -> str:
    """An equation is given with the sentence that introduces it (the last sentence of
    the preceding TEXT sibling), and a paragraph followed by an equation with that
    equation, so a formula question can quote both; a paragraph ending in ":" with what
    it announces (the siblings after it, up to a heading and ``ANNOUNCED_CHARS``); a passage
    ending in a word broken at its line end with the rest of its sentence, when the next node
    starts in lower case (a caption's last line the parser made a paragraph)."""
    n = tree.nodes[nid]
    if n.parent is None:
        return text
    sib = tree.nodes[n.parent].children
    k = sib.index(nid) if nid in sib else -1
    if n.type == NodeType.EQUATION and k > 0:
        prev = tree.nodes[sib[k - 1]]
        if prev.type == NodeType.TEXT and prev.content:
            lead = split_sentences(prev.content)[-1:]
            return "\n\n".join(lead + [text])
    if n.type == NodeType.TEXT and text.rstrip().endswith(":") and 0 <= k < len(sib) - 1:
        # a paragraph that announces what follows ("... grants Licensee a non-exclusive license to:",
        # "... satisfies the following timing requirement:") comes with it: the next siblings up to a
        # heading, at most ``ANNOUNCED_CHARS`` characters of them
        add: list[str] = []
        for j in sib[k + 1:]:
            m = tree.nodes[j]
            if m.type == NodeType.TITLE or not (m.content or "").strip() or sum(map(len, add)) >= ANNOUNCED_CHARS:
                break
            add.append(normalize_ws(m.content))
        if add:
            return text + "\n\n" + "\n\n".join(add)
    if n.type == NodeType.TEXT and 0 <= k < len(sib) - 1:
        nxt = tree.nodes[sib[k + 1]]
        if nxt.type == NodeType.EQUATION and nxt.content and len(text) < 1300:
            return text + "\n\n" + normalize_ws(nxt.content)
    if 0 <= k < len(sib) - 1 and _BROKEN_WORD.search(text):
        # a caption or paragraph whose last line the parser gave to the next node ("... the segmenta-" /
        # "tion embeddings and the position embeddings."): the word is joined and the sentence ends
        nxt = tree.nodes[sib[k + 1]]
        rest = normalize_ws(nxt.content or "")
        if nxt.type == NodeType.TEXT and rest[:1].islower():
            return text.rstrip()[:-1] + rest
    return text


def select_passages(retr, question: str, doc_ids: Sequence[str], top_k: int, *, pool_factor: int = 3,
                    candidates=None, whole_documents: bool = False, per_document: bool = False) -> Selection:
    """Choose the passages that answer ``question`` over ``doc_ids`` (module docstring).

    Args:
        retr: The :class:`~docmaster_core.retrieval.retriever.Retriever`.
        question: The question.
        doc_ids: Documents searched (all in ``retr.view``).
        top_k: Passages to return.
        pool_factor: Candidates per document = ``pool_factor * top_k``.
        whole_documents: Every node of the documents is a candidate when they hold at most
            ``settings.answer_whole_nodes`` nodes in all. Used when the question's names
            picked the documents (:func:`~docmaster_core.qa.names.route_by_names`): the rest
            of the question is then short ("pay invoices within how many days") and its
            embedding may sit closer to a neighbouring clause (a price change "with thirty
            (30) days prior written notice") than to the one that answers (own contract
            questions, set 2: right 0.786 -> 0.857; docs/results/qa.md). Not used for a scope
            chosen by hand: over one chosen paper it answered an unanswerable question. The
            verdict's term weights then come from the whole collection
            (:func:`collection_background`): over one contract every word it lacks weighed
            the most, and a paraphrase ("stop" a renewal) was declined (set 3: 0.727 -> 0.773).
        candidates: Extra ``(cosine, doc index, node id, strategies)`` found by the
            deep mode's sub-queries, pooled with the question's own candidates.
        per_document: Each document's best passage first (:func:`rerank_evidence`), for a
            question about several documents ("Which of these papers ...?").

    Returns:
        A :class:`Selection`.
    """
    view = retr.view
    profile = S.profile_question(question)
    doc_index = [i for i, d in enumerate(view.docs) if d.doc_id in set(doc_ids)]
    bg = S.doc_background(view, doc_index)
    deep = candidates is not None
    if whole_documents:
        n_nodes = sum(view.docs[i].n_nodes for i in doc_index)
        if n_nodes <= getattr(getattr(retr, "settings", None), "answer_whole_nodes", 0):
            pool_factor = max(pool_factor, -(-n_nodes // top_k))  # every node of them is a candidate
        if len(doc_index) < len(view.docs):  # term weights from the collection the question was asked over
            bg = S.Background(bg.n_nodes, bg.df, idf_from=collection_background(view))
    cands, qv = combined_candidates(retr, question, doc_ids, pool_factor * top_k, view)
    cands = cands + _keyword_candidates(view, question, qv, doc_index, top_k, {(c[1], c[2]) for c in cands})
    # pooled first (few, and far from the question), from the documents the retrieval found
    found_in = sorted({c[1] for c in cands})
    counted = _counted_candidates(view, profile, qv, found_in, 2) + _hardware_candidates(view, profile, qv, found_in, 2)
    pooled = {(k[1], k[2]) for k in counted}
    cands = counted + [c for c in cands if (c[1], c[2]) not in pooled]
    if candidates is not None:  # deep mode: the sub-queries' passages first, then the question's own pool
        cands = list(candidates) + cands
    candidates = dedupe_candidates(_expand_sections(view, cands, qv), view, (pool_factor + 1) * top_k)
    ev = rerank_evidence(view, profile, bg, candidates, top_k, per_document=per_document)
    v = S.verdict(profile, bg, _verdict_texts(ev, pairs=deep)) if ev else S.Verdict(
        False, "no passage was retrieved", 0.0, 0.0, [])
    return Selection(ev, v, profile)


def collection_background(view) -> S.Background:
    """The :class:`~docmaster_core.text.answer_units.Background` of every document of the view:
    the number of nodes holding each stemmed term (:func:`~docmaster_core.text.answer_units.terms_of`).

    Built from each document's stored term counts
    (:func:`~docmaster_core.retrieval.keyword.doc_term_counts`, ``collection/docinfo/terms``), not
    from the trees, and cached on the view: a node holding two words of one stem
    ("terminate", "termination") counts twice for it, a small overcount of common stems.
    """
    from ..retrieval.keyword import doc_term_counts

    def build() -> S.Background:
        stems: dict[str, list[str]] = {}
        df: Counter = Counter()
        n = 0
        for dv in view.docs:
            terms, _rows, cols, _counts, lengths, _ids = doc_term_counts(view, dv)
            n += int(lengths.size)
            for j, c in enumerate(np.bincount(cols, minlength=len(terms)).tolist()):
                if c:
                    t = terms[j]
                    for st in stems.setdefault(t, S.terms_of(t)):
                        df[st] += c
        return S.Background(n, df)

    return view.aux("answer_collection_background", build)


def best_quote(question: str, text: str, node_type: str = "TEXT", max_words: int = 60) -> str:
    """The unit of ``text`` that best covers the question's terms and answer type
    (used when a model's quote is not verbatim in its passage, and for the closest
    passages of a "not found" answer): a whole sentence of prose
    (:func:`~docmaster_core.text.words.answer_sentences`), a ``max_words`` window of
    anything else."""
    units = answer_sentences(text) if node_type == "TEXT" else split_sentences(text, max_words=max_words)
    if not units:
        return ""
    if len(units) == 1:
        return units[0]
    profile = S.profile_question(question)
    from collections import Counter

    df: Counter = Counter()
    for u in units:
        df.update(set(S.terms_of(u)))
    sc = S.score_units(profile, units, [node_type] * len(units), S.Background(len(units), df))
    return units[int(np.argmax(sc.coverage * (0.6 + 0.4 * sc.type_match)))]


# "17. ", "17) ", "16.2 ", "Section 4.1 ": a clause number (a bare "3 Results" or "2021 was" is none)
_CLAUSE_NO = re.compile(r"^\s*(?:(?:Section|SECTION|§)\s*(\d{1,3}(?:\.\d{1,3})*)\.?|(\d{1,3}(?:\.\d{1,3})+)\.?|"
                        r"(\d{1,3})[.)])\s+(?=[A-Z(\"\u201c])")


def clause_path(section_path: Sequence[str], text: str) -> list[str]:
    """The section path of a passage, ending with its own numbered clause.

    A numbered paragraph without a heading ("17. This Agreement shall be construed ...")
    is no title node, so the passage's path names the title above it ("DESCRIPTION OF
    DISTRIBUTOR"), not the clause that encloses the words. When the passage starts with a
    clause number that no element of the path starts with, the clause is appended: with the
    short heading run into it ("2. Miscellaneous", "5.1 Governing law"), else ``"clause 17"``.

    Args:
        section_path: The passage's section path (titles from the top).
        text: The passage's text.

    Returns:
        A new list.
    """
    out = list(section_path)
    m = _CLAUSE_NO.match(text or "")
    if not m:
        return out
    num = m.group(1) or m.group(2) or m.group(3)
    if any(re.match(rf"^\s*(?:(?:Section|SECTION|ARTICLE|Article|§)\s*)?{re.escape(num)}(?![\d])", t) for t in out):
        return out
    # a short heading run into the paragraph ("2. Miscellaneous. This Amendment ...", "5.1 Governing law: ...")
    h = re.match(r"([A-Z][^.:;]{0,60}?)[.:](?=\s)", (text or "")[m.end():])
    if h and len(h.group(1).split()) <= 6:
        return out + [normalize_ws((text or "")[m.start():m.end()] + h.group(1))]
    return out + [f"clause {num}"]


def citation_of(e: Evidence, quote: str, file: str = "", supports: bool = True) -> Citation:
    """A :class:`Citation` of passage ``e`` with its page (that of the quoted words,
    :meth:`~docmaster_core.model.Evidence.page_of`), section path (ending with the
    passage's own numbered clause, :func:`clause_path`), node id and box."""
    return Citation(evidence_id=e.evidence_id, doc_id=e.doc_id, node_id=e.node_id, page=e.page_of(quote),
                    section_path=clause_path(e.section_path, e.text), quote=quote, file=file,
                    bbox=tuple(e.bbox) if e.bbox else None, supports=supports)


_WORDS = re.compile(r"[A-Za-z]{3,}")


def not_found_answer(question: str, sel: Selection, files: dict[str, str], backend: str, n_closest: int = 3) -> Answer:
    """The plain "not found" answer with the closest passages marked as not answering: the
    first ``n_closest`` passages in retrieval order that hold at least three words, then
    the others (a table row of bare numbers last)."""
    q = normalize_ws(question)
    # passages with words first: a table's bare numbers ("50.2 | 17.5: 26.4") show a reader nothing (a newcomer)
    # (the "column 2" labels of a headerless table's cells are no words of the document)
    wordy = sorted(sel.evidence, key=lambda e: sum(w.lower() != "column" for w in _WORDS.findall(e.text or "")) < 3)
    closest = [citation_of(e, best_quote(question, e.text, e.node_type), files.get(e.doc_id, ""), supports=False)
               for e in wordy[:n_closest]]
    text = (f'{S.NOT_FOUND_PREFIX} what the question asks ("{q}"): {sel.verdict.reason}.'
            + (" The closest passages are listed below; they do not answer the question." if closest else ""))
    return Answer(text, [], 0, backend, outcome="not_found", closest=closest, reason=sel.verdict.reason)
