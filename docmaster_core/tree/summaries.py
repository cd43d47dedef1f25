"""Bottom-up node summaries of a document tree (SPEC F2, DocMaster Sec. 2.2).

Leaves first: TEXT, TABLE, IMAGE and EQUATION nodes are summarised from their own
content (a paragraph's redaction notes and signature lines left out, :func:`without_furniture`;
content of at most ``max_leaf_words`` words is its own summary, no LLM
call; with the offline backend a long table is summarised by its caption, header
row and first rows, since sentence centrality means nothing for table rows). Then TITLE nodes from the deepest level up, and finally ROOT, are summarised
from their children's summaries with :meth:`LLM.summarize_section`; ROOT from the
abstract, else a headless abstract, else the introduction, else the first body section
(:func:`root_sources`), never from author lists, e-mail addresses, affiliations,
copyright lines or a table of contents, nor from a contract's sentence that only names its
parties ("... referred to individually as a "Party" and collectively as the "Parties"",
:func:`is_party_boilerplate`). Every node ends
with a non-empty summary (fallback: the title text, or "<type> on page N").

On the OpenAI path the calls of one level run on up to ``llm.max_concurrency``
threads; the offline backend is called once per level with the whole batch.
"""
from __future__ import annotations

import logging
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Literal, Sequence

from ..errors import LLMError
from ..model import DocumentTree, Node, NodeType
from ..protocols import LLM
from ..text.words import count_words, normalize_ws, split_sentences, truncate_words

__all__ = ["summarize_tree", "leaf_text", "table_summary", "root_sources", "is_front_junk", "is_party_boilerplate",
           "has_furniture", "without_furniture"]

logger = logging.getLogger(__name__)

_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")


def table_summary(text: str, max_words: int) -> str:
    """The first ``max_words`` words of a table's :func:`leaf_text`, ended at the last whole
    cell (``"; "``) or row (``". "``) inside them, so that no value is cut in half
    ("17.4 ± 1.4" never becomes "17.4 ±"); ``"..."`` marks the rows left out. A first cell
    longer than ``max_words`` is cut at ``max_words`` words.

    Raises:
        ValueError: when ``max_words`` < 1.
    """
    cut = truncate_words(text, max_words)
    if cut == normalize_ws(text):
        return cut
    cut += " "  # a cell or row ending at the last word is whole
    end = max(cut.rfind(". "), cut.rfind("; "))
    return (cut[:end + 1] if end > 0 else cut).strip().rstrip(";") + " ..."


def leaf_text(node: Node) -> str:
    """The text a content node is summarised from (whitespace normalised).

    TABLE markdown becomes one line per row, cells separated by ``"; "``, rule lines
    dropped, the caption (``extra["caption"]``) first when it is not in the content.
    IMAGE: the caption (content or ``extra["caption"]``). TEXT, EQUATION: the content.
    """
    content = node.content or ""
    caption = str((node.extra or {}).get("caption") or "")
    if node.type == NodeType.TABLE:
        rows = []
        for line in content.splitlines():
            line = line.strip()
            if not line or _TABLE_RULE.match(line):
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            row = "; ".join(c for c in cells if c)
            if row:
                rows.append(row.rstrip(".") + ".")
        text = " ".join(rows) if rows else content
        if caption and normalize_ws(caption) not in normalize_ws(text):
            text = caption.rstrip(".") + ". " + text
        return normalize_ws(text)
    if node.type == NodeType.IMAGE:
        return normalize_ws(content or caption)
    return normalize_ws(content)


_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\{[\w.,\s-]+\}@")
# always junk in a document summary: contact, rights and contribution notes
_STRONG_JUNK_RE = re.compile(
    r"(©|\(c\)\s*\d{4}|\bcopyright\b|all rights reserved|\bpermission to (make|reproduce|copy)\b|"
    r"\bgrants? permission\b|\blicen[cs]ed? under\b|\bcorresponding author\b|\bequal contribution\b|"
    r"\bwork (done|performed) (while|at|during)\b|\blisting order is random\b)",
    re.IGNORECASE,
)
# junk in short text: venue and affiliation lines
_JUNK_RE = re.compile(
    r"(\bproceedings of\b|\bconference on\b|\barxiv:\s*\d|\bpreprint\b|\buniversity\b|\binstitute\b|"
    r"\bdepartment\b|\blaborator(y|ies)\b|\bsubmitted to\b|\baccepted (at|by|to)\b)",
    re.IGNORECASE,
)
_LEADER_RE = re.compile(r"(?:\.\s?){4,}\s*\d")
_TOC_HEAD = re.compile(r"^\s*(table of )?contents\s*$", re.IGNORECASE)


def is_front_junk(text: str) -> bool:
    """True for text that must not summarise a document: author lists, e-mail
    addresses, affiliations, copyright and licence lines, venue notes, table-of-contents
    lines (dot leaders), and short fragments that are not prose (fewer than 12 words or
    no sentence end, mostly capitalised words)."""
    t = normalize_ws(text)
    if not t or _EMAIL_RE.search(t) or _LEADER_RE.search(t):
        return True
    words = t.split()
    if len(words) < 12:
        return True
    if _STRONG_JUNK_RE.search(t) or (_JUNK_RE.search(t) and len(words) < 40):
        return True
    caps = sum(1 for w in words if w[:1].isupper())
    if caps > 0.6 * len(words):
        return True  # a list of names / a title block
    return not re.search(r"[a-z]{2,}[.!?]", t)


# a contract's sentence that only says how its parties are called: "... may be referred to herein individually as
# a "Party" and collectively as the "Parties"", "... are hereinafter sometimes referred to as a Party or jointly as
# Parties"
_PARTY_TERMS = re.compile(r"\b(?:referred to|known|called|designated)\b[^.;]{0,80}\bas\b[^.;]{0,12}[\"“”']?\s*"
                          r"part(?:y|ies)\b", re.IGNORECASE)
# ... but not the opening sentence that makes the agreement and names its parties on the way ("This Agreement is
# entered into by and between A and B (each a "Party")")
_MAKES_AGREEMENT = re.compile(r"\b(?:entered into|made and entered|is made|are made|dated as of|effective as of)\b",
                              re.IGNORECASE)


# "... the parties agree as follows:", "ACSI and Company agree as follows:" (the words before the first clause)
_AGREE_AS_FOLLOWS = re.compile(r"\bagrees? as follows\W*$", re.IGNORECASE)


def is_party_boilerplate(sentence: str) -> bool:
    """True for a sentence that defines what a contract's parties are called and says nothing
    else ("ACSI and Company are sometimes referred to collectively herein as the "Parties" and
    individually as a "Party."", at most 40 words), or that only leads into the clauses ("ACSI
    and Company agree as follows:", at most 12 words): it names no subject of the document, so it
    is no document summary (newcomer 15 read one as a contract's gist)."""
    t = normalize_ws(sentence)
    if not t:
        return False
    if count_words(t) <= 12 and _AGREE_AS_FOLLOWS.search(t):
        return True
    return count_words(t) <= 40 and bool(_PARTY_TERMS.search(t)) and not _MAKES_AGREEMENT.search(t)


# a filing's redaction note inside a paragraph ("*Certain information on this page has been omitted and filed
# separately with the Commission."), wherever the sentence splitter puts its start
_REDACTION_NOTE = re.compile(r"[*\[\]]*\s*(?:\b(?:Certain|Confidential|Portions|Information)\b[^.]{0,160}?"
                             r"omitted and filed separately|\bconfidential treatment (?:has been |was |is )?requested)"
                             r"[^.]*\.?", re.IGNORECASE)
# ... and the signature block's opening and its fields
_SIGNATURE = re.compile(r"\bIN WITNESS WHEREOF\b|(?:^|\s)(?:By|Name|Title|Its)\s*:\s*_{3,}|(?:^|\s)/s/")


def has_furniture(text: str) -> bool:
    """True when ``text`` holds a redaction note or a signature line (:func:`without_furniture`)."""
    return bool(_REDACTION_NOTE.search(text or "") or _SIGNATURE.search(text or ""))


def without_furniture(text: str) -> str:
    """``text`` without a filing's redaction notes and without its sentences that belong to a
    signature block ("IN WITNESS WHEREOF ...", a blank field "By: ____", "/s/ Jane Doe"), which
    say nothing a summary should; ``""`` when nothing else is left."""
    t = normalize_ws(_REDACTION_NOTE.sub(" ", text or ""))
    return " ".join(x for x in split_sentences(t) if not _SIGNATURE.search(x))


def _without_party_names(node: Node, max_words: int) -> str:
    """A ROOT source's summary with the sentences of :func:`is_party_boilerplate` and the filing
    furniture (:func:`without_furniture`) left out; when nothing else is left (a preamble
    summarised by its "referred to as a "Party"" sentence), its first other sentences up to
    ``max_words`` words ("This Master Services Agreement ... is entered into by ..."); ``""`` when
    it has none."""
    furniture = has_furniture(node.summary)
    sents = split_sentences(without_furniture(node.summary) if furniture else node.summary)
    kept = [x for x in sents if not is_party_boilerplate(x)]
    if kept:  # (unchanged when nothing was left out)
        return node.summary if not furniture and len(kept) == len(sents) else " ".join(kept)
    lead: list[str] = []
    for x in split_sentences(without_furniture(leaf_text(node))):
        if is_party_boilerplate(x):
            continue
        if lead and count_words(" ".join(lead + [x])) > max_words:
            break
        lead.append(x)
    return truncate_words(" ".join(lead), max_words)


def root_sources(tree: DocumentTree) -> list[int]:
    """Nodes whose summaries make the ROOT summary (DocMaster: the document's gist).

    In order of preference (of a section, its children that are not junk and not
    footnotes or captions): the abstract (a section named Abstract / Summary /
    Executive summary / Highlights); else prose TEXT directly under ROOT (an abstract
    without a heading), skipping author blocks, e-mail addresses, affiliations,
    copyright lines, tables of contents (:func:`is_front_junk`) and paragraphs that only
    name a contract's parties (:func:`is_party_boilerplate`); else the
    introduction (Introduction / Overview / About this manual); else the first body
    section (not a table of contents, front or back matter). Falls back to all ROOT
    children that are not junk, then to all of them.
    """
    from .roles import heading_role

    nodes = tree.nodes
    root = nodes[0]
    titles = [n for n in nodes[1:] if n.type == NodeType.TITLE]
    first_pages = max(3, min(tree.n_pages or 3, 5))

    def ok(c: int) -> bool:
        n = nodes[c]
        if (n.extra or {}).get("role") in ("footnote", "caption", "signature"):
            return False
        if n.type == NodeType.TEXT:  # (a paragraph that only names the parties is no gist either)
            return not is_front_junk(n.content) and not all(map(is_party_boilerplate, split_sentences(n.content)))
        return n.type == NodeType.TITLE and not is_front_junk(n.summary or "")

    def good_children(n: Node, limit: int = 8) -> list[int]:
        """The section's first prose paragraphs (TEXT descendants in reading order,
        not junk), else its subsections with a usable summary."""
        out: list[int] = []
        stack = list(reversed(n.children))
        while stack and len(out) < limit:
            c = stack.pop()
            nd = nodes[c]
            if nd.type == NodeType.TEXT and ok(c):
                out.append(c)
            elif nd.type == NodeType.TITLE:
                stack.extend(reversed(nd.children))
        return out or [c for c in n.children if nodes[c].type == NodeType.TITLE and ok(c)]

    def has_content(n: Node) -> bool:
        return bool(good_children(n))

    for n in titles:
        if n.page_start <= first_pages and heading_role(n.content) == "abstract" and has_content(n):
            return good_children(n)
    prose = [c for c in root.children if nodes[c].type == NodeType.TEXT and ok(c)]
    if prose:
        return prose
    for n in titles:
        if heading_role(n.content) == "introduction" and has_content(n):
            return good_children(n)
    for c in root.children:
        n = nodes[c]
        if n.type != NodeType.TITLE or _TOC_HEAD.match(n.content) or not has_content(n):
            continue
        if heading_role(n.content) in ("back", "appendix", "related"):
            continue
        return good_children(n)
    rest = [c for c in root.children if ok(c)]
    return rest or list(root.children)


def _label(tree: DocumentTree, node: Node) -> str:
    """Last-resort summary: the title text, else a description of the node."""
    if node.type == NodeType.TITLE and normalize_ws(node.content):
        return normalize_ws(node.content)
    if node.type == NodeType.ROOT:
        return normalize_ws(tree.title) or normalize_ws(tree.source) or "Document"
    where = f" in section {node.section_path[-1]}" if node.section_path else ""
    return f"{node.type.value.capitalize()} on page {node.page_start}{where}"


def _run(
    llm: LLM,
    items: Sequence[Any],
    single: Callable[[Any], str],
    many: Callable[[list[Any]], list[str]] | None,
    fallback: Callable[[Any], str],
    on_error: str,
    failures: list[str],
) -> list[str]:
    """Apply ``many`` (one batch) or ``single`` (thread pool); LLM errors -> fallback."""
    if not items:
        return []
    if many is not None:
        try:
            return many(list(items))
        except LLMError as e:
            if on_error == "raise":
                raise
            failures.append(str(e))
            return [fallback(x) for x in items]

    def guarded(x: Any) -> str:
        try:
            return single(x)
        except LLMError as e:
            if on_error == "raise":
                raise
            failures.append(str(e))
            return fallback(x)

    workers = max(1, int(llm.max_concurrency))
    if workers == 1 or len(items) == 1:
        return [guarded(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(guarded, items))


def summarize_tree(
    tree: DocumentTree,
    llm: LLM,
    *,
    max_section_words: int = 80,
    max_leaf_words: int = 50,
    on_error: Literal["fallback", "raise"] = "fallback",
) -> int:
    """Fill ``node.summary`` for every node of ``tree``, bottom-up, in place.

    Args:
        tree: The document tree (pre-order, ROOT first).
        llm: Any :class:`~docmaster_core.llm.base.LLM` backend.
        max_section_words: Word bound of TITLE and ROOT summaries.
        max_leaf_words: Word bound of content-node summaries; shorter content is
            its own summary.
        on_error: ``"fallback"``: a failed LLM call (transport, schema, budget)
            gives the truncated content (leaves) or truncated joined child summaries
            (sections) and a logged warning; ``"raise"``: the :class:`LLMError`
            propagates.

    Returns:
        The number of LLM calls that failed (0 = every summary came from the LLM or
        needed none); their nodes got fallback summaries.

    Raises:
        LLMError: only with ``on_error="raise"``.
        ValueError: for an unknown ``on_error``.
    """
    if on_error not in ("fallback", "raise"):
        raise ValueError(f"on_error must be 'fallback' or 'raise', not {on_error!r}")
    nodes = tree.nodes
    doc_id = tree.doc_id or None
    failures: list[str] = []

    # 1. leaves
    pending: list[tuple[int, str]] = []
    for n in nodes:
        if not n.type.is_content:
            continue
        text = leaf_text(n)
        if n.type == NodeType.TEXT and has_furniture(text):
            text = without_furniture(text) or text
        if not text:
            n.summary = _label(tree, n)
        elif count_words(text) <= max_leaf_words:
            n.summary = text
        elif n.type == NodeType.TABLE and llm.is_offline:
            n.summary = table_summary(text, max_leaf_words)  # caption, header row, first rows
        else:
            pending.append((n.id, text))
    # the offline backend summarises a batch at once (vectorised); a chat model is asked
    # once per item on its threads, so that one failure falls back for that item only
    many_leaf = llm.summarize_many if llm.is_offline else None
    results = _run(
        llm,
        [t for _, t in pending],
        lambda t: llm.summarize(t, doc_id=doc_id, max_words=max_leaf_words),
        (lambda ts: many_leaf(ts, doc_id=doc_id, max_words=max_leaf_words)) if many_leaf else None,
        lambda t: truncate_words(t, max_leaf_words),
        on_error,
        failures,
    )
    for (nid, text), s in zip(pending, results):
        nodes[nid].summary = normalize_ws(s) or truncate_words(text, max_leaf_words)

    # 2. TITLE levels from the deepest up, then ROOT (depth 0)
    internal = [n for n in nodes if not n.type.is_content]
    many_sec = llm.summarize_section_many if llm.is_offline else None
    for depth in sorted({n.depth for n in internal}, reverse=True):
        level = [n for n in internal if n.depth == depth]
        items: list[tuple[str, list[str]]] = []
        targets: list[Node] = []
        for n in level:
            title = _label(tree, n)
            if n.type == NodeType.ROOT:
                src = root_sources(tree)
            else:  # a signature block is not what a section says
                src = [c for c in n.children if (nodes[c].extra or {}).get("role") != "signature"] or n.children
            if n.type == NodeType.ROOT:  # (without the sentences that only name a contract's parties)
                kids = [k for k in (_without_party_names(nodes[c], max_leaf_words) for c in src) if normalize_ws(k)] \
                    or [nodes[c].summary for c in src if normalize_ws(nodes[c].summary)]
            else:  # (a child that is all filing furniture says nothing: a section of signatures has its title)
                kids = [nodes[c].summary for c in src if without_furniture(nodes[c].summary)]
            if not kids:
                n.summary = title
                continue
            items.append((title, kids))
            targets.append(n)
        results = _run(
            llm,
            items,
            lambda it: llm.summarize_section(it[0], it[1], doc_id=doc_id, max_words=max_section_words),
            (lambda its: many_sec(its, doc_id=doc_id, max_words=max_section_words)) if many_sec else None,
            lambda it: truncate_words(" ".join(it[1]), max_section_words) or it[0],
            on_error,
            failures,
        )
        for n, (title, kids), s in zip(targets, items, results):
            n.summary = normalize_ws(s) or truncate_words(" ".join(kids), max_section_words) or title

    # 3. guarantee non-empty
    for n in nodes:
        if not normalize_ws(n.summary):
            n.summary = _label(tree, n)
    if failures:
        logger.warning(
            "summarize_tree(%s): %d LLM call(s) failed, fallback summaries used; first error: %s",
            tree.doc_id,
            len(failures),
            failures[0],
        )
    return len(failures)
