"""Core data model: parsed elements, document-tree nodes and the document tree.

Conventions used everywhere in DocMaster:

* pages are 1-based;
* boxes are ``(x0, y0, x1, y1)`` in PDF points (1/72 inch), origin top-left as in
  PyMuPDF;
* a node's ``id`` is its position in :attr:`DocumentTree.nodes` (ROOT is 0); the
  pair ``(doc_id, id)`` identifies a node in a workspace.

Source: DocMaster (arXiv 2607.08539) Sec. 2.2, "document tree" with node types ROOT,
TITLE, TEXT, IMAGE, TABLE, EQUATION.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

__all__ = [
    "NodeType",
    "BBox",
    "Element",
    "ParsedDocument",
    "Node",
    "DocumentTree",
]

BBox = tuple[float, float, float, float]


class NodeType(str, enum.Enum):
    """The six node types of a DocMaster document tree (paper Sec. 2.2)."""

    ROOT = "ROOT"
    TITLE = "TITLE"
    TEXT = "TEXT"
    IMAGE = "IMAGE"
    TABLE = "TABLE"
    EQUATION = "EQUATION"

    @property
    def is_content(self) -> bool:
        """True for the leaf types TEXT, IMAGE, TABLE and EQUATION."""
        return self not in (NodeType.ROOT, NodeType.TITLE)


@dataclass
class Element:
    """One layout element as emitted by a parser, before tree building.

    Attributes:
        type: TITLE, TEXT, IMAGE, TABLE or EQUATION (never ROOT).
        text: The element's text. For TABLE a markdown rendering, for IMAGE its
            caption (may be empty), for EQUATION the extracted text/LaTeX.
        page: 1-based page number.
        bbox: ``(x0, y0, x1, y1)`` in PDF points on ``page``.
        order: Global reading order within the document (0-based, increasing).
        level: Heading level for TITLE (1 = top-level section), else ``None``.
        extra: Type-specific payload, e.g. ``{"rows": [[...], ...]}`` for tables,
            ``{"caption": ..., "image_path": ...}`` for images, ``{"font_size": ...}``.
    """

    type: NodeType
    text: str
    page: int
    bbox: BBox
    order: int = 0
    level: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParsedDocument:
    """A parser's output for one file.

    Attributes:
        path: Path of the source file as given to the parser.
        title: Document title (from metadata or the first page), may be empty.
        n_pages: Number of pages.
        elements: Elements in reading order.
        parser: Name of the backend that produced it (``"pymupdf"``, ``"mineru"``,
            ``"mineru-import"``).
        outline: The PDF outline as ``[(level, title, page)]`` when present.
        page_sizes: ``[(width, height)]`` per page in PDF points.
        metadata: Free-form extra information (e.g. warnings).
    """

    path: str
    title: str
    n_pages: int
    elements: list[Element]
    parser: str
    outline: list[tuple[int, str, int]] = field(default_factory=list)
    page_sizes: list[tuple[float, float]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Node:
    """A node of a document tree.

    Attributes:
        id: Position in :attr:`DocumentTree.nodes` (ROOT = 0).
        type: The node type.
        depth: Tree depth; ROOT has depth 0.
        parent: Parent node id, ``None`` for ROOT.
        children: Child node ids in reading order.
        content: Raw content (heading text, paragraph text, table markdown, image
            caption, equation text).
        page_start: First 1-based page the node covers (for ROOT: 1).
        page_end: Last 1-based page the node covers.
        bboxes: ``[(page, x0, y0, x1, y1)]`` in PDF points; several for a paragraph
            that spans columns or pages.
        section_path: Titles of the enclosing sections from the top, the node's own
            title last for TITLE nodes.
        order: Reading order among the document's nodes.
        level: Heading level for TITLE nodes.
        summary: Summary text (filled by the LLM layer, bottom-up).
        extra: Type-specific payload copied from the element(s).
    """

    id: int
    type: NodeType
    depth: int
    parent: int | None
    children: list[int]
    content: str
    page_start: int
    page_end: int
    bboxes: list[tuple[int, float, float, float, float]] = field(default_factory=list)
    section_path: list[str] = field(default_factory=list)
    order: int = 0
    level: int | None = None
    summary: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """The heading text for TITLE nodes, else an empty string."""
        return self.content if self.type == NodeType.TITLE else ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the node (no children expansion)."""
        return {
            "id": self.id,
            "type": self.type.value,
            "depth": self.depth,
            "parent": self.parent,
            "children": list(self.children),
            "content": self.content,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "bboxes": [list(b) for b in self.bboxes],
            "section_path": list(self.section_path),
            "order": self.order,
            "level": self.level,
            "summary": self.summary,
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Node":
        """Inverse of :meth:`to_dict`."""
        return cls(
            id=int(d["id"]),
            type=NodeType(d["type"]),
            depth=int(d["depth"]),
            parent=None if d.get("parent") is None else int(d["parent"]),
            children=[int(c) for c in d.get("children", [])],
            content=d.get("content", ""),
            page_start=int(d.get("page_start", 1)),
            page_end=int(d.get("page_end", 1)),
            bboxes=[tuple(b) for b in d.get("bboxes", [])],  # type: ignore[misc]
            section_path=list(d.get("section_path", [])),
            order=int(d.get("order", 0)),
            level=d.get("level"),
            summary=d.get("summary", "") or "",
            extra=d.get("extra") or {},
        )


@dataclass
class DocumentTree:
    """A document tree T = (V, E) (DocMaster Sec. 2.2).

    ``nodes[0]`` is ROOT; ``nodes[i].id == i``; every non-root node has a parent with
    a smaller id (nodes are stored in pre-order), so arrays indexed by node id can be
    filled in one pass.

    Attributes:
        doc_id: Workspace document id (content hash prefix).
        title: Document title.
        nodes: All nodes, pre-order.
        n_pages: Page count of the source.
        source: File name of the source document.
    """

    doc_id: str
    title: str
    nodes: list[Node]
    n_pages: int = 0
    source: str = ""

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    @property
    def root(self) -> Node:
        return self.nodes[0]

    def parents(self) -> np.ndarray:
        """Parent id of every node, shape (|V|,), int64; ROOT has -1."""
        return np.array([-1 if n.parent is None else n.parent for n in self.nodes], dtype=np.int64)

    def depths(self) -> np.ndarray:
        """Depth of every node, shape (|V|,), int64; ROOT has 0."""
        return np.array([n.depth for n in self.nodes], dtype=np.int64)

    def ids_of_type(self, *types: NodeType) -> np.ndarray:
        """Ids of the nodes whose type is in ``types``, shape (m,), int64, ascending."""
        wanted = set(types)
        return np.array([n.id for n in self.nodes if n.type in wanted], dtype=np.int64)

    def text_node_ids(self) -> np.ndarray:
        """Ids of TEXT nodes, shape (m,), int64 (the nodes SEC and PC-KMeans work on)."""
        return self.ids_of_type(NodeType.TEXT)

    def count_by_type(self) -> dict[str, int]:
        """Number of nodes per type name (all six types present as keys)."""
        counts = {t.value: 0 for t in NodeType}
        for n in self.nodes:
            counts[n.type.value] += 1
        return counts

    def subtree(self, node_id: int) -> list[int]:
        """Ids of ``node_id`` and all its descendants, pre-order."""
        out, stack = [], [node_id]
        while stack:
            i = stack.pop()
            out.append(i)
            stack.extend(reversed(self.nodes[i].children))
        return out

    def to_nested(self, node_id: int = 0, max_chars: int | None = None) -> dict[str, Any]:
        """Nested JSON-ready dict: id, type, depth, page, title/text, children."""
        n = self.nodes[node_id]
        text = n.content if max_chars is None else n.content[:max_chars]
        d: dict[str, Any] = {"id": n.id, "type": n.type.value, "depth": n.depth, "page": n.page_start}
        if n.type == NodeType.TITLE:
            d["title"] = text
        elif n.type == NodeType.ROOT:
            d["title"] = self.title
        else:
            d["text"] = text
        d["children"] = [self.to_nested(c, max_chars) for c in n.children]
        return d

    def validate(self) -> None:
        """Check the structural invariants; raises ``ValueError`` naming the first breach."""
        if not self.nodes or self.nodes[0].type != NodeType.ROOT:
            raise ValueError("tree must start with a ROOT node")
        for i, n in enumerate(self.nodes):
            if n.id != i:
                raise ValueError(f"node at position {i} has id {n.id}")
            if i == 0:
                if n.parent is not None or n.depth != 0:
                    raise ValueError("ROOT must have no parent and depth 0")
                continue
            if n.parent is None or not (0 <= n.parent < i):
                raise ValueError(f"node {i} has invalid parent {n.parent}")
            p = self.nodes[n.parent]
            if n.depth != p.depth + 1:
                raise ValueError(f"node {i} depth {n.depth} != parent depth + 1")
            if i not in p.children:
                raise ValueError(f"node {i} missing from its parent's children")
            if p.type.is_content:
                raise ValueError(f"node {i} hangs under content node {p.id}")


# --------------------------------------------------------------------------------------
# Semantic index, retrieval and LLM results
# --------------------------------------------------------------------------------------


@dataclass
class HyperEdge:
    """A hyper-edge: a group of related text nodes within one section (paper Sec. 2.3).

    Attributes:
        id: Index of the hyper-edge within its document.
        doc_id: Document id.
        section_id: Node id of the enclosing TITLE (or ROOT) node.
        node_ids: Member TEXT node ids (>= 1), ascending.
        summary: 30-50 word summary of the members.
        cluster: Majority PC-KMeans cluster of the members (-1 if unknown).
    """

    id: int
    doc_id: str
    section_id: int
    node_ids: list[int]
    summary: str
    cluster: int = -1

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "section_id": self.section_id,
            "node_ids": list(self.node_ids),
            "summary": self.summary,
            "cluster": self.cluster,
        }


@dataclass
class Evidence:
    """One retrieved passage offered to the decider or the answerer.

    Attributes:
        evidence_id: Stable id within one request, e.g. ``"E3"``.
        doc_id: Document id.
        node_id: Node id in the document tree (-1 for a flat chunk).
        strategy: ``"tree"``, ``"semantic"``, ``"hyperedge"`` or ``"flat"``.
        score: Retrieval score (higher is better; strategy-specific scale).
        text: The passage text given to the model.
        page: 1-based page.
        bbox: ``(x0, y0, x1, y1)`` in PDF points, or ``None``.
        section_path: Titles of the enclosing sections.
        node_type: Type name of the node (``"TEXT"``, ...).
        page_chars: For a passage spanning pages, ``[[char_offset, page], ...]``
            where each page's words start in ``text`` (else ``None``).
    """

    evidence_id: str
    doc_id: str
    node_id: int
    strategy: str
    score: float
    text: str
    page: int
    bbox: BBox | None = None
    section_path: list[str] = field(default_factory=list)
    node_type: str = "TEXT"
    page_chars: list[list[int]] | None = None

    def page_of(self, quote: str) -> int:
        """The 1-based page on which ``quote`` starts in this passage (``page`` when
        the passage lies on one page or the quote is not found)."""
        if not self.page_chars or not quote:
            return self.page
        q = " ".join(quote.split())[:60].lower()
        at = " ".join(self.text.split()).lower().find(q)
        if at < 0:
            return self.page
        # offsets refer to the raw text; map the whitespace-normalised position back
        raw = self.text
        k = n = 0
        while k < len(raw) and n < at:
            if raw[k].isspace():
                while k + 1 < len(raw) and raw[k + 1].isspace():
                    k += 1
            k += 1
            n += 1
        page = self.page
        for off, pg in self.page_chars:
            if off <= k:
                page = int(pg)
        return page

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence_id": self.evidence_id,
            "doc_id": self.doc_id,
            "node_id": self.node_id,
            "strategy": self.strategy,
            "score": float(self.score),
            "text": self.text,
            "page": self.page,
            "bbox": list(self.bbox) if self.bbox else None,
            "section_path": list(self.section_path),
            "node_type": self.node_type,
        }


@dataclass
class Decision:
    """A per-document filter decision (SPEC F6).

    Attributes:
        decision: True when the document satisfies the condition; ``None`` when no
            decision was made (error or budget exhausted; see ``error``).
        rationale: Short explanation.
        evidence_ids: Ids of the :class:`Evidence` items relied on (all among those
            given to the model).
        score: Decider confidence in [0, 1] where defined (offline: evidence score).
        tokens: Prompt + completion tokens spent (0 for offline or cache hits).
        backend: ``"offline"`` or the model name.
        error: One-line reason when ``decision`` is ``None``.
        evidence_score: The offline evidence score of the document (robust z units,
            higher = stronger evidence; see :mod:`docmaster_core.filtering.decider`),
            computed for every filter run whatever the decider, so the collection can
            be ranked and the cut moved; None outside a filter run.
        rank: 1-based rank of the document by ``evidence_score`` in its run.
        decided_by: How the decision was made in a filter run: ``"llm"``,
            ``"user"`` (the user's stored answer), ``"not-checked"`` (a review stopped
            before it, no call; see :mod:`docmaster_core.filtering.review`), ``"offline"`` (the calibrated rule),
            ``"not-a-candidate"`` (a two-stage run at scale: not among the candidate
            documents of the collection indexes, decided no without exact scoring; no
            evidence score or rank), or None when not recorded.
        uncertain: True when the offline evidence score lies between the sure-no and the
            sure-yes threshold of the run's cut (three-way decisions, see
            :func:`docmaster_core.filtering.decider.uncertain_band`): ``decision`` is then
            the cut's best guess, and the document is where a person (or an LLM) should look.
        note: What the decider left out or read loosely, in one line, or None: evidence
            trimmed to fit the model's context (``llm.context_tokens``), or a decision
            read from a reply that was not the asked-for JSON (e.g. "Yes." or "**No**").
    """

    decision: bool | None
    rationale: str
    evidence_ids: list[str] = field(default_factory=list)
    score: float = 0.0
    tokens: int = 0
    backend: str = "offline"
    error: str | None = None
    evidence_score: float | None = None
    rank: int | None = None
    decided_by: str | None = None
    uncertain: bool = False
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "decision": self.decision,
            "rationale": self.rationale,
            "evidence_ids": list(self.evidence_ids),
            "score": float(self.score),
            "tokens": int(self.tokens),
            "backend": self.backend,
            "error": self.error,
            "evidence_score": None if self.evidence_score is None else round(float(self.evidence_score), 4),
            "rank": self.rank,
            "uncertain": bool(self.uncertain),
        }
        if self.decided_by is not None:
            out["decided_by"] = self.decided_by
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Citation:
    """A citation in an answer: points at an :class:`Evidence` given to the model.

    Attributes:
        evidence_id: Id of the passage (``"E3"``) among those given to the model.
        doc_id, node_id: The passage's document and tree node.
        page: 1-based page of the passage.
        section_path: Titles of the enclosing sections.
        quote: The sentence(s) of the passage that support the answer, verbatim
            (whitespace-normalised).
        file: The document's file name.
        bbox: ``(x0, y0, x1, y1)`` of the passage on ``page`` in PDF points, or None.
        supports: False for a closest passage shown with a "not found" answer (it does
            not answer the question).
    """

    evidence_id: str
    doc_id: str
    node_id: int
    page: int
    section_path: list[str]
    quote: str
    file: str = ""
    bbox: tuple[float, float, float, float] | None = None
    supports: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence_id": self.evidence_id,
            "doc_id": self.doc_id,
            "node_id": self.node_id,
            "page": self.page,
            "section_path": list(self.section_path),
            "quote": self.quote,
            "file": self.file,
            "bbox": [float(x) for x in self.bbox] if self.bbox else None,
            "supports": bool(self.supports),
        }


@dataclass
class Answer:
    """An answer to a question with its citations (SPEC F7).

    Attributes:
        text: The answer (for ``outcome="not_found"`` it starts "The documents do not say").
        citations: Passages that support the answer (empty when not found).
        tokens: Prompt + completion tokens spent.
        backend: ``"offline"`` or the model name.
        error: One-line reason when the answer failed.
        outcome: ``"answered"`` or ``"not_found"`` (the documents do not hold the answer).
        closest: With ``not_found``: the closest passages, ``supports=False``.
        reason: Why the answer was not found (offline evidence), else "".
    """

    text: str
    citations: list[Citation] = field(default_factory=list)
    tokens: int = 0
    backend: str = "offline"
    error: str | None = None
    outcome: str = "answered"
    closest: list[Citation] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "outcome": self.outcome,
            "citations": [c.to_dict() for c in self.citations],
            "closest": [c.to_dict() for c in self.closest],
            "reason": self.reason,
            "tokens": int(self.tokens),
            "backend": self.backend,
            "error": self.error,
        }
