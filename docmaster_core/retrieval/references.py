"""Explicit element references in a question: "Figure 3", "Table II", "page 50", "Section 4.2".

Questions about a document often name the element they are about. A flat chunk index
cannot look an element up; a document tree can: figures and tables are IMAGE/TABLE
nodes whose content starts with their caption ("Figure 3: ..."), sections are TITLE
nodes ("4.2 Results"), and every node knows its page. :func:`resolve_references`
returns the nodes a question names, which the ``combined`` strategy puts ahead of its
fused ranking (Doc-Researcher's element-level units, arXiv 2510.21603 Sec. 3.1).

Matching rules (case-insensitive): a figure/table reference matches a node whose
content starts with ``Figure N``/``Fig. N``/``Table N`` (arabic or roman numerals,
followed by a non-alphanumeric character); a page reference matches the nodes on that
1-based page (best cosine first, at most ``per_page``); a section reference matches a
TITLE node whose heading starts with that number, and then its best content nodes.
"""
from __future__ import annotations

import re

import numpy as np

from ..model import NodeType
from .corpus import CorpusView

__all__ = ["find_references", "resolve_references"]

_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10,
          "xi": 11, "xii": 12, "xiii": 13, "xiv": 14, "xv": 15}
_REF = re.compile(
    r"\b(?P<kind>fig(?:ure)?s?\.?|tables?|pages?|sections?|sec\.)\s*(?P<n>\d{1,3}(?:\.\d{1,2})*|[ivx]{1,5})\b",
    re.IGNORECASE,
)


def _num(s: str) -> int | None:
    s = s.lower()
    if s.isdigit():
        return int(s)
    return _ROMAN.get(s)


def find_references(question: str) -> list[tuple[str, str]]:
    """Element references in ``question``: ``[(kind, label)]`` with kind in
    ``figure, table, page, section`` and the label as written (numbers normalised to
    arabic for figures, tables and pages), in order of appearance, without duplicates."""
    out: list[tuple[str, str]] = []
    for m in _REF.finditer(question or ""):
        k = m.group("kind").lower().rstrip(".")
        n = m.group("n")
        if k.startswith("fig"):
            kind = "figure"
        elif k.startswith("table"):
            kind = "table"
        elif k.startswith("page"):
            kind = "page"
        else:
            kind = "section"
        if kind == "section":
            if not n[0].isdigit():
                continue
            label = n
        else:
            v = _num(n)
            if v is None or v == 0:
                continue
            label = str(v)
        if (kind, label) not in out:
            out.append((kind, label))
    return out


def _caption_re(kind: str, n: int) -> re.Pattern:
    roman = [r for r, v in _ROMAN.items() if v == n]
    alts = [str(n)] + roman
    word = r"fig(?:ure)?\.?" if kind == "figure" else r"table"
    return re.compile(rf"^\W*{word}\s*(?:{'|'.join(alts)})(?![0-9a-z])", re.IGNORECASE)


def resolve_references(view: CorpusView, doc_index: int, refs: list[tuple[str, str]], cos: np.ndarray,
                       per_page: int = 2) -> list[int]:
    """Node ids of one document named by ``refs`` (see the module docstring), in reference order.

    Args:
        view: The corpus view.
        doc_index: Document position in the view.
        refs: Output of :func:`find_references`.
        cos: float32 (N,) node cosines with the question (orders page and section hits).
        per_page: Nodes taken per referenced page or section.
    """
    dv = view.docs[doc_index]
    tree = dv.tree
    out: list[int] = []
    for kind, label in refs:
        if kind in ("figure", "table"):
            pat = _caption_re(kind, int(label))
            for n in tree.nodes:
                if n.type in (NodeType.ROOT, NodeType.TITLE):
                    continue
                cap = n.extra.get("caption", "") if isinstance(n.extra, dict) else ""
                if pat.match(n.content or "") or (cap and pat.match(cap)):
                    out.append(n.id)
        elif kind == "page":
            p = int(label)
            ids = [n.id for n in tree.nodes if n.type.is_content and n.page_start <= p <= n.page_end]
            ids.sort(key=lambda i: -float(cos[dv.start + i]))
            out.extend(ids[:per_page])
        else:
            pat = re.compile(rf"^\W*{re.escape(label)}(?![0-9])\.?\s", re.IGNORECASE)
            for n in tree.nodes:
                if n.type == NodeType.TITLE and pat.match(n.content or ""):
                    sub = [i for i in tree.subtree(n.id) if tree.nodes[i].type.is_content]
                    sub.sort(key=lambda i: -float(cos[dv.start + i]))
                    out.extend(sub[:per_page])
                    break
    seen: dict[int, None] = {}
    for i in out:
        seen.setdefault(i, None)
    return list(seen)
