"""Stage "lines and spans": compact line records from ``page.get_text("dict")``.

Spans are joined with a space where the horizontal gap says so (old Type 3 fonts
split words at kerning points), ligature glyphs are mapped back to letters and
per-line style statistics (size, bold/italic/math/mono fractions, dominant font) are
kept. Pieces on one baseline are merged by :func:`_merge_pieces`.
"""
from __future__ import annotations

import re
from collections import defaultdict

from ..base import fix_ligatures
from .common import _WORD_RE, _font_class, _Line

_FLAGS_CACHE: dict[str, int] = {}


def _text_flags() -> int:
    """``get_text`` flags: the dict defaults without image data (speed)."""
    import pymupdf

    if "dict" not in _FLAGS_CACHE:
        _FLAGS_CACHE["dict"] = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
    return _FLAGS_CACHE["dict"]


def _extract_page_lines(page, pno: int, textpage=None) -> tuple[list[_Line], int]:
    """Raw lines of one page from ``get_text("dict")``; returns (lines, n_rotated)."""
    d = page.get_text("dict", flags=_text_flags(), textpage=textpage)
    out: list[_Line] = []
    n_rot = 0
    for bi, b in enumerate(d.get("blocks", ())):
        if b.get("type", 0) != 0:
            continue
        for ln in b.get("lines", ()):
            dx, dy = ln.get("dir", (1.0, 0.0))
            spans = [s for s in ln.get("spans", ()) if s.get("text")]
            if not spans:
                continue
            if abs(dy) > 0.05 or dx <= 0:
                n_rot += 1
                continue
            lb = ln["bbox"]
            lh = lb[3] - lb[1]
            parts: list[str] = []
            prev_x1 = None
            prev_txt = ""
            csize: dict[float, int] = defaultdict(int)
            cfont: dict[str, int] = defaultdict(int)
            nb = ni = nm = nmono = n = nwords = 0
            size_hi = 0.0
            bold_prefix: list[str] = []
            prefix_open = True
            ital_prefix: list[str] = []
            iprefix_open = True
            for s in spans:
                txt = fix_ligatures(s["text"])
                if not txt:
                    continue
                sb = s["bbox"]
                size = float(s.get("size", 0.0))
                em = size if size >= 2.5 else (lh if lh >= 2.5 else 10.0)
                if prev_x1 is not None:
                    gap = sb[0] - prev_x1
                    if gap > 0.18 * em and not prev_txt.endswith(" ") and not txt.startswith(" "):
                        parts.append(" ")
                parts.append(txt)
                prev_x1 = sb[2]
                prev_txt = txt
                k = len(txt.strip())
                if k == 0:
                    if prefix_open and bold_prefix:
                        bold_prefix.append(txt)
                    if iprefix_open and ital_prefix:
                        ital_prefix.append(txt)
                    continue
                font = s.get("font", "")
                flags = int(s.get("flags", 0))
                fb, is_math, fmono = _font_class(font)
                is_bold = bool(flags & 16) or fb
                n += k
                csize[round(size, 1) if size >= 2.5 else -1.0] += k
                cfont[font] += k
                if is_bold:
                    nb += k
                if flags & 2:
                    ni += k
                if is_math:
                    nm += k
                else:
                    nwords += len(_WORD_RE.findall(txt))
                    if size >= 2.5 and size > size_hi and any(ch.isalpha() for ch in txt):
                        size_hi = size
                if flags & 8 or fmono:
                    nmono += k
                if prefix_open:
                    if is_bold:
                        bold_prefix.append(txt)
                    else:
                        prefix_open = False
                if iprefix_open:
                    if flags & 2:
                        ital_prefix.append(txt)
                    else:
                        iprefix_open = False
            if n == 0:
                continue
            text = re.sub(r"\s+", " ", "".join(parts)).strip()
            if not text:
                continue
            size = max(csize.items(), key=lambda kv: kv[1])[0]
            if size < 0 and lh >= 2.5:
                size = round(lh * 0.85, 1)
            font = max(cfont.items(), key=lambda kv: kv[1])[0]
            bp = re.sub(r"\s+", " ", "".join(bold_prefix)).strip() if (not prefix_open and nb < n) else ""
            ip = re.sub(r"\s+", " ", "".join(ital_prefix)).strip() if (not iprefix_open and ni < n) else ""
            out.append(
                _Line(
                    page=pno, x0=lb[0], y0=lb[1], x1=lb[2], y1=lb[3], text=text, size=float(size),
                    bold=nb / n, italic=ni / n, math=nm / n, mono=nmono / n, font=font, block=bi,
                    nchars=n, nwords=nwords, bold_prefix=bp, size_hi=size_hi, italic_prefix=ip,
                )
            )
    return out, n_rot


def _merge_pieces(pieces: list[_Line]) -> _Line:
    """Merge line pieces on one baseline (sorted by x) into one visual line."""
    if len(pieces) == 1:
        return pieces[0]
    pieces = sorted(pieces, key=lambda l: l.x0)
    texts = []
    max_gap = 0.0
    for i, p in enumerate(pieces):
        if i:
            gap = p.x0 - pieces[i - 1].x1
            max_gap = max(max_gap, gap)
            em = p.size if p.size > 0 else 10.0
            if gap > 0.15 * em or not (texts[-1][-1:].isalnum() and p.text[:1].isalnum()):
                texts.append(" ")
        texts.append(p.text)
    n = sum(p.nchars for p in pieces)
    main = max(pieces, key=lambda p: p.nchars)
    sizes: dict[float, int] = defaultdict(int)
    for p in pieces:
        sizes[p.size] += p.nchars
    first = pieces[0]
    bold_all = sum(p.bold * p.nchars for p in pieces) / n
    bp = first.bold_prefix
    if not bp and first.bold > 0.99 and bold_all < 0.99:
        # "1" + "Introduction" bold and the rest regular -> run-in prefix
        k = 0
        acc = []
        for p in pieces:
            if p.bold > 0.99:
                acc.append(p.text)
                k += 1
            else:
                break
        bp = " ".join(acc)
    return _Line(
        page=first.page,
        x0=min(p.x0 for p in pieces),
        y0=min(p.y0 for p in pieces),
        x1=max(p.x1 for p in pieces),
        y1=max(p.y1 for p in pieces),
        text=re.sub(r"\s+", " ", "".join(texts)).strip(),
        size=max(sizes.items(), key=lambda kv: kv[1])[0],
        bold=bold_all,
        italic=sum(p.italic * p.nchars for p in pieces) / n,
        math=sum(p.math * p.nchars for p in pieces) / n,
        mono=sum(p.mono * p.nchars for p in pieces) / n,
        font=main.font,
        block=first.block,
        nchars=n,
        nwords=sum(p.nwords for p in pieces),
        size_hi=max(p.size_hi for p in pieces),
        bold_prefix=bp,
        italic_prefix=first.italic_prefix if first.italic < 0.99 else (first.text if sum(p.italic * p.nchars for p in pieces) / n < 0.99 else ""),
        max_gap=max(max_gap, max(p.max_gap for p in pieces)),
        role=first.role,
        col=first.col,
    )


# --------------------------------------------------------------------------------------
# Opening
# --------------------------------------------------------------------------------------
