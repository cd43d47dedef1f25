"""Document-tree building (SPEC F2): parsed elements -> :class:`DocumentTree`.

The tree has a ROOT node (depth 0, content = document title); TITLE nodes nest by
heading level (a heading closes every open heading of the same or a deeper level);
content nodes (TEXT, IMAGE, TABLE, EQUATION) hang under the innermost open heading,
or under ROOT before the first heading. Nodes are created in reading order, which is
a pre-order traversal, so ``nodes[i].id == i`` and every parent precedes its children
(:meth:`DocumentTree.validate` holds).

Before nesting, TEXT elements are normalised:

1. **Continuations joined**: a paragraph that does not end a sentence, followed by a
   TEXT that starts in lower case (next column or page, possibly after a figure or
   table), is one paragraph; a line-end hyphen between them is removed.
   A continuation is joined across at most one page break.
2. **Fragments merged**: TEXT shorter than ``min_fragment_chars`` is merged into the
   previous TEXT of the same section on the same page (else the next one on the same
   page); short lines on different pages stay apart (slides).
3. **Long paragraphs split** at sentence ends into pieces of at most
   ``max_paragraph_chars`` (a single longer sentence is cut at a space).

Nodes are page-true: every box of a node is kept with its page, and a node's
``page_start``/``page_end`` and boxes are those of the words it holds (a split piece
keeps only the boxes its characters came from). ``extra["page_chars"]`` lists
``[char_offset, page]`` where each box's text starts, so the page of a quoted passage
can be found (:func:`page_of_text`).

Source: DocMaster (arXiv 2607.08539) Sec. 2.2, "document tree" construction from the
parser's layout elements.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ParsingSettings
from ..model import DocumentTree, Element, Node, NodeType, ParsedDocument

__all__ = ["build_tree", "split_sentences", "split_long_text", "page_of_text"]

# a contract's recitals ("WHEREAS:", "Recitals") end where its operative part begins ("NOW, THEREFORE, the
# parties agree as follows:"): the clauses after it are not recitals
_RECITALS_RE = re.compile(r"^\s*(?:whereas|recitals?|background|preliminary statements?)\b\W*$", re.I)
_OPERATIVE_RE = re.compile(r"^\s*now,?\s+(?:therefore|it\s+is\s+(?:hereby\s+)?agreed)\b"
                           r"|^\s*(?:therefore,?\s+)?in\s+consideration\s+of\b", re.I)
# a clause number opening a paragraph ("6.4 Customer shall ...") and a heading's own number ("6.3 Long Lead Items")
_CLAUSE_NUM_RE = re.compile(r"^\s*(\d{1,3}(?:\.\d{1,3})+)\.?\s+(?=[A-Z(“\"])")
_HEADING_NUM_RE = re.compile(r"^\s*(?:(?:article|section)\s+)?(\d{1,3}(?:\.\d{1,3})*)\.?(?:\s|$)", re.I)
_END_RE = re.compile(r"[.!?:;][\"'”’)\]]*\s*$")
_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[A-Z0-9\"'“‘(\[])")
# abbreviations after which a period does not end a sentence
_ABBREV_RE = re.compile(r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|Fig|Figs|Eq|Eqs|Sec|Tab|No|Dr|Mr|Mrs|Ms|Prof|resp|approx|Ref|Refs|al)\.|\b[A-Z]\.)$")


@dataclass
class _Item:
    """A (possibly merged) element during tree building."""

    type: NodeType
    text: str
    pages: list[int]
    bboxes: list[tuple[int, float, float, float, float]]
    level: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    starts: list[int] = field(default_factory=lambda: [0])  # char offset where each box's text starts

    @classmethod
    def of(cls, e: Element) -> "_Item":
        b = tuple(float(v) for v in e.bbox)
        return cls(e.type, e.text, [int(e.page)], [(int(e.page), *b)], e.level, dict(e.extra or {}))  # type: ignore[arg-type]

    def append(self, other: "_Item") -> None:
        """Join ``other``'s text, pages and boxes after this item's."""
        joined = _join_text(self.text, other.text)
        off = len(joined) - len(other.text.lstrip())
        self.text = joined
        self.pages += other.pages
        self.bboxes += other.bboxes
        self.starts += [off + s for s in other.starts]

    def prepend(self, other: "_Item") -> None:
        """Join ``other``'s text, pages and boxes before this item's."""
        joined = _join_text(other.text, self.text)
        off = len(joined) - len(self.text.lstrip())
        self.text = joined
        self.pages = other.pages + self.pages
        self.bboxes = other.bboxes + self.bboxes
        self.starts = list(other.starts) + [off + s for s in self.starts]


def split_sentences(text: str) -> list[str]:
    """Split text at sentence ends (``.``, ``!``, ``?`` followed by a space and an
    upper-case letter, digit or quote), not after common abbreviations ("e.g.",
    "et al.", "Fig.", initials)."""
    parts = []
    start = 0
    for m in _SENT_SPLIT_RE.finditer(text):
        if _ABBREV_RE.search(text[max(start, m.start() - 12):m.start()]):
            continue
        parts.append(text[start:m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return [p for p in parts if p]


def split_long_text(text: str, max_chars: int) -> list[str]:
    """Greedy split of ``text`` into pieces of at most ``max_chars`` characters at
    sentence ends; a sentence longer than ``max_chars`` is cut at the last space
    before the limit (or hard-cut when it has none)."""
    if len(text) <= max_chars:
        return [text]
    pieces: list[str] = []
    cur = ""
    for s in split_sentences(text):
        while len(s) > max_chars:
            cut = s.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 3 else max_chars
            head, s = s[:cut].strip(), s[cut:].strip()
            if cur:
                pieces.append(cur)
                cur = ""
            pieces.append(head)
        if not cur:
            cur = s
        elif len(cur) + 1 + len(s) <= max_chars:
            cur = cur + " " + s
        else:
            pieces.append(cur)
            cur = s
    if cur:
        pieces.append(cur)
    return pieces


def _join_text(a: str, b: str) -> str:
    a = a.rstrip()
    b = b.lstrip()
    if a.endswith("-") and len(a) > 1 and a[-2].isalpha() and b[:1].islower():
        return a[:-1] + b
    return a + " " + b


def _join_continuations(items: list[_Item]) -> list[_Item]:
    out: list[_Item] = []
    for it in items:
        if it.type == NodeType.TEXT and it.text[:1].islower():
            # the last TEXT, with only figures/tables in between, no heading/equation
            j = len(out) - 1
            while j >= 0 and out[j].type in (NodeType.IMAGE, NodeType.TABLE):
                j -= 1
            if j >= 0 and out[j].type == NodeType.TEXT and not _END_RE.search(out[j].text) \
                    and not out[j].extra.get("list") and not it.extra.get("list") \
                    and 0 <= min(it.pages) - max(out[j].pages) <= 1:
                prev = out[j]
                prev.append(it)
                prev.extra["joined"] = prev.extra.get("joined", 1) + 1
                continue
        out.append(it)
    return out


def _merge_fragments(items: list[_Item], min_chars: int) -> list[_Item]:
    if min_chars <= 0:
        return items
    out = list(items)
    i = 0
    while i < len(out):
        it = out[i]
        if it.type != NodeType.TEXT or len(it.text) >= min_chars:
            i += 1
            continue
        # previous TEXT in the same section (no TITLE in between)
        target = None
        j = i - 1
        page = it.pages[0]
        role = it.extra.get("role")  # a fragment joins text of its own kind (a signature line joins its block)
        while j >= 0 and out[j].type != NodeType.TITLE and page in out[j].pages:
            if out[j].type == NodeType.TEXT and out[j].extra.get("role") == role:
                target = j
                break
            j -= 1
        if target is not None:
            out[target].append(it)
            del out[i]
            continue
        j = i + 1
        while j < len(out) and out[j].type != NodeType.TITLE and page in out[j].pages:
            if out[j].type == NodeType.TEXT and out[j].extra.get("role") == role:
                target = j
                break
            j += 1
        if target is not None:
            out[target].prepend(it)
            del out[i]
            continue
        i += 1
    return out


def _split_long(items: list[_Item], max_chars: int) -> list[_Item]:
    out: list[_Item] = []
    for it in items:
        if it.type != NodeType.TEXT or len(it.text) <= max_chars:
            out.append(it)
            continue
        pieces = split_long_text(it.text, max_chars)
        pos = 0
        for k, p in enumerate(pieces):
            a = it.text.find(p, pos)
            a = pos if a < 0 else a
            b = a + len(p)
            pos = b
            # the boxes whose text overlaps [a, b)
            ends = it.starts[1:] + [len(it.text) + 1]
            keep = [m for m in range(len(it.bboxes)) if it.starts[m] < b and ends[m] > a] or [0]
            out.append(_Item(NodeType.TEXT, p, [it.pages[m] for m in keep], [it.bboxes[m] for m in keep], None,
                             {**it.extra, "split": [k, len(pieces)]},
                             [max(0, it.starts[m] - a) for m in keep]))
    return out


def page_of_text(node: Node, quote: str) -> int:
    """The 1-based page on which ``quote`` starts inside ``node.content`` (the node's
    first page when the quote is not found or the node has no page offsets)."""
    pc = (node.extra or {}).get("page_chars") if isinstance(node.extra, dict) else None
    if not pc or not quote:
        return node.page_start
    at = node.content.find(quote.strip()[:60])
    if at < 0:
        at = node.content.lower().find(" ".join(quote.split())[:60].lower())
    if at < 0:
        return node.page_start
    page = node.page_start
    for off, pg in pc:
        if off <= at:
            page = int(pg)
    return page


def first_heading(items: list[_Item], max_page: int = 2) -> str:
    """The document's first heading on its first ``max_page`` pages, used as its title
    when the PDF has neither a title line nor a title in its metadata; ``""`` when
    there is none (a numbered section heading such as "1 Introduction" does not count)."""
    for it in items:
        if min(it.pages) > max_page:
            break
        text = " ".join(it.text.split())
        if it.type == NodeType.TITLE and 3 <= len(text) <= 200 and not re.match(r"^(\d+(\.\d+)*|[IVX]+)\.?\s", text):
            return text
    return ""


def _close_sibling_clauses(stack: list[tuple[int, int]], nodes: list[Node], number: list[str]) -> None:
    """A paragraph that opens with its own clause number ("6.4 ...", untitled) closes the open
    numbered headings it follows in the same clause: "6.3 Long Lead Items" (an earlier sibling)
    or "13.3.4 Maintain Credit Line" before "13.4 ..." (inside an earlier sibling), so it sits in
    its clause ("6. Material Procurement"), not in the titled sub-clause before it. Headings of
    a level above the paragraph's number ("6." before "7.1"), of another clause ("15.1 ..."
    before "3.1 ...", "3.2 Method" before "2.5 GHz ...") and unnumbered ones stay open."""
    k = len(number)
    while stack:
        m = _HEADING_NUM_RE.match(nodes[stack[-1][1]].content or "")
        if not m:
            return
        head = m.group(1).split(".")
        if len(head) < k or head[:k - 1] != number[:k - 1] or int(number[-1]) <= int(head[k - 1]):
            return
        stack.pop()


def build_tree(parsed: ParsedDocument, doc_id: str, settings: ParsingSettings | None = None) -> DocumentTree:
    """Build the document tree of one parsed document (SPEC F2).

    Args:
        parsed: Parser output; elements in reading order.
        doc_id: Workspace document id stored in the tree.
        settings: ``max_paragraph_chars`` and ``min_fragment_chars`` (defaults when
            ``None``).

    Returns:
        A :class:`DocumentTree` whose ``nodes`` are in pre-order (ROOT first, id =
        position). Node ``page_start``/``page_end`` are 1-based (a TITLE covers the
        pages of its whole section), ``bboxes`` are ``(page, x0, y0, x1, y1)`` in PDF
        points, ``section_path`` lists the enclosing titles (a TITLE's own text
        last), ``order`` is the reading-order rank (equal to the id), ``level`` is
        the heading level of TITLE nodes. :meth:`DocumentTree.validate` passes. A
        paragraph that opens a contract's operative part ("NOW, THEREFORE ...") closes an
        open recitals heading ("WHEREAS:", "Recitals"): it and the clauses after it are
        the recitals' siblings, not their children; one that opens with its own clause
        number ("6.4 ...") closes a titled sibling ("6.3 Long Lead Items") open before it
        (:func:`_close_sibling_clauses`).
    """
    st = settings or ParsingSettings()
    items = [_Item.of(e) for e in sorted(parsed.elements, key=lambda e: e.order)
             if e.type != NodeType.ROOT and (e.text.strip() or e.type in (NodeType.IMAGE, NodeType.TABLE))]
    items = _join_continuations(items)
    items = _merge_fragments(items, st.min_fragment_chars)
    items = _split_long(items, st.max_paragraph_chars)

    n_pages = max(1, int(parsed.n_pages or 1))
    title = parsed.title or first_heading(items) or Path(parsed.path).stem
    root = Node(id=0, type=NodeType.ROOT, depth=0, parent=None, children=[], content=title,
                page_start=1, page_end=n_pages, bboxes=[], section_path=[], order=0, level=0,
                extra={"parser": parsed.parser})
    nodes: list[Node] = [root]
    stack: list[tuple[int, int]] = []  # (level, node id) of open headings
    for it in items:
        if it.type == NodeType.TITLE:
            lvl = max(1, int(it.level or 1))
            while stack and stack[-1][0] >= lvl:
                stack.pop()
        elif it.type == NodeType.TEXT and _OPERATIVE_RE.match(it.text):
            # "NOW, THEREFORE ..." closes an open recitals heading: it and what follows leave it
            at = [k for k, (_, hid) in enumerate(stack) if _RECITALS_RE.match(nodes[hid].content or "")]
            if at:
                del stack[at[-1]:]
        elif it.type == NodeType.TEXT and (m := _CLAUSE_NUM_RE.match(it.text)):
            _close_sibling_clauses(stack, nodes, m.group(1).split("."))
        parent_id = stack[-1][1] if stack else 0
        parent = nodes[parent_id]
        nid = len(nodes)
        path = list(parent.section_path)
        if it.type == NodeType.TITLE:
            path = path + [it.text]
        if len(set(it.pages)) > 1:
            it.extra["page_chars"] = [[int(o), int(pg)] for o, pg in zip(it.starts, it.pages)]
        node = Node(
            id=nid, type=it.type, depth=parent.depth + 1, parent=parent_id, children=[],
            content=it.text, page_start=min(it.pages), page_end=max(it.pages),
            bboxes=list(it.bboxes), section_path=path, order=nid,
            level=(max(1, int(it.level or 1)) if it.type == NodeType.TITLE else None),
            extra=it.extra,
        )
        nodes.append(node)
        parent.children.append(nid)
        if it.type == NodeType.TITLE:
            stack.append((node.level or 1, nid))
    # a TITLE covers the pages of its whole section (children come after parents)
    for n in reversed(nodes[1:]):
        if n.parent is not None and n.parent != 0:
            p = nodes[n.parent]
            p.page_end = max(p.page_end, n.page_end)
            p.page_start = min(p.page_start, n.page_start)
    tree = DocumentTree(doc_id=doc_id, title=title, nodes=nodes, n_pages=n_pages, source=Path(parsed.path).name)
    return tree
