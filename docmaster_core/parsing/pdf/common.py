"""Shared records of the staged PyMuPDF parser: constants, the line record, the
per-page record and the parse context threaded through the stages.

Coordinates are PDF points (origin top left, y down); ``Line.page`` is 0-based,
element pages elsewhere are 1-based.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ...config import ParsingSettings

# Unnumbered headings that papers carry but outlines often omit (used by the outline
# mode to add them, and by scripts/eval_headings.py to ignore them when unmatched).
FRONT_BACK_MATTER = frozenset(
    {
        "abstract", "references", "bibliography", "acknowledgments", "acknowledgements",
        "acknowledgment", "acknowledgement", "appendix", "appendices", "keywords",
        "contents", "tableofcontents", "index", "glossary", "notes", "limitations",
        "ethicsstatement", "broaderimpact", "broaderimpactstatement", "impactstatement",
        "reproducibilitystatement", "supplementarymaterial", "authorcontributions",
        "conflictofinterest", "dataavailability", "funding", "preface", "foreword",
        "ccsconcepts", "generalterms", "categoriesandsubjectdescriptors", "summary",
        "executivesummary", "introduction",
    }
)

_MATH_FONT_RE = re.compile(
    r"(^|[+_-])(cmmi|cmsy|cmex|cmbsy|msbm|msam|eufm|eusm|rsfs|stix.*math|stixgeneral|"
    r"cambriamath|cambria-math|symbol|mtextra|mt-?symbol|euclid|lmmath|latinmodernmath|"
    r"lmroman.*math|txmi|txsy|txex|pxmi|pxsy|zxxmi|mathematicalpi|mathpi|esint|wasy|"
    r"ntxmi|ntxsy|newtxmath|cmmib|ptmri8m)",
    re.IGNORECASE,
)
_BOLD_FONT_RE = re.compile(
    r"(bold|black|heavy|semibold|demibold|demi|-medi|medium|-sb\b|cmbx|cmssbx|-bd\b|\.b$|,b$|-b$|bx\d)",
    re.IGNORECASE,
)
_MONO_FONT_RE = re.compile(r"(courier|mono|cmtt|sftt|consolas|menlo|typewriter|lmtt)", re.IGNORECASE)
MATH_CHARS = set(
    "=+−×÷±∓∑∏∫∮∂∇∆√∞∝≈≠≡≤≥≪≫∈∉∋⊂⊃⊆⊇∪∩∧∨¬∀∃∅→←↔⇒⇐⇔↦⟨⟩‖∥⊥⊗⊕⊙∘·⋅∗†′″"
    "αβγδεζηθικλμνξοπρστυφχψωϵϑϕϱςΓΔΘΛΞΠΣΥΦΨΩ^_|{}[]<>"
)
PAGENUM_RE = re.compile(
    r"^(?:page\s*)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:of|/)\s*\d{1,4})?$|^[-–—]\s*\d{1,4}\s*[-–—]$",
    re.IGNORECASE,
)
EQNUM_RE = re.compile(r"\(\s*(?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})?[a-z]?\s*\)\s*$")
# a form's field, alone or with its value ("Agreement Number: CW251207", "Supplier Telephone:"): a label
# naming a kind of entry (a number, name, date, address ...) before a colon, neither a title nor a heading
FORM_FIELD_RE = re.compile(r"^(?:[\w.\-]+\s+){0,3}(?:number|no\.?|name|date|address|telephone|phone|fax|e-?mail|"
                           r"id|code|reference|ref\.?)\s*:", re.IGNORECASE)
BULLET_RE = re.compile(r"^(?:[•◦▪▫●○■□►▸‣⁃∙·\-–—*]|\(?\d{1,2}[.)]|\(?[a-z][.)]|\([ivx]+\))\s")
WORD_RE = re.compile(r"[A-Za-z]{3,}")
TABLE_HINT_RE = re.compile(r"^\s*(?:Table|TABLE|Tab\.)\s*[A-Z]?[0-9IVX]")





@dataclass(slots=True, eq=False)
class Line:
    """One visual line (after merging pieces on the same baseline). Internal."""

    page: int  # 0-based page index
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float  # dominant font size (points); <= 0 when unknown (Type 3)
    bold: float  # fraction of characters in bold fonts
    italic: float
    math: float  # fraction of characters in math fonts
    mono: float
    font: str
    block: int
    nchars: int
    nwords: int  # words (>= 3 letters) outside math fonts
    size_hi: float = 0.0  # largest non-math font size on the line (small caps headings)
    bold_prefix: str = ""  # leading bold text when the rest is not bold (run-in heading)
    italic_prefix: str = ""  # leading italic text when the rest is not italic
    underline_prefix: str = ""  # leading underlined text (drawn under the glyphs; see .underline)
    max_gap: float = 0.0  # largest horizontal gap between merged pieces (points)
    role: str = ""  # "" body | header | pagenum | caption | heading | equation | region | doctitle | legend (body text, no heading)
    col: int = 0  # 0 left/single, 1 right, -1 full width
    heading_level: int | None = None
    heading_text: str = ""
    heading_source: str = ""
    heading_chars: int = 0  # run-in heading: characters of ``text`` the heading takes (0: unknown)
    group: int = -1  # caption/equation/region group id on the page

    @property
    def h(self) -> float:
        return self.y1 - self.y0

    @property
    def w(self) -> float:
        return self.x1 - self.x0

    @property
    def yc(self) -> float:
        return 0.5 * (self.y0 + self.y1)


def _font_is_bold(font: str, flags: int) -> bool:
    return bool(flags & 16) or font_class(font)[0]


_FONT_CLASS: dict[str, tuple[bool, bool, bool]] = {}


def font_class(font: str) -> tuple[bool, bool, bool]:
    """(bold name, math font, monospace name) of a font name, cached."""
    c = _FONT_CLASS.get(font)
    if c is None:
        c = (bool(_BOLD_FONT_RE.search(font)), bool(_MATH_FONT_RE.search(font)), bool(_MONO_FONT_RE.search(font)))
        if len(_FONT_CLASS) < 10000:
            _FONT_CLASS[font] = c
    return c


def box_union(boxes: Iterable[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    bs = list(boxes)
    return (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))


def overlap_x(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


@dataclass
class PageInfo:
    """One page during parsing: size (points), its visual lines, layout and regions."""

    width: float
    height: float
    lines: list[Line] = field(default_factory=list)
    gutters: list[float] = field(default_factory=list)  # x of the gaps between text columns
    items: list[dict[str, Any]] = field(default_factory=list)  # regions, equations
    words: list[tuple] | None = None  # get_text("words") tuples on table-caption pages
    images: list[tuple] = field(default_factory=list)  # raster image boxes (points)


@dataclass
class ParseContext:
    """State threaded through the stages of one parse.

    Attributes:
        settings: The parsing settings.
        name: File name used in messages.
        body_size: Dominant body font size (points), set by the layout stage.
        body_font: Dominant body font name.
        table_seconds: Seconds spent in ``find_tables`` so far.
        table_budget: Per-document ``find_tables`` budget (seconds).
        table_calls: ``find_tables`` calls so far.
        warnings: Human-readable warnings collected on the way.
        ligatures: The document's private-use glyph -> letters table (plane-15
            code points, see :mod:`.spans`).
        unreadable: ``{page (1-based): characters lost inside words}``
            (:func:`~docmaster_core.parsing.base.count_unreadable`).
        vocabulary: The document's lower-case words, computed on first call (set once
            every page is read; :func:`~docmaster_core.parsing.base.join_lines` joins a word
            broken at a line-end hyphen when the document uses it whole), or None.
    """

    settings: ParsingSettings
    name: str = ""
    body_size: float = 10.0
    body_font: str = ""
    table_seconds: float = 0.0
    table_budget: float = 1.0
    table_calls: int = 0
    warnings: list[str] = field(default_factory=list)
    ligatures: dict[int, str] = field(default_factory=dict)
    unreadable: dict[int, int] = field(default_factory=dict)
    vocabulary: Callable[[], set[str]] | None = None

    def table_time_left(self) -> bool:
        """True while the ``find_tables`` budget is not spent."""
        return self.table_seconds < self.table_budget
