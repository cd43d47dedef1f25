"""Stage "marks": captions ("Figure N", "Table N"), display equations and strongly
styled numbered headings, marked on the lines of one page (``Line.role``)."""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np

from ..base import BROKEN_END, SENTENCE_END_RE, heading_numbering, is_caption
from .common import EQNUM_RE, MATH_CHARS, Line, overlap_x, PageInfo


def mark_captions(p: PageInfo, body: float) -> None:
    gid = 0
    lines = p.lines
    for i, l in enumerate(lines):
        if l.role:
            continue
        t = l.text
        kind = is_caption(t, strict=True)
        if kind is None:
            k2 = is_caption(t, strict=False)
            if k2 is not None and (l.bold_prefix[:3].lower() == t[:3].lower() or l.size < 0.95 * body):
                kind = k2
        if kind is None:
            continue
        # a caption starts its block: previous line of the same column must not be
        # running text that flows into it
        prev = None
        for q in reversed(lines[:i]):
            if q.col == l.col and q.y1 <= l.y0 + 1 and overlap_x(q.x0, q.x1, l.x0, l.x1) > 0:
                prev = q
                break
        if prev is not None and prev.role == "" and prev.block == l.block and l.y0 - prev.y1 < 0.5 * l.size \
                and not SENTENCE_END_RE.search(prev.text):
            continue
        l.role = "caption"
        l.group = gid
        l.heading_source = kind  # reuse the field: caption kind
        # continuation lines: same block, same column, directly below, same size
        last = l
        for q in lines[i + 1:]:
            if q.role:
                continue
            if q.col != l.col and not (-1 in (q.col, l.col) and BROKEN_END.search(last.text)
                                       and q.text[:1].islower()):
                continue  # (a full-width caption's word broken at its line end goes on in a column: BERT's Fig. 2)
            if q.y0 < last.y1 - 0.5 * min(q.h, last.h):
                continue  # on the caption's own row
            if q.block == l.block and q.y0 - last.y1 < 0.8 * max(l.size, 4) and abs(q.size - l.size) < 1.0 \
                    and is_caption(q.text) is None:
                q.role = "caption"
                q.group = gid
                q.heading_source = kind
                last = q
            elif q.y0 - last.y1 < 0.6 * max(l.size, 4) and abs(q.size - l.size) < 0.6 and q.block != l.block \
                    and overlap_x(q.x0, q.x1, l.x0, l.x1) > 0.5 * min(q.w, l.w) and is_caption(q.text) is None \
                    and l.size < 0.97 * body:
                q.role = "caption"
                q.group = gid
                q.heading_source = kind
                last = q
            elif kind == "table" and not last.text.rstrip().endswith((".", ":")) and q.y0 - last.y1 < 0.6 * max(l.size, 4) \
                    and abs(q.size - l.size) < 0.6 and overlap_x(q.x0, q.x1, l.x0, l.x1) > 0.5 * min(q.w, l.w) \
                    and is_caption(q.text) is None and q.bold < 0.8:
                # a table caption's sentence runs on in another block of body size
                q.role = "caption"
                q.group = gid
                q.heading_source = kind
                last = q
            else:
                break
        gid += 1

# ------------------------------------------------------------------ equations
# "f(x) = ...", "MultiHead(Q, K, V) = ...", "L := ...": a name, its arguments, then "=" or ":="
_DEFINITION_RE = re.compile(r"^[^\s=()]{1,30}(?:\s*\([^()]{0,40}\))?\s*:?=\s*\S")
# "broadcastTime ≪ electionTimeout ≪ MTBF", "0 ≤ α ≤ 1": a term, a relation, a term
_RELATION_RE = re.compile(r"^[\w′ˆ+\-*/^|()]{1,30}\s*(?:[≤≥≪≫≈≠≡∝]|<(?![<=/])|>(?![>=]))\s*[\w(|−-]")
# ... unless it is markup (tags "<Question>", "</na>"; prompts ">>> import") or runs on in prose ("p < θ, p is
# updated in H": a line of a paragraph broken at an inline formula)
_NOT_RELATION_RE = re.compile(r"<[^<>]*>|>>>|</|(?:\b[A-Za-z]{2,}\b[ ,]+){2}\b[A-Za-z]{2,}\b")
# placeholders that are no math though their brackets, asterisks and underscores are math characters: redaction
# marks ("[***]", "$[*****]"), bracketed labels ("[LOGO]", "[Redacted]"), citations ("[38, 2, 9]") and blanks
# to fill in ("By: ________")
_PLACEHOLDER_RE = re.compile(r"\[\s*(?:\*+|[A-Z][A-Za-z ]{0,20}|\d{1,4}(?:\s*[,\u2013-]\s*\d{1,4})*)\s*\]|_{3,}")
_MATH_LEFT_RE = re.compile(r"[=+\u2212\u00d7\u00f7\u00b1\u2211\u220f\u222b\u2264\u2265\u2248\u2260\u2192\u2208^/<>{}|\u0391-\u03c9]")


def only_placeholders(text: str) -> bool:
    """True when a line holds placeholders (:data:`_PLACEHOLDER_RE`) and, once they are
    removed, no operator, relation or Greek letter: ``"[*****] [*****] L10"``, ``"$[***]"``,
    ``"By: ____ By:"``, ``"[38, 2, 9]."``; not ``"x = [a, b]"``."""
    rest = _PLACEHOLDER_RE.sub(" ", text)
    return rest != text and not _MATH_LEFT_RE.search(rest)


def mark_equations(p: PageInfo, body: float) -> None:
    lines = p.lines
    xs0 = defaultdict(list)
    xs1 = defaultdict(list)
    for l in lines:
        if l.nchars >= 25 and l.role == "":
            xs0[l.col].append(l.x0)
            xs1[l.col].append(l.x1)
    colx = {c: (float(np.percentile(xs0[c], 10)), float(np.percentile(xs1[c], 90))) for c in xs0}

    def is_eq(l: Line) -> bool:
        if l.role:
            return False
        t = l.text
        ns = len(t.replace(" ", ""))
        if ns == 0 or only_placeholders(t):
            return False
        sym = sum(1 for ch in t if ch in MATH_CHARS) / ns
        eqnum = bool(EQNUM_RE.search(t))
        cx0, cx1 = colx.get(l.col, (l.x0, l.x1))
        cw = max(cx1 - cx0, 1.0)
        indented = l.x0 > cx0 + 0.06 * cw
        centered = abs((l.x0 + l.x1) / 2 - (cx0 + cx1) / 2) < 0.2 * cw and (l.x1 - l.x0) < 0.85 * cw
        if l.math >= 0.5 and l.nwords <= 3 and (indented or centered or eqnum):
            return True
        if eqnum and (l.math >= 0.2 or sym >= 0.08 or "=" in t) and l.nwords <= 8:
            return True
        if sym >= 0.2 and l.nwords <= 2 and ns >= 3 and (indented or centered):
            return True
        if centered and l.nwords <= 6 and not t.rstrip().endswith((".", ",", ";", ":")) and (
                _DEFINITION_RE.match(t.strip()) or (_RELATION_RE.match(t.strip()) and not _NOT_RELATION_RE.search(t))):
            # a displayed definition "FFN(x) = max(0, xW1 + b1)W2 + b2" or relation "a ≪ b ≪ c" in a roman font
            return True
        return False

    flags = [is_eq(l) for l in lines]
    gid = 0
    groups: list[list[int]] = []
    for i, f in enumerate(flags):
        if not f:
            continue
        l = lines[i]
        if groups:
            g = groups[-1]
            last = lines[g[-1]]
            if last.col == l.col and l.y0 - last.y1 < 1.2 * body:
                g.append(i)
                continue
        groups.append([i])
    for g in groups:
        gcol = lines[g[0]].col
        gx0 = min(lines[i].x0 for i in g)
        gx1 = max(lines[i].x1 for i in g)
        gy0 = min(lines[i].y0 for i in g)
        gy1 = max(lines[i].y1 for i in g)
        # absorb short fragments (limits, fractions, equation numbers) nearby
        for j, q in enumerate(lines):
            if q.role or flags[j] or (gcol != -1 and q.col != gcol):
                continue
            ns = len(q.text.replace(" ", ""))
            near = q.y0 > gy0 - 0.9 * body and q.y1 < gy1 + 0.9 * body
            inside = q.y0 >= gy0 - 2 and q.y1 <= gy1 + 2
            if near and (ns <= 8 or EQNUM_RE.fullmatch(q.text.strip()) or (inside and q.nwords <= 3 and ns <= 40)) \
                    and (q.nwords <= 1 or inside) and (
                overlap_x(q.x0, q.x1, gx0 - 60, gx1 + 20) > 0 or EQNUM_RE.fullmatch(q.text.strip())
            ):
                g.append(j)
        _extend_equation(lines, g, flags, colx, body)
        for i in g:
            lines[i].role = "equation"
            lines[i].group = gid
        gid += 1

def math_like(l: Line, colx: dict, body: float) -> bool:
    """A centred or indented, narrow line with an operator and few words: a line of
    a display equation that alone does not look like math (``softmax(...) V``)."""
    if l.role or l.nchars < 2:
        return False
    t = l.text.strip()
    cx0, cx1 = colx.get(l.col, (l.x0, l.x1))
    cw = max(cx1 - cx0, 1.0)
    centred = abs((l.x0 + l.x1) / 2 - (cx0 + cx1) / 2) < 0.2 * cw
    indented = l.x0 > cx0 + 0.06 * cw
    narrow = (l.x1 - l.x0) < 0.85 * cw
    ops = sum(1 for ch in t if ch in "=+−×÷±∑∏∫≤≥≈≠→∈^_/*") + (2 if l.math >= 0.3 else 0)
    prose_end = t.endswith(".") and l.nwords >= 4
    return narrow and (centred or indented) and ops >= 1 and ("=" in t or t[:1] in "+−-=≤≥<>" or ops >= 2) \
        and l.nwords <= 6 and not prose_end and abs(l.size - body) < 0.3 * body


def _extend_equation(lines: list[Line], g: list[int], flags: list[bool], colx: dict, body: float) -> None:
    """Add to the equation group ``g`` (indices into ``lines``) the consecutive
    centred math-like lines directly above and below it (a multi-line display
    equation whose other lines were not recognised alone)."""
    col = lines[g[0]].col
    for direction in (-1, 1):
        edge = min(lines[i].y0 for i in g) if direction < 0 else max(lines[i].y1 for i in g)
        cand = [j for j, q in enumerate(lines) if (q.col == col or col == -1) and j not in g
                and (q.y1 <= edge + 1 if direction < 0 else q.y0 >= edge - 1)]
        cand.sort(key=lambda j: -lines[j].y1 if direction < 0 else lines[j].y0)
        for j in cand:
            q = lines[j]
            gap = (edge - q.y1) if direction < 0 else (q.y0 - edge)
            if gap > 0.8 * body or flags[j] or not math_like(q, colx, body):
                break
            g.append(j)
            edge = q.y0 if direction < 0 else q.y1


# ------------------------------------------------------------------ strong headings
def heading_features(l: Line, body: float) -> dict[str, Any] | None:
    t = l.text.strip()
    if not t or len(t) > 160:
        return None
    # cheap gate: a heading differs from the body in size, weight, slant or case,
    # or starts with a bold/italic run-in prefix
    if l.size < 1.1 * body and l.bold < 0.8 and l.italic < 0.8 and not l.bold_prefix \
            and not l.italic_prefix and not (l.size_hi >= 0.75 * body and t.upper() == t):
        return None
    letters = sum(ch.isalpha() for ch in t)
    if letters < 2 or letters < 0.45 * len(t.replace(" ", "")):
        return None
    num = heading_numbering(t)
    caps = t.upper() == t and letters >= 4
    size = max(l.size, l.size_hi) if caps else l.size
    ratio = size / body if body > 0 else 1.0
    return {"num": num, "ratio": ratio, "bold": l.bold >= 0.8, "caps": caps, "len": len(t), "words": len(t.split()),
            "italic": l.italic >= 0.8}

def mark_strong_headings(p: PageInfo, body: float) -> None:
    """Numbered lines in a heading style: marked early so regions stop at them."""
    for l in p.lines:
        if l.role:
            continue
        f = heading_features(l, body)
        if f is None or f["num"] is None:
            continue
        styled = f["ratio"] >= 1.1 or (f["bold"] and f["ratio"] >= 0.9) or (f["caps"] and f["ratio"] >= 0.75)
        if styled and f["words"] <= 16 and not l.text.rstrip().endswith((",", ";")):
            l.role = "heading?"
