"""Stage "headings" (outline): headings from the PDF outline matched to lines."""
from __future__ import annotations

import re

from ..base import clean_text, heading_numbering, normalize_heading, numbering_level
from .common import FRONT_BACK_MATTER, Line, PageInfo
from .headings import assign_levels


def outline_dests(doc) -> list[float | None]:
    out: list[float | None] = []
    try:
        for e in doc.get_toc(simple=False):
            d = e[3] if len(e) > 3 and isinstance(e[3], dict) else {}
            to = d.get("to")
            out.append(float(to.y) if to is not None and hasattr(to, "y") else None)
    except Exception:
        return []
    return out

def apply_outline(pages: list[PageInfo], outline: list[tuple[int, str, int]],
                   dests: list[float | None], body: float) -> bool:
    """Headings = outline entries matched to lines on their page (plus detected
    front/back-matter headings the outline lacks). Returns True when used."""
    # keep detected headings to fall back on for front/back matter
    detected = [l for p in pages for l in p.lines if l.role in ("heading", "heading-runin")]
    for l in detected:
        l.role = "" if l.role == "heading" else ""
        l.heading_level = None
    matched = 0
    prev_level = 0
    used: set[int] = set()
    norm_cache: dict[int, str] = {}
    last_pos: tuple[int, float] = (-1, 0.0)

    def norm(l: Line) -> str:
        v = norm_cache.get(id(l))
        if v is None:
            v = normalize_heading(l.text)
            norm_cache[id(l)] = v
        return v

    inserted: list[tuple[int, float, str, int]] = []
    for k, (lvl, title, pg) in enumerate(outline):
        target = normalize_heading(title)
        alt = normalize_heading(title[2:]) if re.match(r"^[A-Z]\s", title) else ""
        if not target:
            continue
        hn = heading_numbering(title)
        level = numbering_level(hn[0]) if hn is not None else lvl
        level = max(1, min(level, prev_level + 1 if prev_level else level, 6))
        y_hint = dests[k] if k < len(dests) else None
        best = None
        for dp in (0, 1, -1):
            pi = pg - 1 + dp
            if not (0 <= pi < len(pages)):
                continue
            for l in pages[pi].lines:
                if id(l) in used or l.role in ("header", "pagenum", "caption-used", "doctitle", "region", "equation", "merged"):
                    continue
                nl = norm(l)
                if not nl:
                    continue
                score = None
                if alt and nl == alt and nl != target:
                    target = alt  # "C bAbI." in the outline, "Appendix C. bAbI." printed
                if nl == target:
                    score = 0
                elif target.startswith(nl) and len(nl) >= 0.3 * len(target):
                    score = 1  # heading wraps over several lines
                elif nl.startswith(target) and len(target) >= 4:
                    score = 2  # run-in heading or trailing text
                if score is None:
                    continue
                # outline targets are in PDF (bottom-up) coordinates in some files
                dist = min(abs(l.y0 - y_hint), abs(l.y0 - (pages[pi].height - y_hint))) \
                    if (y_hint is not None and dp == 0) else 1000.0
                cand = (dp != 0, score, dist, l, pi)
                if best is None or cand[:3] < best[:3]:
                    best = cand
            if best is not None and best[0] is False:
                break
        if best is None:
            # outline page numbers are sometimes wrong: an exact match anywhere else
            hits = [(pi, l) for pi, pg_ in enumerate(pages) if abs(pi - (pg - 1)) > 1
                    for l in pg_.lines if id(l) not in used and l.role not in ("header", "pagenum", "caption-used", "doctitle")
                    and norm(l) in (target, alt)]
            # outline entries are in document order: the first hit after the last match
            hits = sorted((h for h in hits if (h[0], h[1].y0) > last_pos), key=lambda h: (h[0], h[1].y0))
            if hits:
                best = (False, 0, 0.0, hits[0][1], hits[0][0])
        if best is None:
            yh = 0.0
            if y_hint is not None and 0 <= pg - 1 < len(pages):
                yh = min(max(pages[pg - 1].height - y_hint, 0.0), pages[pg - 1].height)
            inserted.append((pg - 1, yh, title, level))
            prev_level = level
            continue
        _, score, _, l, pi = best
        used.add(id(l))
        matched += 1
        last_pos = (pi, l.y0)
        if score == 1:
            # extend with following lines until the outline title is covered
            acc = normalize_heading(l.text)
            text = l.text
            for q in sorted(pages[pi].lines, key=lambda q: q.y0):
                if q is l or q.col != l.col or q.y0 < l.y1 - 1 or q.y0 - l.y1 > 1.5 * max(l.size, 4):
                    continue
                nq = normalize_heading(q.text)
                if target.startswith(acc + nq) and nq:
                    acc += nq
                    text += " " + q.text
                    q.role = "merged"
                    l.y1 = max(l.y1, q.y1)
                    if acc == target:
                        break
            l.role = "heading"
            l.heading_text = clean_text(text)
        elif score == 2 and len(normalize_heading(l.text)) > len(target) + 2:
            # the heading is the first part of the line (run-in)
            words = l.text.split()
            cut = len(words)
            for n in range(1, len(words) + 1):
                if normalize_heading(" ".join(words[:n])).startswith(target) or normalize_heading(" ".join(words[:n])) == target:
                    cut = n
                    break
            l.role = "heading-runin"
            l.heading_text = clean_text(" ".join(words[:cut])).rstrip(".:")
        else:
            l.role = "heading"
            l.heading_text = clean_text(l.text)
        if hn is None:
            hn2 = heading_numbering(l.heading_text)
            if hn2 is not None:
                level = min(6, numbering_level(hn2[0]))
        l.heading_level = level
        l.heading_source = "outline"
        prev_level = level
    if matched == 0:
        # outline does not match the text at all: fall back to detection
        for l in detected:
            if l.role == "":
                l.role = "heading"
        assign_levels(detected)
        return False
    # front/back matter headings found by detection but absent from the outline
    for l in detected:
        if l.role == "" and normalize_heading(l.heading_text or l.text) in FRONT_BACK_MATTER and id(l) not in used:
            l.role = "heading"
            l.heading_level = 1
            l.heading_source = "font"
    for pi, y, title, level in inserted:
        if 0 <= pi < len(pages):
            p = pages[pi]
            ghost = Line(page=pi, x0=0.0, y0=y, x1=p.width, y1=y, text=title, size=body, bold=1.0, italic=0.0,
                          math=0.0, mono=0.0, font="", block=-1, nchars=len(title), nwords=0, role="heading", col=0)
            ghost.heading_text = clean_text(title)
            ghost.heading_level = level
            ghost.heading_source = "outline-only"
            p.lines.append(ghost)
    return True
