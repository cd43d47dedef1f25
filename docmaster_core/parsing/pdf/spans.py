"""Stage "lines and spans": compact line records from ``page.get_text("dict")``.

Spans are joined with a space where the horizontal gap says so (old Type 3 fonts
split words at kerning points), ligature glyphs are mapped back to letters and
per-line style statistics (size, bold/italic/math/mono fractions, dominant font) are
kept. Pieces on one baseline are merged by :func:`merge_pieces`.
"""
from __future__ import annotations

import re
from collections import defaultdict

from ..base import fix_ligatures
from .common import WORD_RE, font_class, Line

_FLAGS_CACHE: dict[str, int] = {}


# Private-use code points (U+E000-U+F8FF) that some fonts give to ligature glyphs
# ("\ue000rst"). In text fonts they are moved to plane 15 during extraction (math
# fonts keep theirs) and mapped to letters once per document (:func:`ligature_map`).
_PUA_LO, _PUA_HI = 0xE000, 0xF8FF
PUA_SHIFT = {cp: 0xF0000 + (cp - _PUA_LO) for cp in range(_PUA_LO, _PUA_HI + 1)}
_SHIFTED_RE = re.compile("[\U000F0000-\U000F18FF]")
_LIGATURES = ("fi", "fl", "ff", "ffi", "ffl")
# common English word stems containing each ligature: the evidence for a mapping
_LIG_STEMS = {
    "fi": ("first", "find", "figur", "field", "final", "fine", "fit", "fix", "file", "filter", "specifi", "signific",
           "defin", "modifi", "classifi", "confi", "benefi", "artifici", "identifi", "profi", "fix", "fication",
           "finit", "fiel", "fier", "fied", "fies", "fic", "fin"),
    "fl": ("flow", "float", "flex", "reflect", "influen", "conflict", "fly", "floor", "flat", "flag", "flu", "flo",
           "fla", "fle", "fli"),
    "ff": ("effect", "differ", "offer", "suffer", "affect", "effort", "staff", "buffer", "diffus", "traff", "off",
           "eff", "aff", "diff", "suff"),
    "ffi": ("efficien", "suffici", "office", "coeffici", "traffic", "affili", "diffic", "offici"),
    "ffl": ("baffl", "shuffl", "muffl", "scaffl", "ruffl"),
}


_PUA_RE = re.compile("[\ue000-\uf8ff]")


def _has_pua(text: str) -> bool:
    """True when ``text`` holds a private-use code point (U+E000-U+F8FF)."""
    return _PUA_RE.search(text) is not None


def ligature_map(words: list[str]) -> dict[int, str]:
    """Letters for the shifted private-use code points found in ``words`` (words of
    text fonts containing them): for each code point the ligature (fi, fl, ff, ffi,
    ffl) whose words contain the longest common English stems (summed); without
    such evidence the code points take the ligatures in the usual font order (the
    lowest code point fi, then fl, ff, ffi, ffl).

    Returns:
        ``{shifted code point: letters}`` for :meth:`str.translate`.
    """
    by_cp: dict[int, list[str]] = defaultdict(list)
    for w in words:
        for ch in set(_SHIFTED_RE.findall(w)):
            by_cp[ord(ch)].append(w.lower())
    out: dict[int, str] = {}
    for rank, cp in enumerate(sorted(by_cp)):
        best, best_score = _LIGATURES[min(rank, len(_LIGATURES) - 1)], 0
        for lig in _LIGATURES:
            score = 0
            for w in by_cp[cp]:
                cand = _SHIFTED_RE.sub(lambda m: lig if ord(m.group()) == cp else "", w)
                # the longest matching stem: specific evidence ("effect") beats generic ("fle")
                score += max((len(stem) for stem in _LIG_STEMS[lig] if stem in cand), default=0)
            if score > best_score:
                best, best_score = lig, score
        out[cp] = best
    return out


def apply_ligature_map(lines: list[Line], words: list[str] | None = None) -> dict[int, str]:
    """Replace the shifted private-use code points in the lines' texts by ligature
    letters decided with :func:`ligature_map` over those lines; returns the table
    used (empty when no line had such a glyph)."""
    for l in lines:  # a math-font glyph between digits is a decimal point ("1\ue0040")
        if _has_pua(l.text):
            l.text = _DIGIT_PUA_RE.sub(".", l.text)
    hit = [l for l in lines if _SHIFTED_RE.search(l.text)]
    if not hit:
        return {}
    ws = [w for l in hit for w in l.text.split() if _SHIFTED_RE.search(w)]
    table = ligature_map(ws + list(words or ()))
    for l in hit:
        l.text = l.text.translate(table)
        l.bold_prefix = l.bold_prefix.translate(table)
        l.italic_prefix = l.italic_prefix.translate(table)
    return table


_MATHY_FONT_RE = re.compile(r"(cmmi|cmsy|cmex|cmbsy|msbm|msam|math|symbol|stix|euclid|mtextra|txmi|txsy|pxmi|pxsy)", re.I)
_DIGIT_PUA_RE = re.compile(r"(?<=\d)[\ue000-\uf8ff](?=\d)")
_PUA_RUN_RE = re.compile(r"[\ue000-\uf8ff]{3}")


def pua_text(txt: str, font: str) -> str:
    """Private-use glyphs of one span: in text fonts shifted to plane 15 (ligatures,
    decided per document); in math fonts a glyph between digits or a run of three is
    a period ("1\ue0040" -> "1.0", ldots), other math glyphs are kept."""
    if not _MATHY_FONT_RE.search(font) and not font_class(font)[1]:
        return txt.translate(PUA_SHIFT)
    txt = _DIGIT_PUA_RE.sub(".", txt)
    return _PUA_RUN_RE.sub("...", txt)


_LAST_TOKEN_RE = re.compile(r"([A-Za-z0-9]+)\)?$")


def is_exponent(prev: dict, s: dict, prev_txt: str, txt: str) -> bool:
    """A raised, smaller span of digits right after a number or a one-letter
    symbol: an exponent ("10" + "20" -> "10^20", "n" + "2" -> "n^2")."""
    if not prev:
        return False
    ps, cs = float(prev.get("size", 0.0)), float(s.get("size", 0.0))
    if ps <= 0 or cs <= 0 or cs > 0.85 * ps:
        return False
    t = txt.strip()
    if not t or len(t) > 4 or not all(ch.isdigit() or ch in "-−" for ch in t):
        return False
    po, co = prev.get("origin"), s.get("origin")
    if po is None or co is None or co[1] >= po[1] - 0.2 * ps or s["bbox"][0] - prev["bbox"][2] >= 0.3 * ps:
        return False
    m = _LAST_TOKEN_RE.search(prev_txt.rstrip())
    # after a number or a one-letter symbol ("n^2"), not a footnote mark after a word
    return m is not None and (m.group(1)[-1].isdigit() or len(m.group(1)) <= 1)


_SYMBOL_FONT_RE = re.compile(r"(wingding|dingbat|webding|symbol)", re.I)


def is_bullet_glyph(s: dict, nxt: dict) -> bool:
    """The first span of a line is a bullet drawn with a letter of a symbol font:
    any single glyph of Wingdings / ZapfDingbats / Symbol, or a lone "l", "n", "q",
    "u" or "§" (Wingdings and ZapfDingbats bullets under a substituted font name)
    in an upright text font, set apart from the item text ("n", "q", "u", "§" only
    before a capital) ("l Do not load ..." -> "• Do not load ...")."""
    t = s.get("text", "").strip()
    if len(t) != 1:
        return False
    if _SYMBOL_FONT_RE.search(s.get("font", "")) and not t.isdigit():
        return True
    nt = nxt.get("text", "").strip()
    if t not in "lnqu§" or not nt[:1].isalpha():
        return False
    if font_class(s.get("font", ""))[1] or int(s.get("flags", 0)) & 2:
        return False  # an italic / math-font "l" is a variable
    if t != "l" and not nt[:1].isupper():
        return False
    size = float(s.get("size", 0.0)) or 10.0
    return float(nxt["bbox"][0]) - float(s["bbox"][2]) > 0.15 * size or s["text"].endswith(" ") or nxt["text"].startswith(" ")


def text_flags() -> int:
    """``get_text`` flags: the dict defaults without image data (speed)."""
    import pymupdf

    if "dict" not in _FLAGS_CACHE:
        _FLAGS_CACHE["dict"] = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
    return _FLAGS_CACHE["dict"]


def font_names(page) -> dict[str, str]:
    """Full font names of a page keyed by the name its text spans carry.

    MuPDF cuts a span's font name at a fixed number of bytes, so a name with multi-byte
    characters loses its end (``"RCUMTFå¼«NimbusRomNo9L-M"`` for
    ``"...NimbusRomNo9L-Medi"``), and with it the weight the bold test reads. A span name
    that is a proper prefix of exactly one of the page's font names (subset tag
    ``ABCDEF+`` removed) maps to that name; others are absent.
    """
    try:
        names = {str(f[3]).split("+", 1)[-1] for f in page.get_fonts(full=False)}
    except Exception:
        return {}
    out: dict[str, str] = {}
    for n in names:
        for k in range(8, len(n)):
            short = n[:k]
            if short in out and out[short] != n:
                out[short] = ""  # ambiguous prefix
            else:
                out[short] = n
    return {k: v for k, v in out.items() if v and k not in names}


def extract_page_lines(page, pno: int, textpage=None) -> tuple[list[Line], int]:
    """Raw lines of one page from ``get_text("dict")``; returns (lines, n_rotated)."""
    d = page.get_text("dict", flags=text_flags(), textpage=textpage)
    full_font = font_names(page)
    out: list[Line] = []
    n_rot = 0
    for bi, b in enumerate(d.get("blocks", ())):
        if b.get("type", 0) != 0:
            continue
        for ln in b.get("lines", ()):
            dx, dy = ln.get("dir", (1.0, 0.0))
            spans = [s for s in ln.get("spans", ()) if s.get("text")]
            line_pua = len(spans) > 0 and _PUA_RE.search("".join(s["text"] for s in spans)) is not None
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
            prev_span: dict = {}
            csize: dict[float, int] = defaultdict(int)
            cfont: dict[str, int] = defaultdict(int)
            nb = ni = nm = nmono = n = nwords = 0
            size_hi = 0.0
            bold_prefix: list[str] = []
            prefix_open = True
            ital_prefix: list[str] = []
            iprefix_open = True
            for si, s in enumerate(spans):
                txt = fix_ligatures(s["text"])
                if si + 1 < len(spans) and (si == 0 or prev_txt.endswith(" ") or txt.startswith(" ")) \
                        and is_bullet_glyph(s, spans[si + 1]):
                    txt = ("" if si == 0 else " ") + "•" + (" " if not spans[si + 1]["text"].startswith(" ") else "")
                if line_pua and _has_pua(txt):
                    txt = pua_text(txt, s.get("font", ""))
                if not txt:
                    continue
                sb = s["bbox"]
                size = float(s.get("size", 0.0))
                em = size if size >= 2.5 else (lh if lh >= 2.5 else 10.0)
                if prev_x1 is not None:
                    gap = sb[0] - prev_x1
                    if size < 0.86 * prev_span.get("size", 0.0) and is_exponent(prev_span, s, prev_txt, txt):
                        parts.append("^")
                    elif gap > 0.18 * em and not prev_txt.endswith(" ") and not txt.startswith(" "):
                        parts.append(" ")
                parts.append(txt)
                prev_x1 = sb[2]
                prev_txt = txt
                prev_span = s
                k = len(txt.strip())
                if k == 0:
                    if prefix_open and bold_prefix:
                        bold_prefix.append(txt)
                    if iprefix_open and ital_prefix:
                        ital_prefix.append(txt)
                    continue
                font = s.get("font", "")
                font = full_font.get(font, font)
                flags = int(s.get("flags", 0))
                fb, is_math, fmono = font_class(font)
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
                    nwords += len(WORD_RE.findall(txt))
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
                Line(
                    page=pno, x0=lb[0], y0=lb[1], x1=lb[2], y1=lb[3], text=text, size=float(size),
                    bold=nb / n, italic=ni / n, math=nm / n, mono=nmono / n, font=font, block=bi,
                    nchars=n, nwords=nwords, bold_prefix=bp, size_hi=size_hi, italic_prefix=ip,
                )
            )
    return out, n_rot


def merge_pieces(pieces: list[Line]) -> Line:
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
    return Line(
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
