"""Parser protocol and text helpers shared by the parsing backends (SPEC F1).

Everything here is pure Python (no PyMuPDF import), so the MinerU importer and the
tree builder can use it cheaply.

Conventions: pages are 1-based, boxes are ``(x0, y0, x1, y1)`` in PDF points with the
origin at the top-left (as in PyMuPDF).
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Callable, Protocol, Sequence, runtime_checkable

from ..model import ParsedDocument

__all__ = [
    "Parser",
    "clean_text",
    "count_unreadable",
    "fix_ligatures",
    "normalize_heading",
    "heading_numbering",
    "numbering_level",
    "is_caption",
    "CAPTION_RE",
    "SENTENCE_END_RE",
    "BROKEN_END",
    "unreadable_note",
]


@runtime_checkable
class Parser(Protocol):
    """A parsing backend: turns one file into a :class:`ParsedDocument`.

    Attributes:
        name: Backend name (``"pymupdf"``, ``"mineru"``, ``"mineru-import"``).
    """

    name: str

    def parse(self, path: str | Path) -> ParsedDocument:
        """Parse ``path``.

        Raises:
            docmaster_core.errors.ParseError: (or a subclass) with a one-line reason
                naming the file when it cannot be parsed.
        """
        ...


# --------------------------------------------------------------------------------------
# Text normalisation
# --------------------------------------------------------------------------------------

# Old dvips Type 3 fonts (TeX OT1 encoding) put ligatures at code points 0x0B-0x0F,
# which PyMuPDF returns as control characters (corpus README: okapi, pagerank,
# item-based CF; BEIR, TAO and sparse-JL also contain some).
_LIGATURE_CTRL = {
    "\x0b": "ff",
    "\x0c": "fi",
    "\x0d": "fl",
    "\x0e": "ffi",
    "\x0f": "ffl",
}
_UNICODE_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
_TRANSLATE = {ord(k): v for k, v in {**_LIGATURE_CTRL, **_UNICODE_LIGATURES}.items()}
# other control characters (except tab/newline) and invisible format characters
for _cp in list(range(0x00, 0x09)) + list(range(0x10, 0x20)) + [0x7F]:
    _TRANSLATE.setdefault(_cp, "")
for _cp in (0x00AD, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x200A, 0x2009, 0x202F):
    _TRANSLATE[_cp] = "" if _cp in (0x00AD, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF) else " "
_TRANSLATE[0x00A0] = " "
_TRANSLATE[0xFFFD] = ""
# lone UTF-16 surrogates (a ToUnicode CMap mapping to half a pair) are not text and
# cannot be stored as UTF-8: drop them
for _cp in range(0xD800, 0xE000):
    _TRANSLATE[_cp] = ""

_WS_RE = re.compile(r"\s+")


def fix_ligatures(text: str) -> str:
    """Replace ligature control characters and Unicode ligatures by their letters.

    ``"\\x0bects"`` -> ``"effects"``, ``"\\ufb01ne"`` -> ``"fine"``; other control
    characters (except tab and newline), soft hyphens, zero-width characters and lone
    UTF-16 surrogates are removed; no-break and thin spaces become plain spaces.
    """
    return text.translate(_TRANSLATE)


def clean_text(text: str) -> str:
    """:func:`fix_ligatures` then collapse all whitespace runs to one space and strip."""
    return _WS_RE.sub(" ", fix_ligatures(text)).strip()


# a control or replacement character inside a word ("BM\x02\x05" for "BM25", "\x01\x050 million"): a font
# without a text mapping (old Type 3 fonts); the ligature codes 0x0B-0x0F are read (see above)
_UNREADABLE = "[\x00-\x08\x10-\x1f\x7f\ufffd]"
_UNREADABLE_WORD_RE = re.compile(r"\S*" + _UNREADABLE + r"\S*")
_UNREADABLE_RE = re.compile(_UNREADABLE)
_ALNUM_RE = re.compile(r"[A-Za-z0-9]")


def count_unreadable(text: str) -> int:
    """Characters of ``text`` (raw extracted text, before :func:`fix_ligatures`) that a font
    without a text mapping turned into control or replacement characters *inside words*
    (a token that also holds a letter or digit): "BM\\x02\\x05" for "BM25". Standalone
    codes (a formula's bracket glyphs) are not counted. :func:`fix_ligatures` removes
    them, so the text loses those characters; the count lets the ingest say so.

    Returns:
        int >= 0.
    """
    return sum(len(_UNREADABLE_RE.findall(w)) for w in _UNREADABLE_WORD_RE.findall(text) if _ALNUM_RE.search(w))


def unreadable_note(per_page: dict[int, int], min_chars: int = 10) -> str:
    """One line for the ingest report when words lost characters (:func:`count_unreadable`),
    e.g. "312 characters inside words could not be read on 17 pages (most on page 9): the
    PDF's fonts have no text mapping for them (often digits), so they are missing from the
    text; the page images show them"; "" below ``min_chars`` in all.

    Args:
        per_page: ``{page (1-based): count}``.
        min_chars: Smallest total that is reported (a few stray codes are not).
    """
    pages = [p for p, n in per_page.items() if n > 0]
    total = sum(per_page.values())
    if total < min_chars or not pages:
        return ""
    top = max(pages, key=lambda p: (per_page[p], -p))
    where = f"on page {top}" if len(pages) == 1 else f"on {len(pages)} pages (most on page {top})"
    return (f"{total} characters inside words could not be read {where}: the PDF's fonts have no text mapping "
            "for them (often digits), so they are missing from the text; the page images show them")


#: A line ending in a word broken at a hyphen ("the segmenta-"): the word goes on on the next line.
BROKEN_END = re.compile(r"([A-Za-z]+)-$")
_BROKEN_START = re.compile(r"^([A-Za-z]+)")
_NUMBER_START = re.compile(r"^\d+(?:\b|[A-Za-z])")


# word endings that never stand alone nor begin the second part of a compound: a line starting with one goes on
# with the word broken at the line end before it
_BOUND_SUFFIX = re.compile(r"(?:a|i)?tions?|sions?|ments?|ness(?:es)?|it(?:y|ies)|[ae]nces?|ous(?:ly)?|ive(?:ly|s)?"
                           r"|ical(?:ly)?|i[sz](?:ed|es|ing|ation)")


def join_lines(lines: Sequence[str], vocabulary: Callable[[], set[str]] | None = None) -> str:
    """Lines of one paragraph or title joined by spaces; a word broken at a line-end hyphen
    ("AB-" / "STRACTION") is joined whole when ``vocabulary()`` (lower-case words the
    document uses elsewhere, asked for only when a line ends so) holds the whole word
    ("abstraction") or the piece after the break is a bound suffix ("segmenta-" / "tion": no
    word begins so), else kept hyphenated without the space ("TREC-" / "COVID" gives
    "TREC-COVID", a compound; a suspended "pre- and post-" stays as it is, the next line
    starting with no letter run joined to it); a name broken before its number ("ResNet-" /
    "34") is joined keeping the hyphen. Without ``vocabulary`` every broken word keeps its
    hyphen.

    Returns:
        The joined text (whitespace not collapsed; see :func:`clean_text`).
    """
    out = ""
    for raw in lines:
        t = str(raw or "").strip()
        if not t:
            continue
        m, n = BROKEN_END.search(out), _BROKEN_START.match(t)
        if out and m and _NUMBER_START.match(t):  # "ResNet-" / "34 ...": a name and its number, one word
            out += t
        elif out and m and n and t.split()[0].lower() not in ("and", "or", "to"):
            whole = (m.group(1) + n.group(1)).lower()
            # ... or when the piece after the break is a suffix no word or compound begins with ("segmenta-" /
            # "tion embeddings", "align-" / "ment")
            joined = (vocabulary is not None and whole in vocabulary()) \
                or _BOUND_SUFFIX.fullmatch(n.group(1)) is not None
            out = (out[:-1] if joined else out) + t
        else:
            out = f"{out} {t}" if out else t
    return out


# --------------------------------------------------------------------------------------
# Heading numbering
# --------------------------------------------------------------------------------------

_ROMAN = r"(?=[IVXivx])(?:X{0,3})(?:IX|IV|V?I{0,3})"
# "3", "3.2", "3.2.1", "A", "A.1", "II", "II.1.3", optionally followed by "." or ")"
# then whitespace, optionally prefixed by Chapter/Section/Appendix.
_NUM_RE = re.compile(
    r"^(?:§\s*)?(?:(?:chapter|section|appendix|part)\s+)?"
    r"(?P<num>(?:\d{1,2}|[A-Z]|" + _ROMAN + r")(?:\s?\.\s?\d{1,2}){0,4})"
    r"(?P<sep>\s?[.):]?)\s+(?P<rest>\S.*)$",
    re.IGNORECASE,
)
_WORDNUM_RE = re.compile(r"^(?:chapter|section|appendix|part)\s+", re.IGNORECASE)


def heading_numbering(text: str) -> tuple[str, str] | None:
    """Split a heading into its numbering and the rest.

    Recognises Arabic (``"3.2 Method"``, ``"1. Introduction"``, ``"4.1 . Setup"``),
    letter (``"A.1 Details"``) and Roman (``"II.2 Defining"``, ``"III. Results"``)
    numbering, optionally after ``Chapter``/``Section``/``Appendix``.

    Returns:
        ``(numbering, rest)`` with the numbering stripped of spaces and trailing
        punctuation (``"3.2"``), or ``None`` when the text is not numbered. A single
        letter is only accepted when followed by an upper-case word (``"A Related
        Work"``), so ordinary sentences starting with "A" or "I" are not numbered.
    """
    t = text.strip()
    m = _NUM_RE.match(t)
    if not m:
        return None
    num = re.sub(r"\s", "", m.group("num")).rstrip(".")
    rest = m.group("rest").strip()
    if not num or not rest:
        return None
    first = num.split(".")[0]
    if first.isalpha():
        is_roman = bool(re.fullmatch(_ROMAN, first.upper())) and first.isupper()
        if len(first) == 1 and not first.isupper():
            return None
        if len(first) > 1 and not is_roman:
            return None
        if not first.isupper():
            return None
        # "A" / "I" alone: require an upper-case start of the rest and no sentence-like
        # second word ("A model is ..." / "I think ...").
        if "." not in num and len(first) == 1:
            explicit = bool(m.group("sep").strip()) or bool(_WORDNUM_RE.match(t))
            if not rest[:1].isupper() and not explicit:
                return None
            words = rest.split()
            if first in ("A", "I") and len(words) > 1 and words[1][:1].islower() and len(words) > 6:
                return None
    else:
        # numbers like 2019 or 100 are not section numbers
        if int(first) > 30 and "." not in num:
            return None
    if not (rest[:1].isalpha() or rest[:1] in "\"'“‘(["):
        return None
    return num, rest


def numbering_level(num: str) -> int:
    """Heading level implied by a numbering string: ``"3"`` -> 1, ``"3.2"`` -> 2,
    ``"A.1.2"`` -> 3, ``"II"`` -> 1."""
    return num.count(".") + 1


def normalize_heading(text: str) -> str:
    """Normalised heading text for matching: lower case, numbering removed, only
    letters and digits kept (``"3.2. Proof Details!"`` -> ``"proofdetails"``)."""
    t = clean_text(text)
    t = _WORDNUM_RE.sub("", t)
    hn = heading_numbering(t)
    if hn is not None:
        t = hn[1]
    t = unicodedata.normalize("NFKD", t)
    return "".join(ch for ch in t.lower() if ch.isalnum())


CAPTION_RE = re.compile(
    r"^(?P<kind>Figure|Fig\.?|FIGURE|FIG\.?|Table|TABLE|Tab\.|Algorithm|Listing|Chart|Exhibit)"
    r"\s*(?P<num>[A-Z]?\d+(?:\.\d+)?[a-z]?|[IVX]+)\s*(?P<sep>[:.|—–-]|\s)",
)

SENTENCE_END_RE = re.compile(r"[.!?:;][\"'”’)\]]*$")


def is_caption(text: str, strict: bool = True) -> str | None:
    """Return ``"figure"`` or ``"table"`` when ``text`` starts like a caption
    (``"Figure 2: ..."``, ``"Fig. 3."``, ``"Table 1 |"``, ``"TABLE II"``), else ``None``.

    Algorithms/listings/charts count as figures. With ``strict`` (default) the label
    must be followed by punctuation (``:``, ``.``, ``|``, a dash) or end the text, so
    running text such as "Table 2 shows ..." is not a caption; callers that have a
    style cue (bold label, smaller font) can pass ``strict=False``. "Exhibit 10.1" with
    nothing after it is a filing's exhibit number, not a caption.
    """
    t = text.strip()
    m = CAPTION_RE.match(t + " ")
    if not m:
        return None
    if strict and m.group("sep").isspace() and len(t) > m.end() - 1:
        return None
    kind = m.group("kind").lower()
    if kind == "exhibit" and not t[m.end() - 1:].strip(" .:|—–-"):
        return None  # "Exhibit 10.1" alone: a filing's exhibit number (SEC), not a chart's caption
    return "table" if kind.startswith("tab") else "figure"
