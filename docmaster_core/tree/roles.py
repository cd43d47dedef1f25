"""Section roles: what part of a document a node belongs to (DocMaster challenge C3).

A document's answer to a filter condition lives in particular places. What a paper
*claims* is stated in its front matter (title, abstract), introduction, method and
conclusion; its experiments say what it was evaluated on; a mention in related work or
in the reference list is someone else's work. Flat chunks cannot know which is which;
the document tree can, because every node carries its section path.

Each node of a view gets one role code (:data:`ROLES`), from the headings on its
section path (outermost first: the first heading that names a role decides, so
"4.2 Datasets" under "4 Experiments" is ``experiments``), and for content with no
heading above it (directly under ROOT) ``front``. Headings are matched case-insensitively
after their numbering ("3.2", "IV.", "A.") is stripped. Manuals and reports have their
own roles (``safety``, ``operation``, ``financial``).

Two kinds of section hold no evidence of the document's own and take the role ``back`` (as a
reference list does): a **table of contents** (a heading "Contents", "Table of Contents", or an
unnumbered "Index": a 10-K's list of items, whose "Item 4. Mine Safety Disclosures 17" matched
"safety incident"), and an **empty section**, one whose only content says it has none ("Not
applicable.", "None.", "[Reserved]", "Intentionally omitted."): a newcomer's filter kept a 10-K
as *sure* for "describes a safety incident and its probable cause" on "Mine Safety Disclosures:
Not applicable." (:func:`node_roles`).

The role is used by :mod:`~docmaster_core.filtering.evidence` to weight a node's evidence; the weights live in
:class:`~docmaster_core.filtering.decider.OfflineCalibration`.
"""
from __future__ import annotations

import re

import numpy as np

from ..model import DocumentTree, NodeType

__all__ = ["ROLES", "ROLE_CODE", "NULL_STATEMENT", "ROLES_VERSION", "heading_role", "empty_sections", "path_role",
           "role_weight", "evidence_weight", "node_roles", "view_roles", "in_reference_list"]

#: Role names; the index of a name is its code in :func:`view_roles`.
ROLES = ("body", "front", "abstract", "introduction", "method", "experiments", "conclusion", "related",
         "appendix", "back", "safety", "operation", "financial")
#: Role name -> int code.
ROLE_CODE = {r: i for i, r in enumerate(ROLES)}

#: A table of contents' heading (matched before the numbering is stripped: "4 Index" of a paper on
#: indexing is a section of its own).
_CONTENTS = re.compile(r"^\s*(table\s+of\s+contents|contents|index)\s*[.:]?\s*$", re.IGNORECASE)
#: A section body that says the section has no content ("Not applicable.", "[Reserved]").
NULL_STATEMENT = re.compile(r"^\W*(not\s+applicable|none|n/a|reserved|intentionally\s+(left\s+)?(blank|omitted)|"
                            r"omitted|deleted|not\s+used)\W*$", re.IGNORECASE)
#: Version of the roles :func:`view_roles` stores per document (2: tables of contents and empty
#: sections are ``back``); a stored array of another version is computed again.
ROLES_VERSION = 2

_NUMBERING = re.compile(r"^\s*(?:(?:[0-9]+|[ivxlc]+|[a-z])(?:[.)][0-9]*)*[.)]?\s+|(?:[0-9]+\.)+[0-9]*\s*)", re.IGNORECASE)

# first match wins, in this order (e.g. "Experimental setup and results" -> experiments)
_ROLE_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("back", re.compile(r"^(references|bibliography|works cited|literature cited|acknowle?d?ge?ments?|reference list)\b")),
    ("appendix", re.compile(r"^(appendix|appendices|supplementary|supplemental)\b")),
    ("abstract", re.compile(r"^(abstract|summary|executive summary|highlights)\b")),
    ("related", re.compile(r"\b(related work|related works|prior work|previous work|background|literature review|"
                           r"related literature|related research|preliminaries)\b")),
    ("introduction", re.compile(r"^(introduction|overview|motivation|about this (manual|guide|document))\b")),
    ("conclusion", re.compile(r"\b(conclusions?|concluding|discussion|future work|limitations|closing remarks)\b")),
    ("experiments", re.compile(r"\b(experiments?|experimental|evaluations?|results?|empirical|ablations?|"
                               r"benchmarks?|case stud(y|ies)|findings|analysis|performance)\b")),
    ("safety", re.compile(r"\b(safety|warnings?|cautions?|hazards?|precautions?|danger)\b")),
    ("financial", re.compile(r"\b(statements? of (income|operations|cash flows?|financial position)|balance sheets?|"
                             r"financial (statements|results|highlights)|income statements?|cash flows?|revenues?|"
                             r"earnings|consolidated)\b")),
    ("operation", re.compile(r"\b(operat(ing|ion)|instructions?|how to use|using (the|your)|cleaning|maintenance|"
                             r"installation|troubleshooting|getting started|care)\b")),
    ("method", re.compile(r"\b(method(s|ology)?|approach|model|framework|architecture|algorithms?|proposed|"
                          r"system|design|formulation|our)\b")),
]


def heading_role(heading: str) -> str | None:
    """The role a section heading names, or None.

    Args:
        heading: Heading text, e.g. ``"4.2 Related Work"``.

    Returns:
        A name of :data:`ROLES` other than ``body``/``front``, or None when the heading
        names no role (e.g. ``"3 Sparse JL transforms"``).
    """
    if _CONTENTS.match(heading or ""):
        return "back"
    h = _NUMBERING.sub("", (heading or "").strip().lower(), count=1).strip(" .:")
    if not h:
        return None
    for role, pat in _ROLE_PATTERNS:
        if pat.search(h):
            return role
    return None


def path_role(section_path) -> str:
    """The role of a node with this section path (outermost named heading; ``front``
    for an empty path, ``body`` when no heading names a role)."""
    if not section_path:
        return "front"
    for h in section_path:
        r = heading_role(h)
        if r is not None:
            return r
    return "body"


#: A reference list's heading (a :data:`ROLES` ``back`` heading other than acknowledgements).
_REFERENCE_LIST = re.compile(r"^(references|bibliography|works cited|literature cited|reference list)\b")


def in_reference_list(section_path) -> bool:
    """True when a node with this section path lies in the document's reference list (its
    outermost heading that names a role is "References", "Bibliography", ...): an entry there
    names cited work ("[63] NVIDIA. Nvidia H100 tensor core GPU architecture"), not what the
    document itself says or does."""
    for h in section_path or ():
        if heading_role(h) is not None:
            return bool(_REFERENCE_LIST.match(_NUMBERING.sub("", h.strip().lower(), count=1).strip(" .:")))
    return False


def role_weight(role: str, related_weight: float) -> float:
    """How much a passage of section role ``role`` counts as the document's *own* evidence:
    0 in back matter (cited work, a table of contents, an empty section), ``related_weight``
    in related work / background, 1 elsewhere."""
    return 0.0 if role == "back" else (float(related_weight) if role == "related" else 1.0)


def evidence_weight(section_path, related_weight: float) -> float:
    """:func:`role_weight` of the role a passage's section path names (:func:`path_role`)."""
    return role_weight(path_role(section_path), related_weight)


def empty_sections(tree: DocumentTree) -> list[int]:
    """The node ids of the document's empty sections: a TITLE whose content children (no
    sub-heading among them) all match :data:`NULL_STATEMENT` ("Item 4. Mine Safety Disclosures"
    > "Not applicable."), or a childless TITLE that says so itself ("Section 5. [Reserved]";
    its number stripped), with those children.

    Returns:
        Node ids (title first, then its children), in reading order.
    """
    out: list[int] = []
    for nd in tree.nodes:
        if nd.type != NodeType.TITLE:
            continue
        kids = [tree.nodes[c] for c in nd.children]
        if kids:
            if all(k.type != NodeType.TITLE and NULL_STATEMENT.match(k.content or "") for k in kids):
                out += [nd.id] + [k.id for k in kids]
        elif NULL_STATEMENT.match(_NUMBERING.sub("", _SECTION_WORD.sub("", nd.content or ""), count=1)):
            out.append(nd.id)
    return out


#: "Section", "Article", "Item" before a heading's number.
_SECTION_WORD = re.compile(r"^\s*(section|article|item|clause)\s+", re.IGNORECASE)


def node_roles(tree: DocumentTree) -> np.ndarray:
    """Role code of every node of a document tree.

    A node takes the role named by the outermost heading on its section path that
    names one; content with no heading above it is ``front``; content under headings
    that name no role is ``body``. ROOT is ``front``. A table of contents and the
    :func:`empty_sections` are ``back``.

    Args:
        tree: The document tree.

    Returns:
        int8 (|V|,) codes into :data:`ROLES`, indexed by node id.
    """
    out = np.zeros(len(tree.nodes), dtype=np.int8)
    cache: dict[tuple[str, ...], int] = {}
    for nd in tree.nodes:
        path = tuple(nd.section_path)
        if nd.type == NodeType.ROOT or not path:
            out[nd.id] = ROLE_CODE["front"]
            continue
        code = cache.get(path)
        if code is None:
            code = ROLE_CODE[path_role(path)]
            cache[path] = code
        out[nd.id] = code
    out[empty_sections(tree)] = ROLE_CODE["back"]
    return out


def view_roles(view) -> np.ndarray:
    """Role code of every row of a :class:`~docmaster_core.retrieval.corpus.CorpusView`
    (cached on the view).

    Returns:
        int8 (N,) codes into :data:`ROLES`; reference lists and acknowledgements (the
        view's ``back_matter`` flag) are ``back``.
    """

    cache = getattr(view, "doc_cache", None)

    def one(dv) -> np.ndarray:
        if cache is None:
            return node_roles(dv.tree)
        key = ("roles", dv.doc_id, dv.n_nodes, ROLES_VERSION)
        r = cache.get(key)
        if r is None:
            from ..store.docinfo import load_arrays, save_arrays

            ws_path = getattr(view, "ws_path", "")
            tag = f"{dv.n_nodes}.v{ROLES_VERSION}"
            got = load_arrays(ws_path, "roles", dv.doc_id, tag)
            r = got["roles"] if got is not None else None
            if r is None or r.shape != (dv.n_nodes,):
                r = node_roles(dv.tree)
                save_arrays(ws_path, "roles", dv.doc_id, tag, roles=r)
            cache.put(key, r, r.nbytes + 100)
        return r

    def build() -> np.ndarray:
        parts = [one(dv) for dv in view.docs]
        r = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int8)  # a copy: cached parts stay as they are
        r[view.back_matter] = ROLE_CODE["back"]
        return r

    return view.aux("section_roles", build)
