"""Stage "clause headings": headings a reader sees from their numbering alone.

Contracts, filings and manuals are often set in one font, size and weight, so the
style tests of :mod:`.headings` find nothing. A reader still sees the structure from
the numbering and the layout:

* keyword headings: ``"ARTICLE IV"`` (title on the same or the next line),
  ``"Section 10.  Term and Termination"``, ``"ARTICLE 1. DEFINITIONS"``;
* a numbering label alone with the title beside or below it: ``"1."`` then
  ``"Appointment and Acceptance"``;
* a numbered title line that ends well before the margin: ``"4. Term"``,
  ``"12. MISCELLANEOUS"``;
* run-in clause headings at the start of a paragraph: ``"10.1  Term.  The term of
  this Agreement ..."`` (heading ``"10.1 Term"``), ``"(a) Payment. ..."``;
* an unnumbered word or two in capitals, centred alone between paragraphs of the body:
  ``"RECITALS"``, ``"WITNESSETH:"``, ``"BACKGROUND"`` (:func:`detect_centred_caps_headings`).

A candidate must start a paragraph (first line on the page or after a heading, a
blank line, or a line that ends a sentence) and must not sit in a signature block.
Numbers must run in sequence within their series (``1, 2, 3``; ``10.1, 10.2`` under
``10``; ``(a), (b)``), which drops cross-references and enumerations in prose.
Levels come from the numbering: ARTICLE > Section / ``1.`` > ``1.1`` > ``(a)`` >
``(i)`` (the order Docling's heading hierarchy and most drafting manuals use).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..base import SENTENCE_END_RE, clean_text, heading_numbering, normalize_heading
from .common import Line, PageInfo
from .layout import FILING_LABEL_RE

__all__ = ["detect_clause_headings", "detect_centred_caps_headings", "is_signature_line", "mark_signature_blocks",
           "sentence_case_title", "title_like"]

_ROMAN = r"(?:M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))"
_WORD_NUMBERS = ["ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE", "TEN", "ELEVEN", "TWELVE",
                 "THIRTEEN", "FOURTEEN", "FIFTEEN", "SIXTEEN", "SEVENTEEN", "EIGHTEEN", "NINETEEN", "TWENTY"]
_KEYWORD_RE = re.compile(
    r"^(?P<kw>ARTICLE|Article|SECTION|Section|PART|Part|CLAUSE|Clause|§)\s*"
    r"(?P<num>" + _ROMAN + r"|\d{1,3}(?:\.\d{1,3}){0,3}|(?i:" + "|".join(_WORD_NUMBERS) + r"))(?![\w])"
    r"(?P<sep>\s*[.:)\-–—]?)\s*(?P<rest>.*)$"
)
_ANNEX_KW_RE = re.compile(r"^(?P<kw>EXHIBIT|Exhibit|SCHEDULE|Schedule|ANNEX|Annex|APPENDIX|Appendix|ATTACHMENT|Attachment)"
                          r"\s+(?P<num>[A-Z0-9]{1,3}(?:[.\-]\d{1,2})?)(?P<sep>\s*[.:)\-–—]?)\s*(?P<rest>.*)$")
_LABEL_RE = re.compile(r"^(?P<num>\d{1,3}(?:\.\d{1,3}){0,3}|" + _ROMAN + r")[.)]?$|^\((?P<paren>[a-z]{1,4}|\d{1,2})\)$"
                       r"|^(?P<lower>[ivx]{1,4}|[a-z])\.$")
_NUMBERED_RE = re.compile(
    r"^(?P<num>\d{1,3}(?:\.\d{1,3}){0,3}\.?|(?:" + _ROMAN + r")\.|\([a-z]{1,4}\)|\(\d{1,2}\)|[a-z]\)|[ivx]{1,4}\.|[a-z]\.)"
    r"\s+(?P<rest>\S.*)$"
)
# "Term.  The term of ..." -> title "Term" (a dot inside a word, "Amazon.com", does not end it)
# ... also where the title ends in a roman numeral after a word that numbers stages or parts ("Phase I.
# Between ...", "Part V. The ..."), which the rule above takes for an initial ("J. Smith")
_RUNIN_ROMAN = (r"^(?P<title>[^.:;]{0,60}\b(?:Phase|Part|Stage|Step|Tier|Level|Round|Option|Class|Type|Series|Title)"
                r"\s+[IVX])\.\s+(?P<body>\S.*)$")
_RUNIN = r"^(?P<title>(?:[^.:;]|\.(?=\S)|(?<=\b[A-Z])\.){2,90}?)(?<!\b[A-Z])[.:]\s+(?P<body>\S.*)$"
# a sentence ends inside: ". The" but not "U.S. Foreign", "Co. Ltd"
_SENTENCE_INSIDE = re.compile(r"(?<!\b[A-Z])(?<!\bInc)(?<!\bCo)(?<!\bNo)(?<!\bLtd)[.!?]\s+\S")
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to",
                "upon", "with", "under", "other", "its", "their", "between", "than", "vs", "per", "not", "no"}
_SIGNATURE_RE = re.compile(r"^(?:by|name|title|its|date|dated|signature|witness|print name|printed name)\s*:"
                           r"|/s/|^_{4,}|^\(signature\)|^in witness whereof", re.IGNORECASE)

_ROMAN_VALUE = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def is_signature_line(text: str) -> bool:
    """Whether a line belongs to a signature block (``"By: /s/ ..."``, ``"Name:"``,
    ``"Title:"``, a rule of underscores, ``"IN WITNESS WHEREOF"``)."""
    return bool(_SIGNATURE_RE.search(text.strip()))


_FIELD_RE = re.compile(r"(?:^|\s)(?:By|BY|Name|NAME|Title|TITLE|Its|ITS|Date|DATE|Signature)\s*:|/s/|_{4,}")


def mark_signature_blocks(elements: list) -> int:
    """Tag the paragraphs of signature blocks ``extra["role"] = "signature"`` (in place).

    Tagged: a paragraph that opens "IN WITNESS WHEREOF"; a paragraph holding a signature
    field ("By:", "Name:", "Title:", "/s/", a rule of underscores) that is short (at
    most 40 words), holds three such fields, or follows "IN WITNESS WHEREOF" in the same
    section; the short lines right above such a paragraph (the parties' names, at most
    10 words each, not ending a sentence). The text stays in the document (who signed is content); summaries leave
    these paragraphs out.

    Args:
        elements: :class:`~docmaster_core.model.Element` list in reading order.

    Returns:
        The number of elements tagged.
    """
    from ...model import NodeType

    n = 0
    after_witness = False
    for i, e in enumerate(elements):
        if e.type != NodeType.TEXT:
            if e.type == NodeType.TITLE:
                after_witness = False
            continue
        t = e.text.strip()
        words = t.split()
        witness = bool(re.match(r"^in witness whereof", t, re.IGNORECASE))
        fields = len(_FIELD_RE.findall(t))
        sig = witness or (len(words) <= 40 and fields >= 1) or fields >= 3 or (after_witness and fields >= 1)
        after_witness = after_witness or witness
        if not sig:
            continue
        e.extra = {**(e.extra or {}), "role": "signature"}
        n += 1
        j = i - 1
        while j >= 0 and elements[j].type == NodeType.TEXT and (elements[j].extra or {}).get("role") != "signature":
            pt = elements[j].text.strip()  # the parties' names above the first signature line
            if len(pt.split()) > 10 or re.search(r"[a-z]{2}[.;:]$", pt):
                break
            elements[j].extra = {**(elements[j].extra or {}), "role": "signature"}
            n += 1
            j -= 1
    return n


def _roman(s: str) -> int | None:
    s = s.upper()
    if not s or not re.fullmatch(_ROMAN, s):
        return None
    total = 0
    for a, b in zip(s, s[1:] + " "):
        v = _ROMAN_VALUE[a]
        total += -v if b != " " and _ROMAN_VALUE.get(b, 0) > v else v
    return total


def title_like(text: str, max_words: int = 12) -> bool:
    """A heading's title: few words, every significant word capitalised (or all caps),
    no sentence inside, not a defined term or a list item ending in ``,`` / ``;``."""
    t = text.strip().rstrip(".:")
    if not t or t.endswith((",", ";")) or len(t) > 110:
        return False
    words = re.findall(r"[A-Za-z][A-Za-z'’\-]*", t)
    if not words or len(words) > max_words or sum(ch.isalpha() for ch in t) < 0.6 * len(t.replace(" ", "")):
        return False
    if _SENTENCE_INSIDE.search(t) or t[:1] in "\"“'‘":
        return False
    if not t[:1].isupper():
        return False
    significant = [w for w in words if w.lower() not in _SMALL_WORDS]
    if not significant:
        return False
    upper = sum(1 for w in significant if w[:1].isupper())
    return upper >= 0.8 * len(significant) and not (len(words) == 1 and len(t) <= 2)


# a line ending in one of these goes on below ("7.1 Party A represents and warrants that"): no title
_OPEN_END = _SMALL_WORDS | {"that", "which", "who", "if", "when", "where", "whether", "event", "any", "all", "each"}

_VERB_RE = re.compile(r"\b(?:is|are|was|were|be|been|shall|will|may|must|can|has|have|had|does|do|agrees?|means)\b", re.I)


def sentence_case_title(text: str, max_words: int = 4) -> bool:
    """A short title in sentence case ("Licensing rights", "Disclosing Party's proprietary
    rights"): 2 to ``max_words`` words of letters (a possessive or a hyphen inside a word
    allowed), a capital start, no verb, no digits."""
    t = text.strip()
    words = t.split()
    return 2 <= len(words) <= max_words and t[:1].isupper() and not _VERB_RE.search(t) and not re.search(r"\d", t) \
        and all(re.sub(r"(?<=\w)(?:['’]s?|-)(?=\w|$)", "", w.rstrip(",")).isalpha() for w in words)


@dataclass(slots=True)
class _Cand:
    line: Line
    kind: str  # "keyword" | "label" | "line" | "runin"
    keyword: str  # "article" | "section" | "part" | "clause" | ""
    num: str  # "10", "10.1", "IV", "(a)"
    text: str  # heading text shown (numbering included)
    title_line: Line | None = None  # the next line merged as the title
    label_line: Line | None = None  # a numbering label alone before ``line`` ("11." then "Publicity. ...")
    chars: int = 0  # run-in: characters of the line's text the heading takes
    series: tuple = ()
    value: int = 0
    level: int = 1


def _value(num: str) -> tuple[tuple, int] | None:
    """(series shape, value of the last part) of a numbering: ``"10.2"`` ->
    ``(("arabic", 2, "10"), 2)``; ``"IV"`` -> ``(("roman", 1, ""), 4)``; ``"(b)"`` ->
    ``(("letter", 1, ""), 2)``."""
    n = num.strip().rstrip(".)")
    if n.upper() in _WORD_NUMBERS:
        return ("word", 1, ""), _WORD_NUMBERS.index(n.upper()) + 1
    if n.startswith("("):
        inner = n.strip("()")
        if inner.isdigit():
            return ("paren-arabic", 1, ""), int(inner)
        r = _roman(inner)
        if r is not None and (len(inner) > 1 or inner in "iv"):
            return ("paren-roman", 1, ""), r
        if len(inner) == 1:
            return ("letter", 1, ""), ord(inner) - ord("a") + 1
        return None
    if re.fullmatch(r"\d{1,3}(?:\.\d{1,3})*", n):
        parts = n.split(".")
        return ("arabic", len(parts), ".".join(parts[:-1])), int(parts[-1])
    if n.islower() and _roman(n) is not None and (len(n) > 1 or n in "iv"):
        return ("paren-roman", 1, ""), _roman(n)  # "ii." numbers like "(ii)": below the letters
    if len(n) == 1 and n.islower():
        return ("letter", 1, ""), ord(n) - ord("a") + 1
    r = _roman(n)
    if r is not None:
        return ("roman", 1, ""), r
    return None


def _ordered(lines: list[Line]) -> list[Line]:
    return sorted(lines, key=lambda l: (l.col if l.col >= 0 else -1, l.y0, l.x0))


def _end_of(l: Line, title: str) -> int:
    """Characters of ``l.text.strip()`` up to the end of a run-in title and its stop."""
    raw = l.text.strip()
    i = raw.find(title.strip())
    return i + len(title.strip()) + 1 if i >= 0 else 0


def _candidate(l: Line, nxt: Line | None, col_right: float) -> _Cand | None:
    t = clean_text(l.text).strip()
    if not t or is_signature_line(t) or re.search(r"(?:\.\s*){4,}\d*$", t):
        return None  # a signature line, or a table-of-contents entry with leader dots
    ends_early = l.x1 < col_right - 0.15 * max(1.0, col_right - l.x0)
    m = _ANNEX_KW_RE.match(t)
    if m and not FILING_LABEL_RE.match(t):
        rest = m.group("rest").strip()
        head = f"{m.group('kw')} {m.group('num')}"
        # (its title on the next line, also when the style pass took that line for a heading of its own)
        if not rest and nxt is not None and nxt.role in ("", "heading") and title_like(nxt.text) \
                and not _NUMBERED_RE.match(nxt.text.strip()) and not _ANNEX_KW_RE.match(nxt.text.strip()):
            return _Cand(l, "keyword", "annex", m.group("num"), clean_text(f"{head} {nxt.text.strip()}"), title_line=nxt)
        if not rest or (title_like(rest, 12) and (ends_early or nxt is None)):
            return _Cand(l, "keyword", "annex", m.group("num"), clean_text(f"{head} {rest}").strip().rstrip("."))
        return None
    m = _KEYWORD_RE.match(t)
    if m:
        kw = {"§": "section"}.get(m.group("kw"), m.group("kw").lower())
        num = m.group("num")
        rest = m.group("rest").strip()
        head = f"{m.group('kw')} {num}"
        if not rest:
            if nxt is not None and nxt.role == "" and title_like(nxt.text) and not _NUMBERED_RE.match(nxt.text.strip()) \
                    and not _KEYWORD_RE.match(nxt.text.strip()):
                return _Cand(l, "keyword", kw, num, clean_text(f"{head} {nxt.text.strip()}"), title_line=nxt)
            return _Cand(l, "keyword", kw, num, head)
        if title_like(rest, 14) or (ends_early and sentence_case_title(rest.rstrip("."), 8)):
            return _Cand(l, "keyword", kw, num, clean_text(f"{head} {rest}").rstrip("."))
        rm = re.match(_RUNIN, rest)
        if rm and title_like(rm.group("title"), 9) and not rm.group("title").startswith("("):
            return _Cand(l, "runin", kw, num, clean_text(f"{head} {rm.group('title')}"), chars=_end_of(l, rm.group("title")))
        return None
    m = _LABEL_RE.match(t)
    if m and nxt is not None and nxt.role == "":
        num = m.group("num") or (f"({m.group('paren')})" if m.group("paren") else f"{m.group('lower')}.")
        nt = nxt.text.strip()
        # a sub-clause number ("4.3") takes a title in sentence case too ("Permitted disclosure of
        # Confidential Information"), as on the same line (below), and so does a clause number with
        # its dot ("5." then "Customer's obligations")
        sub = bool(re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){1,3}|\d{1,3}\.", num)) \
            and sentence_case_title(nt.rstrip(":"), 6) and nt.rstrip(":").split()[-1].lower() not in _OPEN_END
        if (title_like(nt) or sub) and not _NUMBERED_RE.match(nt):
            return _Cand(l, "label", "", num, clean_text(f"{t} {nt}").rstrip(".:"), title_line=nxt)
        rm = re.match(_RUNIN, nt)
        if rm and abs(nxt.yc - l.yc) < 0.5 * (l.size or 10.0) and title_like(rm.group("title"), 8) \
                and not rm.group("title").startswith("(") and not rm.group("body").startswith("(") \
                and not _ABBREVIATION_END.search(rm.group("title")):
            # "11." with "Independent Contractor. Nothing in ..." beside it: the run-in heading is
            # the neighbour's; the label joins it
            return _Cand(nxt, "runin", "", num, clean_text(f"{t} {rm.group('title')}"),
                         chars=_end_of(nxt, rm.group("title")), label_line=l)
        return None
    m = _NUMBERED_RE.match(t)
    if not m:
        return None
    num = m.group("num")
    rest = m.group("rest").strip()
    if num.isdigit():
        return None  # "3 See Regulation ...": a plain number needs its dot ("3.") to number a clause
    # a title in sentence case ("Royalties payable by TL") after a number with its dot: "10.1", "5."
    sentence_ok = "." in num
    # ... and alone on its line without a stop ("4.2 Non application of confidentiality obligations",
    # "4. Transportation route, time and relevant rules", "3. Freight and payment method:"), unless the
    # line goes on below; a run of them with no text between is a list (:func:`_drop_lists_of_titles`)
    own_line = rest.rstrip(".:")
    rm = re.match(_RUNIN, rest) or re.match(_RUNIN_ROMAN, rest)
    if rm and (title_like(rm.group("title"), 8) or (sentence_ok and sentence_case_title(rm.group("title")))) \
            and not rm.group("title").startswith("("):
        return _Cand(l, "runin", "", num, clean_text(f"{num} {rm.group('title')}"), chars=_end_of(l, rm.group("title")))
    if (title_like(rest, 12) or (sentence_ok and rest.endswith((".", ":")) and sentence_case_title(own_line))
            or (sentence_ok and own_line and sentence_case_title(own_line, 6) and not own_line.endswith(",")
                and own_line.split()[-1].lower() not in _OPEN_END)) \
            and (ends_early or nxt is None) and not num.startswith("(") and not num.endswith(")"):
        return _Cand(l, "line", "", num, clean_text(f"{num} {rest}").rstrip(".:"))
    return None


# a "." after these ends an abbreviation, not a title: "Hospira, Inc.", "Amendment No. 1"
_ABBREVIATION_END = re.compile(r"\b(?:Inc|Ltd|Ltda|Lda|Co|Corp|LLC|plc|PLC|L\.P|N\.A|S\.A|GmbH|AG|BV|NV|No|Nos)$")


def _underlined_candidate(l: Line) -> _Cand | None:
    """An unnumbered title the line opens with, underlined (:mod:`.underline`):
    ``"Dedication. During the Term, ..."`` (run-in) or ``"Post-Commencement Date
    Facilities."`` alone on its line. The underline must cover the words before the
    first ``.`` / ``:`` and nothing after them; the words must read as a title."""
    u = clean_text(l.underline_prefix).strip().rstrip(".:").strip()
    if len(u) < 3:
        return None
    t = clean_text(l.text).strip()
    if not t.startswith(u):
        return None
    rest = t[len(u):]
    if not rest.startswith((".", ":")) or "." in u or ":" in u:
        return None
    if re.search(r"\d", u) or _ABBREVIATION_END.search(u) or not (title_like(u, 8) or sentence_case_title(u, 6)):
        return None  # "Exchange Act of 1934", "Hospira, Inc.": a reference or a name, not a clause title
    body = rest[1:].strip()
    if not body:
        if rest.startswith(":") and not title_like(u, 8):
            return None  # "Costs and expenses follow:" above a table: a lead-in, not a title
        return _Cand(l, "line", "", "", u, series=_UNDERLINED)
    return _Cand(l, "runin", "", "", u, chars=_end_of(l, u), series=_UNDERLINED)


_UNDERLINED = ("underline", "underline", 0, "")


def _chain(cands: list[_Cand], strict: bool) -> list[list[_Cand]]:
    """Runs of the candidates of one series whose values go up in sequence: each the
    previous + 1 or + 2 (one heading missed; + 3 when ``strict`` is false). A run
    starts at 1-3 (any value up to 10 when ``strict`` is false); a value that can
    start a run after the current one starts another (a table of contents, then the
    body; the steps of one list, then another). Greedy in document order."""
    runs: list[list[_Cand]] = []
    run: list[_Cand] = []
    first_max = 3 if strict else 10
    for c in cands:
        if run and 1 <= c.value - run[-1].value <= (2 if strict else 3):
            run.append(c)
        elif c.value <= first_max and (not run or c.value <= 2):
            if run:
                runs.append(run)
            run = [c]
    if run:
        runs.append(run)
    return runs


_ANNEX_RE = re.compile(r"^(exhibit|schedule|annex|appendix|attachment|addendum)\b", re.IGNORECASE)


def _drop_false_headings(seq: list[Line]) -> None:
    """Headings (from any earlier stage) that a reader does not see as the document's
    structure go back to body text: a filing label ("EXHIBIT 10.32"), a line of a
    signature block (after "IN WITNESS WHEREOF" up to the next exhibit or schedule,
    or right above a "By:" line), and table-of-contents entries (own-line headings
    whose texts come again as headings on later pages, when a page holds three or
    more of them)."""
    heads = [l for l in seq if l.role in ("heading", "heading-runin")]
    in_signature = False
    for i, l in enumerate(seq):
        t = l.text.strip()
        if re.match(r"^in witness whereof", t, re.IGNORECASE):
            in_signature = True
            continue
        if l.role not in ("heading", "heading-runin"):
            continue
        ht = l.heading_text or t
        if _ANNEX_RE.match(ht):
            in_signature = False
            if FILING_LABEL_RE.match(ht) and (re.match(r"^ex(hibit)?[\s.\-]*\d+\.\d", ht, re.IGNORECASE)
                                              or (l.page == 0 and not any(q.page == 0 for q in seq[:i]))):
                # "EXHIBIT 10.32", or "Exhibit 8" opening the first page: the filing's label, not an
                # exhibit of the contract
                l.role = ""
            continue
        below = [q for q in seq[i + 1:i + 3] if q.role == ""]
        if in_signature or FILING_LABEL_RE.match(ht) or any(is_signature_line(q.text) for q in below[:2]):
            l.role = ""
    # table-of-contents pages: 3 or more own-line headings whose texts come again later (with the same
    # number, or one within the other, when both are numbered: a paper's "4.1.2 Commonsense Reasoning"
    # and its "5.2 Commonsense reasoning" are two sections; an amendment's "Section 4.5 [CO-BRANDED CAREER
    # CENTER]" names the body's "4. CO-BRANDED CAREER CENTER")
    later: dict[str, list[tuple[int, str]]] = {}
    for l in heads:
        if l.role in ("heading", "heading-runin"):
            later.setdefault(normalize_heading(l.heading_text), []).append((l.page, _numbering(l.heading_text)))

    def again(l: Line) -> bool:
        num = _numbering(l.heading_text)
        return any(pg > l.page and (not num or not n or n == num or n.startswith(num + ".") or num.startswith(n + "."))
                   for pg, n in later.get(normalize_heading(l.heading_text), []))

    repeated = [l for l in heads if l.role == "heading" and again(l)]
    per_page: dict[int, int] = {}
    for l in repeated:
        per_page[l.page] = per_page.get(l.page, 0) + 1
    for l in repeated:
        if per_page[l.page] >= 3:
            l.role = ""


def _numbering(text: str) -> str:
    """A heading's number without keyword and stop ("Section 4.1." -> "4.1"), or ""."""
    hn = heading_numbering(re.sub(r"^(?:article|section|clause|part)\s+", "", text or "", flags=re.I))
    return hn[0].rstrip(".").lower() if hn else ""


_LIST_RUN = 6


def _drop_lists_of_titles(seq: list[Line]) -> int:
    """Numbered lines this pass took for headings that stand one after another with no
    text between them, six or more in a row ("4.3.1. Process Package", "4.3.2. Find
    Package", ...), are a list of contents or features, not the document's sections:
    they go back to body text. Returns the number of lines returned to text."""
    dropped = 0
    run: list[Line] = []
    for l in seq + [None]:
        if l is not None and l.role == "merged":
            continue
        if l is not None and l.role == "heading":
            run.append(l)
            continue
        if len(run) >= _LIST_RUN:
            for h in run:
                if h.heading_source == "clause":
                    h.role = ""
                    dropped += 1
        run = []
    return dropped


def _fills_styled_gap(cands: list[_Cand], existing: list[Line], order_of: dict[int, int],
                      styled_only: bool = True) -> list[_Cand]:
    """The candidates of a plain top-level series (``"2."``, ``"3."``) whose numbers the
    style-detected numbered headings skip, each standing after heading ``n - 1`` and before
    the next styled heading (``n + 1`` or later): headings the style test missed because
    their number is set in the body weight, not a list inside a section. With
    ``styled_only`` false, numbered top-level headings found by any earlier stage count
    (cuad-001: own-line "8. TERM AND TERMINATION." and "12. GENERAL PROVISIONS." found,
    the run-in "9. INDEMNITY. Each party ...", "10." and "11." between them not)."""
    styled: list[tuple[int, int]] = []  # (order, number) of styled top-level numbered headings
    for l in existing:
        m = re.match(r"^(\d{1,3})\.?(?:\s|$)", l.heading_text or "")
        if (l.heading_source == "numbering" or not styled_only) and m:
            styled.append((order_of[id(l)], int(m.group(1))))
    styled.sort()
    out: list[_Cand] = []
    grew = True
    while grew:  # "2." fills the gap after "1.", then "3." the one after it
        grew = False
        numbers = {v for _, v in styled}
        for c in cands:
            if c in out or c.value in numbers or c.kind not in ("runin", "line"):
                continue
            o = order_of[id(c.line)]
            before = [v for k, v in styled if k < o]
            after = [v for k, v in styled if k > o]
            if after and ((before and before[-1] == c.value - 1 and after[0] > c.value)
                          or (not before and c.value == 1 and after[0] == 2)):  # "1. Term. ..." before "2."
                out.append(c)
                styled = sorted(styled + [(o, c.value)])
                grew = True
    return out


def _spread(kept: list[_Cand], order_of: dict[int, int], min_gap: int, min_pages: int) -> bool:
    """Whether the headings of a run are spread like sections: the (lower) median number of
    lines between consecutive members is at least ``min_gap`` and they cover at least
    ``min_pages`` pages (a list keeps its items together)."""
    if len(kept) < 2:
        return True
    gaps = sorted(order_of[id(b.line)] - order_of[id(a.line)] for a, b in zip(kept, kept[1:]))
    return gaps[(len(gaps) - 1) // 2] >= min_gap and len({c.line.page for c in kept}) >= min_pages


def _nested_series(accepted: list[_Cand], existing: list[Line], order_of: dict[int, int]) -> set[tuple]:
    """Series of single-part numbers that start again under another heading ("II.
    Affiliate Program", then "§ 1, § 2", "III. ...", then "§ 1" again): their headings
    sit one level lower."""
    top = [c for c in accepted if c.series[1] in ("arabic", "roman", "word") and c.series[2] == 1]
    by_series: dict[tuple, list[_Cand]] = {}
    for c in top:
        by_series.setdefault(c.series, []).append(c)
    out: set[tuple] = set()
    for s, cs in by_series.items():
        others = sorted([order_of[id(l)] for l in existing]
                        + [order_of[id(c.line)] for c in accepted if c.series != s and c.series[2] == 1])
        for a, b in zip(cs, cs[1:]):
            lo, hi = order_of[id(a.line)], order_of[id(b.line)]
            if b.value <= a.value and any(lo < o < hi for o in others):
                out.add(s)
                break
    return out


def _title_of(c: _Cand) -> str:
    """A candidate's title without its numbering ("(a) FOX ASSIGNMENT" -> "FOX ASSIGNMENT")."""
    return (c.text[len(c.num):] if c.text.startswith(c.num) else c.text).strip()


def _under_their_clause(groups: dict[tuple, list[_Cand]], accepted: list[_Cand], existing: list[Line],
                        order_of: dict[int, int]) -> list[_Cand]:
    """Titled sub-clauses the sequence test left out because their siblings carry no
    title ("6.3 Long Lead Items" after untitled 6.1 and 6.2, "13.3.4 Maintain Credit
    Line. ..."): each is kept when the nearest top-level numbered heading before it
    carries its first number ("6." before "6.3"), so it sits inside the clause it
    numbers, and its title is in title case (:func:`title_like`)."""
    tops: list[tuple[int, str]] = [(order_of[id(c.line)], c.num.rstrip(".")) for c in accepted
                                   if c.series[1] == "arabic" and c.series[2] == 1]
    for l in existing:
        m = re.match(r"^(?:(?:article|section)\s+)?(\d{1,3})(?:\.|\s|$)(?!\d)", l.heading_text or "", re.I)
        if m:
            tops.append((order_of[id(l)], m.group(1)))
    tops.sort()
    out: list[_Cand] = []
    for key, cs in groups.items():
        if key[0] or key[1] != "arabic" or key[2] < 2:
            continue
        for c in cs:
            if c in accepted:
                continue
            before = [n for o, n in tops if o < order_of[id(c.line)]]
            if before and before[-1] == c.num.split(".")[0] and title_like(_title_of(c), 8):
                out.append(c)  # (in title case: alone, a sentence-case line may be a sentence's start)
    return out


def _in_signature_block(l: Line, t: str, before: bool) -> bool:
    """Whether line ``l`` (text ``t``) sits in a signature block, given whether the line before it
    did: a block opens at "IN WITNESS WHEREOF" and closes at a heading or an exhibit's label."""
    if l.role != "":
        return False
    if re.match(r"^in witness whereof", t, re.IGNORECASE):
        return True
    return before and not _ANNEX_RE.match(t)


def detect_clause_headings(pages: list[PageInfo], body: float) -> int:
    """Mark headings from numbering in body-style lines (see the module docstring).

    Runs after the style-based :func:`~.headings.detect_headings`; the headings it
    marked set the numbering context and stay, except filing labels, headings in
    signature blocks and table-of-contents entries, which go back to text (before and
    after this pass). Sets ``role`` (``"heading"`` or
    ``"heading-runin"``), ``heading_text``, ``heading_level`` and ``heading_source =
    "clause"`` on the lines it accepts; a title line merged into a keyword or label
    heading gets ``role = "merged"``.

    Args:
        pages: Page records after :func:`~.headings.detect_headings`.
        body: Body font size (points).

    Returns:
        The number of headings marked.
    """
    seq: list[Line] = []
    for p in pages:
        seq.extend(l for l in _ordered(p.lines) if l.role in ("", "heading", "heading-runin"))
    _drop_false_headings(seq)
    rights: dict[tuple[int, int], float] = {}
    for p in pages:
        for l in p.lines:
            if l.role == "" and l.nchars >= 30:
                k = (l.page, l.col)
                rights[k] = max(rights.get(k, 0.0), l.x1)
    page_right = {pno: max((l.x1 for l in p.lines if l.role == ""), default=p.width) for pno, p in enumerate(pages)}
    cands: list[_Cand] = []
    in_signature = False
    consumed: set[int] = set()
    on_page: dict[int, list[Line]] = {}
    for l in seq:
        on_page.setdefault(l.page, []).append(l)
    for i, l in enumerate(seq):
        if id(l) in consumed:
            continue
        t = l.text.strip()
        in_signature = _in_signature_block(l, t, in_signature)
        if l.role != "":
            continue
        if in_signature or (l.size > 0 and l.size < 0.9 * body):
            continue  # signature blocks; footnotes and small print
        prv = seq[i - 1] if i else None
        nxt = seq[i + 1] if i + 1 < len(seq) else None
        size = l.size or body
        prv_right = rights.get((prv.page, prv.col), page_right.get(prv.page, 0.0)) if prv is not None else 0.0
        if prv is None or prv.role in ("heading", "heading-runin"):
            starts = True
        elif prv.x1 < prv_right - 0.15 * max(1.0, prv_right - prv.x0) and prv.nchars >= 2:
            starts = True  # the line above ends well before the margin: a deliberate break
        elif prv.page != l.page or prv.col != l.col:
            # not a sentence running over the break; an exhibit's label opening its page starts one
            # ("Exhibit B" after the signature lines or a page that holds only "Exhibit A")
            starts = bool(SENTENCE_END_RE.search(prv.text.strip())) or (
                prv.page != l.page and bool(_ANNEX_KW_RE.match(t)) and not FILING_LABEL_RE.match(t))
        else:
            # (a bare label hanging left of the line above, "18." before an address block's last line, starts one)
            starts = l.y0 - prv.y1 > 0.45 * size or bool(SENTENCE_END_RE.search(prv.text.strip())) \
                or l.x0 > prv.x0 + 1.5 * size or (l.x1 < prv.x0 and bool(_LABEL_RE.match(t)))
        if not starts:
            continue
        same_row_next = nxt is not None and nxt.page == l.page and abs(nxt.yc - l.yc) < 0.5 * size and nxt.x0 > l.x1
        # (a bare "EXHIBIT A" / "ARTICLE IV" often stands a blank line above its title)
        bare = any((m := rx.match(clean_text(t))) and not m.group("rest").strip() for rx in (_ANNEX_KW_RE, _KEYWORD_RE))
        below_next = nxt is not None and nxt.page == l.page and nxt.col == l.col \
            and 0 <= nxt.y0 - l.y1 < (3.0 if bare else 1.6) * size
        right = rights.get((l.page, l.col), page_right.get(l.page, l.x1))
        if not same_row_next and _LABEL_RE.match(t):
            # a hanging label ("11.") whose text line was given another column
            row = [q for q in on_page.get(l.page, ()) if q.role == "" and q.x0 > l.x1
                   and abs(q.yc - l.yc) < 0.5 * size and id(q) not in consumed]
            if row:
                nxt, same_row_next = min(row, key=lambda q: q.x0), True
        c = _candidate(l, nxt if (same_row_next or below_next) else None, right)
        if c is None and l.underline_prefix and not any(
                q.page == l.page and q.x1 < l.x0 and abs(q.yc - l.yc) < 0.5 * size and _LABEL_RE.match(q.text.strip())
                for q in seq[max(0, i - 80):i + 80]):
            c = _underlined_candidate(l)  # (a hanging label beside it numbers it: the label's turn)
        if c is None:
            continue
        if c.title_line is not None:
            consumed.add(id(c.title_line))
        if c.label_line is not None:
            consumed.add(id(c.line))
        cands.append(c)
    if not cands:
        return 0
    # numbering context: existing headings and candidates in document order
    existing = [l for l in seq if l.role in ("heading", "heading-runin")]
    for c in cands:
        if c.series == _UNDERLINED:
            continue
        if c.keyword == "annex":
            c.series = ("annex", "annex", 1, "")
            continue
        v = _value(c.num)
        if v is None:
            c.series = ("none",)
            continue
        (shape, depth, parent), value = v
        c.value = value
        c.series = (c.keyword, shape, depth, parent)
    # parent numbers of lettered series: the nearest preceding numbered heading
    order_of = {id(l): k for k, l in enumerate(seq)}
    numbered_top: list[tuple[int, str]] = []
    for c in cands:
        if c.series and c.series[0] != "none" and c.series[1] in ("arabic", "roman"):
            numbered_top.append((order_of[id(c.line)], c.num.rstrip(".")))
    for l in existing:
        m = re.match(r"^(?:(?:article|section)\s+)?(\d{1,3}(?:\.\d{1,3})*|" + _ROMAN + r")\b", l.heading_text, re.I)
        if m and m.group(1):
            numbered_top.append((order_of[id(l)], m.group(1)))
    numbered_top.sort()
    for c in cands:
        if c.series[0] == "none":
            continue
        if c.series[1] in ("letter", "paren-roman", "paren-arabic"):
            k = order_of[id(c.line)]
            prior = [n for o, n in numbered_top if o < k]
            c.series = c.series[:3] + (prior[-1] if prior else "",)
    groups: dict[tuple, list[_Cand]] = {}
    for c in cands:
        if c.series[0] != "none":
            groups.setdefault(c.series, []).append(c)
    styled_numbered = sum(1 for l in existing if l.heading_source == "numbering")
    accepted: list[_Cand] = []
    for key, cs in groups.items():
        kw, shape, depth = key[0], key[1], key[2]
        if key == _UNDERLINED:
            # unnumbered underlined titles: a series of two or more, spread like sections
            if len(cs) >= 2 and _spread(cs, order_of, min_gap=2, min_pages=1):
                accepted.extend(cs)
            continue
        if kw == "annex":
            # exhibits and schedules, lettered or numbered in any order; three or more on
            # consecutive lines are a list of the exhibits, not their headings
            # (and an exhibit named again, at the top of its next page, is not a new one)
            idx = [order_of[id(c.line)] for c in cs]
            seen: set[str] = set()
            for j, c in enumerate(cs):
                close = [k for k in range(max(0, j - 2), min(len(cs), j + 3))
                         if abs(idx[k] - idx[j]) <= 2 * abs(k - j) + 1 and cs[k].line.page == c.line.page]
                name = " ".join(c.text.split()[:2]).lower()
                if len(close) < 3 and name not in seen:
                    accepted.append(c)
                seen.add(name)
            continue
        for kept in _chain(cs, strict=not kw):
            if kw:
                need = 1  # "ARTICLE", "Section", "§" standing alone: strong enough
            elif shape in ("arabic", "roman", "word") and depth == 1:
                if styled_numbered >= 5:
                    # the sections are styled (a paper): a plain numbered series is a list, except
                    # a number the styled headings skip, standing between its two neighbours
                    # (cuad-015: "2. ENDORSEMENT ..." with its number in the body weight)
                    accepted.extend(_fills_styled_gap(kept, existing, order_of))
                    continue
                runin = sum(c.kind == "runin" for c in kept) >= 0.5 * len(kept)  # they carry their own text
                # three numbers make a series; two do when both open a paragraph with a title in title case
                # (a one-page amendment's "1. Amendment to Exhibit A. ..." and "2. Miscellaneous. ...")
                titled = all(c.kind == "runin" and title_like(_title_of(c), 9) for c in kept)
                need = 2 if titled else 3
                # three or more titled run-ins make the sections also on one page of a longer document (a
                # two-page form's "1. Resale Rights. ..." to "4. Counterparts. ..." after its signature page)
                one_page = titled and len(kept) >= 3
                if not _spread(kept, order_of, min_gap=2 if runin else 4,
                               min_pages=1 if one_page else min(2, len(pages))):
                    continue  # a numbered list, not the document's sections
            elif shape in ("letter", "paren-roman", "paren-arabic"):
                # titles in capitals ("(a) FOX ASSIGNMENT OF AGREEMENT: Pursuant to ...") head sub-clauses
                # also where the clauses are styled; a paper's lettered lists are not set so
                capitals = all(_title_of(c).isupper() for c in kept)
                if (styled_numbered >= 5 and not capitals) or sum(c.kind == "runin" for c in kept) < 0.5 * len(kept) \
                        or not _spread(kept, order_of, 2, 1):
                    # items of a list (most carry no text of their own), or a list in a document
                    # whose sections are styled (a paper)
                    continue
                need = 1 if kept[0].value <= 2 else 2
            else:
                need = 1 if kept[0].value <= 2 else 2
            if len(kept) >= need:
                accepted.extend(kept)
        if not kw and shape in ("arabic", "roman", "word") and depth == 1:
            # the numbers the document's other top-level headings skip, each between its neighbours (a run
            # that does not start at 1-3 because its first members were found by another stage)
            accepted.extend(_fills_styled_gap([c for c in cs if c not in accepted], existing, order_of,
                                              styled_only=styled_numbered >= 5))
    accepted.extend(_under_their_clause(groups, accepted, existing, order_of))
    if not accepted:
        return 0
    nested = _nested_series(accepted, existing, order_of)
    has_article = any(c.keyword == "article" for c in accepted) or any(
        re.match(r"^article\b", l.heading_text, re.I) for l in existing)
    accepted.sort(key=lambda c: order_of[id(c.line)])
    ctx_level = 1
    seen_heading = False
    by_order = sorted([(order_of[id(c.line)], "c", c) for c in accepted]
                      + [(order_of[id(l)], "e", l) for l in existing], key=lambda x: x[0])
    for _, kind, obj in by_order:
        if kind == "e":
            ctx_level = obj.heading_level or ctx_level
            seen_heading = True
            continue
        c = obj
        shape, depth = c.series[1], c.series[2]
        if shape == "underline":
            lv = ctx_level + 1 if seen_heading else 1  # below the clause it sits in
        elif c.keyword in ("article", "part", "annex"):
            lv = 1
        elif shape in ("arabic", "roman", "word"):
            lv = depth + (1 if (has_article or c.series in nested) and depth == 1 else 0)
        elif shape == "letter" or shape == "paren-arabic":
            lv = ctx_level + 1
        else:  # (i), (ii)
            lv = ctx_level + 2
        c.level = min(6, max(1, lv))
        if shape in ("arabic", "roman", "word") or c.keyword:
            ctx_level = c.level
            seen_heading = True
        l = c.line
        l.role = "heading-runin" if c.kind == "runin" else "heading"
        l.heading_text = c.text
        l.heading_level = c.level
        l.heading_source = "clause"
        l.heading_chars = c.chars
        if c.title_line is not None:
            c.title_line.role = "merged"
            l.x1 = max(l.x1, c.title_line.x1)
            l.y1 = max(l.y1, c.title_line.y1)
        if c.label_line is not None:
            c.label_line.role = "merged"
    if has_article:
        for l in existing:
            if re.match(r"^article\b", l.heading_text, re.I):
                l.heading_level = 1
    _drop_false_headings(seq)
    _drop_lists_of_titles(seq)
    return sum(1 for c in accepted if c.line.role in ("heading", "heading-runin"))


# one to four words in capitals, a colon at most after them ("RECITALS", "WITNESSETH:", "TERMS AND CONDITIONS")
_CAPS_WORDS = re.compile(r"^[A-Z][A-Z'\u2019&\-]+(?:\s+[A-Z][A-Z'\u2019&\-]*){0,3}:?$")
# words that join party names on a cover page ("AND", "BETWEEN", "BY AND AMONG"): no heading alone
_JOINING_WORDS = {"AND", "BETWEEN", "AMONG", "BY", "OF", "THE", "TO", "FOR", "WITH", "OR", "AS", "IN"}


def detect_centred_caps_headings(pages: list[PageInfo], body: float) -> int:
    """Mark unnumbered headings set in capitals and centred alone on their line in the body's
    font: ``"RECITALS"`` between the preamble and the clauses of a one-page amendment, whose
    size and weight are the body's (so :mod:`.headings` does not see them).

    A line is taken when it holds one to four words in capitals, four letters or more (not only
    joining words such as "AND", "BETWEEN", and not ending on one), stands alone on its row (no
    column header of a table), is centred between the margins of the page's body text (or on the
    page) and indented from the left one, follows a blank line or the end of a paragraph, is not
    larger than 1.2 x ``body`` (the style pass's turn), comes after a line of running text in lower
    case (not on a cover page among the parties' names) and before another, and
    is not in a signature block. It becomes a level-1 heading (``heading_source = "clause"``).

    Args:
        pages: Page records after :func:`detect_clause_headings`.
        body: Body font size (points).

    Returns:
        The number of headings marked.
    """
    marked = 0
    seen_body = in_signature = False
    for p in pages:
        text_lines = [l for l in p.lines if l.role == "" and l.nchars >= 30]
        if not text_lines:
            continue
        left = min(l.x0 for l in text_lines)
        right = max(l.x1 for l in text_lines)
        width = max(1.0, right - left)
        lines = _ordered([l for l in p.lines if l.role in ("", "heading", "heading-runin")])
        for i, l in enumerate(lines):
            t = clean_text(l.text).strip()
            in_signature = _in_signature_block(l, t, in_signature)
            if l.role != "":
                continue
            prv = lines[i - 1] if i else None
            nxt = lines[i + 1] if i + 1 < len(lines) else None
            letters = [ch for ch in t if ch.isalpha()]
            if l.nchars >= 30 and sum(ch.islower() for ch in letters) > 0.5 * len(letters):
                seen_body = True  # a line of running text (a party's name on a cover page is in capitals)
            size = l.size or body
            words = t.rstrip(":").split()
            if sum(ch.isalpha() for ch in t) < 4:
                continue  # "UK" under an address: a place, not a heading
            if not seen_body or in_signature or not _CAPS_WORDS.match(t) or size > 1.2 * body \
                    or set(words) <= _JOINING_WORDS or words[-1] in _JOINING_WORDS or is_signature_line(t) \
                    or _KEYWORD_RE.match(t) or _ANNEX_KW_RE.match(t):
                continue  # ("SIGNATURE PAGE TO" goes on below; "ARTICLE II" is the numbered pass's, kept or not)
            if any(q is not l and q.text.strip() and abs(q.yc - l.yc) < 0.5 * size for q in p.lines):
                continue  # a table's column headers ("LICENSED PROGRAMS:", "PROGRAM MATERIALS:") share their row
            mid = 0.5 * (l.x0 + l.x1)  # centred on the text's column, or on the page (ragged right text)
            centred = min(abs(mid - 0.5 * (left + right)), abs(mid - 0.5 * p.width)) < 0.08 * width \
                and l.x0 > left + 0.2 * width
            # a blank line above it, or the paragraph above ends there (a document set without blank lines)
            apart = prv is None or l.y0 - prv.y1 > 0.6 * size or bool(SENTENCE_END_RE.search(prv.text.strip()))
            if centred and apart and nxt is not None and nxt.role == "" and nxt.nchars >= 30:
                l.role = "heading"
                l.heading_text = t.rstrip(":")
                l.heading_level = 1
                l.heading_source = "clause"
                marked += 1
    return marked
