"""The per-page context the region stages share (:class:`RegionEnv`): the page's lines,
its large raster images, its vector drawings (fetched once) and the text column bounds;
used by :mod:`.regions` (caption regions), :mod:`.figures` and :mod:`.tables`.

Coordinates are PDF points (origin top left, y down); ``pno`` is 0-based.
"""
from __future__ import annotations

from ..base import heading_numbering
from .common import Line, PageInfo, ParseContext, box_union, overlap_x
from .layout import assign_col

Box = tuple[float, float, float, float]


class RegionEnv:
    """What the figure and table stages need to know about one page.

    Args:
        ctx: The parse context (settings, ``find_tables`` budget).
        doc: The open ``pymupdf.Document`` (drawings, words, ``find_tables``).
        pno: 0-based page index.
        p: The page record (lines with roles already marked).
        imgs: Raster image boxes on the page (PDF points).
    """

    def __init__(self, ctx: ParseContext, doc, pno: int, p: PageInfo, imgs: list) -> None:
        self.ctx = ctx
        self.doc = doc
        self.pno = pno
        self.p = p
        self.body = ctx.body_size
        self.lines = p.lines
        page_area = p.width * p.height
        has_text = sum(l.nchars for l in p.lines) > 200
        self.big_imgs: list[Box] = [
            b for b in imgs
            if (b[2] - b[0]) >= 24 and (b[3] - b[1]) >= 24
            and not (has_text and (b[2] - b[0]) * (b[3] - b[1]) > 0.6 * page_area)
        ]
        body_lines = [l for l in p.lines if l.nchars >= 25 and l.role == ""]
        self.cx0 = min((l.x0 for l in body_lines), default=0.05 * p.width)
        self.cx1 = max((l.x1 for l in body_lines), default=0.95 * p.width)
        self.consumed_imgs: set[int] = set()
        self.n_calls = 0
        self.t_tables = 0.0
        self._drawings: dict[str, list[Box]] | None = None
        self._mates: set[int] | None = None

    def drawings(self) -> dict[str, list[Box]]:
        """Vector drawings of the page, fetched once: ``graphics`` (all non-trivial
        paths), ``hrules`` (thin horizontal lines >= 15 pt), ``vrules`` (thin vertical
        lines >= 6 pt); page frames/backgrounds are left out."""
        if self._drawings is None:
            p = self.p
            dr: dict[str, list[Box]] = {"graphics": [], "hrules": [], "vrules": []}
            try:
                paths = self.doc[self.pno].get_cdrawings()
            except Exception:
                paths = []
            for d in paths[:5000]:
                r = d.get("rect")
                if r is None:
                    continue
                x0, y0, x1, y1 = (float(v) for v in r)
                w, h = x1 - x0, y1 - y0
                if w >= 0.8 * p.width or h >= 0.8 * p.height:
                    continue  # page frames, borders, backgrounds
                if h <= 2.0 and w >= 15:
                    dr["hrules"].append((x0, y0, x1, y1))
                elif w <= 2.0 and h >= 6:
                    dr["vrules"].append((x0, y0, x1, y1))
                if w > 0.5 or h > 0.5:
                    dr["graphics"].append((x0, y0, x1, y1))
            self._drawings = dr
        return self._drawings

    def _row_mates(self) -> set[int]:
        """ids of lines that share their row with another line of the same column
        more than two text heights away (table cells, not running text)."""
        if self._mates is None:
            mates: set[int] = set()
            ls = sorted(self.lines, key=lambda l: l.yc)
            for i, a in enumerate(ls):
                for b in ls[i + 1:]:
                    if b.y0 > a.y1:
                        break
                    if a.col != b.col:
                        continue
                    ov = min(a.y1, b.y1) - max(a.y0, b.y0)
                    gap = max(b.x0 - a.x1, a.x0 - b.x1)
                    if ov >= 0.5 * min(a.h, b.h) and gap > 2.0 * max(a.h, b.h):
                        mates.add(id(a))
                        mates.add(id(b))
            self._mates = mates
        return self._mates

    def is_prose(self, l: Line) -> bool:
        """A running-text line (body size, mostly letters, no wide gaps, not sharing
        its row with a distant cell)."""
        if l.role in ("heading?", "caption"):
            return False
        if id(l) in self._row_mates():
            return False
        ratio = l.size / self.body
        alpha = sum(ch.isalpha() for ch in l.text) / max(1, len(l.text.replace(" ", "")))
        return (
            l.role == "" and l.nchars >= 28 and 0.85 <= ratio <= 1.25 and alpha >= 0.6
            and l.max_gap < 1.6 * max(l.size, 4) and l.nwords >= 4
        )

    def col_range(self, c: int, x0: float, x1: float) -> tuple[float, float]:
        """x-range of column ``c`` (-1: full width) widened to include ``[x0, x1]``."""
        g = self.p.gutters
        if not g:  # one column: a table or figure may be wider than the text
            return min(0.03 * self.p.width, x0), max(0.97 * self.p.width, x1)
        if c == -1:
            return min(self.cx0, x0), max(self.cx1, x1)
        a = self.cx0 if c == 0 else g[c - 1]
        b = self.cx1 if c >= len(g) else g[c]
        return min(a, x0), max(b, x1)

    def neighbours(self, cl: list[Line], cb: Box, rx0: float, rx1: float, direction: int) -> list[Line]:
        """Lines in ``[rx0, rx1]`` below (``direction`` > 0) or above the caption box
        ``cb``, nearest first."""
        ls = [
            l for l in self.lines
            if l.role not in ("caption",) and l not in cl
            and overlap_x(l.x0, l.x1, rx0, rx1) > 0.5 * max(l.w, 1.0)
            and ((l.y0 >= cb[3] - 1) if direction > 0 else (l.y1 <= cb[1] + 1))
        ]
        return sorted(ls, key=lambda l: l.y0 if direction > 0 else -l.y1)

    def grow(self, cl: list[Line], cb: Box, rx0: float, rx1: float, direction: int,
             allow_prose_in: list[Box] | None = None) -> tuple[list[Line], float]:
        """Lines of the region next to the caption; returns (lines, stop edge y)."""
        body = self.body
        got: list[Line] = []
        edge = cb[3] if direction > 0 else cb[1]
        stop = (self.p.height if direction > 0 else 0.0)
        for l in self.neighbours(cl, cb, rx0, rx1, direction):
            gap = (l.y0 - edge) if direction > 0 else (edge - l.y1)
            inside_graphic = allow_prose_in and any(
                l.x0 >= g[0] - 2 and l.x1 <= g[2] + 2 and l.y0 >= g[1] - 2 and l.y1 <= g[3] + 2 for g in allow_prose_in
            )
            if l.role in ("header", "pagenum"):
                continue
            if not inside_graphic and (self.is_prose(l) or l.role in ("heading?", "region")):
                stop = l.y0 if direction > 0 else l.y1
                break
            if gap > 1.5 * body and id(l) not in self._row_mates() and heading_numbering(l.text) is not None:
                stop = l.y0 if direction > 0 else l.y1
                break  # a numbered heading after a gap ends the region
            if gap > (4.0 * body if not inside_graphic else 6.0 * body):
                stop = l.y0 if direction > 0 else l.y1
                break
            got.append(l)
            edge = max(edge, l.y1) if direction > 0 else min(edge, l.y0)
        return got, stop

    def caption_range(self, caps: dict[int, list[Line]], gid: int, cb: Box) -> tuple[float, float]:
        """x-range searched for the region of caption ``gid`` (its column, split
        between side-by-side captions)."""
        c = assign_col(cb[0], cb[2], self.p.gutters, self.p.width)
        rx0, rx1 = self.col_range(c, cb[0], cb[2])
        for og, ol in caps.items():
            if og == gid:
                continue
            ob = box_union((l.x0, l.y0, l.x1, l.y1) for l in ol)
            if min(ob[3], cb[3]) - max(ob[1], cb[1]) > -2.0 * self.body:
                if ob[0] >= cb[2] - 2:
                    rx1 = min(rx1, (cb[2] + ob[0]) / 2)
                elif ob[2] <= cb[0] + 2:
                    rx0 = max(rx0, (ob[2] + cb[0]) / 2)
        return rx0, rx1
