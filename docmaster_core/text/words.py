"""Text helpers shared by every stage: whitespace, word counts and sentence splitting
(used by tree summaries, the LLM backends, evidence scoring and answers)."""
from __future__ import annotations

import re

__all__ = ["normalize_ws", "count_words", "truncate_words", "split_sentences", "is_whole_sentence", "answer_sentences",
           "is_prose", "is_cut_prose", "is_toc_entry", "dot_leader_share", "is_empty_label", "ends_its_paragraph", "shingles", "SHINGLE", "letters_key"]

_WS = re.compile(r"\s+")
_ALNUM = re.compile(r"[a-z0-9]+")
#: Words per shingle (:func:`shingles`).
SHINGLE = 4
# Abbreviations after which a period does not end a sentence.
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|vs|cf|Fig|Figs|Eq|Eqs|Eqn|Eqns|Sec|Secs|Sect|Sects|Ch|Chap|Thm|Lem|Prop|Alg|Ref|Refs|"
    r"Tab|No|Nos|Dr|Mr|Mrs|Ms|Prof|approx|resp|incl|al|"
    r"St|Ste|Ave|Blvd|Rd|Jr|Sr|Art|Vol|pp)\.|\b[A-Z]\.)$"
)
_SPLIT = re.compile(r"([.!?][\"')\]]?)\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")


_NOT_LETTER = re.compile(r"[\W\d_]+")


def letters_key(text: str | None) -> str:
    """The text as compared when only its words matter: lower case, letters only (any
    script), single spaces ("Page 3 of 10" -> ``"page of"``; a title and the preamble that
    repeats it in other quotes, hyphens and line breaks share their key)."""
    return _NOT_LETTER.sub(" ", (text or "").lower()).strip()


def normalize_ws(text: str | None) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text or "").strip()


def count_words(text: str | None) -> int:
    """Number of whitespace-separated words."""
    return len((text or "").split())


def truncate_words(text: str | None, max_words: int) -> str:
    """The first ``max_words`` words of ``text`` (whitespace normalised).

    Raises:
        ValueError: when ``max_words`` < 1.
    """
    if max_words < 1:
        raise ValueError("max_words must be >= 1")
    words = (text or "").split()
    return " ".join(words[:max_words])


def split_sentences(text: str | None, max_words: int = 60) -> list[str]:
    """Split text into sentences for extractive summaries and evidence scoring.

    Splits after ``.``, ``!`` or ``?`` followed by a capital letter, digit or
    opening bracket, and at blank lines; does not split after common abbreviations
    ("e.g.", "et al.", "Fig.", single initials, an address's "St." / "Ave." / "Blvd."). Pieces longer than ``max_words`` words
    (tables, run-on extraction) are cut into windows of ``max_words`` words.

    Returns:
        Non-empty, whitespace-normalised sentences in reading order.
    """
    raw = (text or "").strip()
    if not raw:
        return []
    pieces: list[str] = []
    start = 0
    for m in _SPLIT.finditer(raw):
        if m.group(1) is None:  # blank line
            pieces.append(raw[start : m.start()])
            start = m.end()
            continue
        sent = raw[start : m.end(1)]
        if m.group(1).startswith(".") and _ABBREV.search(sent[-16:].rstrip("\"')]")):
            continue
        pieces.append(sent)
        start = m.end()
    pieces.append(raw[start:])
    out: list[str] = []
    for p in pieces:
        s = normalize_ws(p)
        if not s:
            continue
        words = s.split()
        if len(words) <= max_words:
            out.append(s)
        else:
            out.extend(" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words))
    return out


_ENUM = re.compile(r"^(?:\(?(?:[a-z]|[ivxlc]{1,5}|\d{1,3}(?:\.\d{1,3})*)[.)]|§\s*\d+[.\d]*)\s+", re.I)
_ITEM = re.compile(r"^\((?:[a-z]|[ivxlc]{1,5})\)\s", re.I)
_LAST_ITEM = re.compile(r"^(?:and|or)\s+(?=\((?:[a-z]|[ivxlc]{1,5})\)\s|\d{1,3}(?:\.\d{1,3})+\s)", re.I)
_CLAUSE = re.compile(r"(?<=[;\u037e])\s+")  # U+037E (Greek question mark) is how some PDFs write ";"
_NUMBER_END = re.compile(r"[a-z,]\s+\d{1,2}(?:\.\d{1,2})*\.$")  # "March 18." / "Sections 1.3." ending a piece


#: Bullets (and the spaces after them) that open a list item: "• Stagnation: we track ...".
_BULLETS = "\u2022\u25e6\u25aa\u25ab\u2023\u2043\u2219\u00b7\u25cf\u25cb\u25a0\u25a1\u27a2\u2013\u2014* "


#: The clause that defines a formula's symbols, written after the formula ("where T is a temperature ...").
_WHERE_DEFINES = re.compile(r"^where\s+\S{1,12}(?:\s*,\s*\S{1,12})*\s+(?:is|are|denotes?|represents?|stands? for)\b")


def is_whole_sentence(text: str | None) -> bool:
    """True when ``text`` starts like a sentence (a capital, a digit, an opening quote or
    bracket, or an enumerator such as ``(a)``, ``iv.``, ``8.05``; after a bullet; or the "where T
    is ..." that defines a formula's symbols) and ends like one
    (``.``, ``!``, ``?``, ``;`` or ``:``, closing quotes and brackets aside): not a piece cut
    out of a sentence. An item of a clause list opened by a bracketed letter or roman enumerator is whole
    whatever the case of its first word ("(ii) all offers ... have been effected ...;"), and so
    is the list's last item after its "and" / "or" ("and (b) product liability insurance ...", "or 5.3 in the
    event of a Change of Control, ...")."""
    t = normalize_ws(text).rstrip("\"'\u201d\u2019)]")
    if not t:
        return False
    # an item of a clause list, "(ii) all offers of Securities ... have been effected by the Agent;", or its
    # last item, "and (B) a member of ...", starts with its enumerator, whatever the case of the word after it
    t = _LAST_ITEM.sub("", t)
    head = _ENUM.sub("", t.lstrip(_BULLETS)).lstrip("\"'\u201c\u2018([")
    first = head[:1]
    # (a letter or roman enumerator: "(30) days before ..." is a cut sentence whose "thirty" went before it)
    item = first.isalpha() and bool(_ITEM.match(t))
    # "where T is a temperature that is normally set to 1.": the definition after a display formula
    defines = bool(_WHERE_DEFINES.match(head))
    return (first.isupper() or first.isdigit() or item or defines) and t[-1] in ".!?;:\u037e"  # U+037E: a PDF's ";"


def answer_sentences(text: str | None, long_words: int = 80, heading_words: int = 6) -> list[str]:
    """Whole sentences for quoting in an answer: :func:`split_sentences` without cutting
    long sentences into word windows; a sentence longer than ``long_words`` words is split
    only after its semicolons (the items of a clause list), never inside a clause; a short
    leading piece (at most ``heading_words`` words, e.g. a clause heading "(a) Governing
    Law.") stays with the sentence after it; a piece ending in a number after a word
    ("until March 18.", "under Sections 1.3.") joins a next piece that starts with a digit."""
    out: list[str] = []
    for s in split_sentences(text, max_words=1_000_000):
        if count_words(s) > long_words and (";" in s or "\u037e" in s):
            out.extend(p for p in _CLAUSE.split(s) if p.strip())
        else:
            out.append(s)
    merged: list[str] = []
    carry = ""
    for u in out:
        if merged and not carry and _NUMBER_END.search(merged[-1]) and u[:1].isdigit():
            merged[-1] = f"{merged[-1]} {u}"  # "until March 18. 2021, unless ...": one sentence
            continue
        u = f"{carry} {u}".strip() if carry else u
        carry = ""
        if count_words(u) <= heading_words and u is not out[-1] and not u.endswith((";", ":")):
            carry = u
            continue
        merged.append(u)
    if carry:
        merged.append(carry)
    return merged


_FUNCTION_WORDS = frozenset("the of and to in is are was were shall be for with by that this it as on or an a".split())


def is_prose(text: str | None) -> bool:
    """True when ``text`` reads as running prose (at least 6 words, three quarters of them
    alphabetic, some function words): the text that must be quoted in whole sentences.
    Table rows, form fields ("Location: ... Aircraft: ..."), formulas and bare headings
    are not prose."""
    words = normalize_ws(text).split()
    if len(words) < 6:
        return False
    alpha = sum(w.strip(".,;:()\"'").isalpha() for w in words) / len(words)
    func = sum(w.lower().strip(".,;:()\"'") in _FUNCTION_WORDS for w in words)
    return alpha >= 0.75 and func >= 2


def is_cut_prose(text: str | None) -> bool:
    """True for prose cut out of its sentence (:func:`is_prose` and not :func:`is_whole_sentence`)."""
    return is_prose(text) and not is_whole_sentence(text)


_TOC_ENTRY = re.compile(r"(?:\.\s?){4,}\s*\d{1,4}\b|\.{4,}|(?:\.\s){5,}|^\s*(?i:table of contents|contents)\b")


def is_toc_entry(text: str | None) -> bool:
    """True for a table-of-contents line: dot leaders ("16. Governing Law ........ 7"; spaced and
    cut before the page number, "2.2.1 Reinforcement Learning Algorithm . . . . . ."), or the
    table's own heading ("TABLE OF CONTENTS: PAGE CLAUSE 1. DEFINITIONS 4 2.")."""
    return bool(_TOC_ENTRY.search(text or ""))


_LEADER = re.compile(r"(?:\.\s?){4,}")


def dot_leader_share(text: str | None) -> float:
    """Share of the characters of ``text`` (spaces aside) in dot leaders (runs of four or
    more dots, spaced or not): about 0.5 and more for a table of contents ("2.1 Overview . .
    . . . 5 2.2 DeepSeek-R1-Zero . . . . 5"), near 0 for prose with a fill-in blank."""
    t = text or ""
    total = len(t) - t.count(" ")
    if total <= 0:
        return 0.0
    dots = sum(len(m.group(0)) - m.group(0).count(" ") for m in _LEADER.finditer(t))
    return dots / total


_EMPTY_LABEL = re.compile(r"^[^.!?:;]{1,40}:\s*$")


def is_empty_label(text: str | None) -> bool:
    """True for a form's label with nothing after it ("Supplier Name:", "Effective Date:"): the
    value it labels sits elsewhere (another cell), so the label alone answers nothing."""
    t = (text or "").strip()
    return bool(_EMPTY_LABEL.match(t)) and len(t.split()) <= 5


def shingles(text: str | None, n: int = SHINGLE) -> set[int]:
    """The word ``n``-grams ("shingles", Broder 1997) of ``text``, each as its hash: lower-cased
    alphanumeric tokens, so hyphenation, line breaks and punctuation do not matter. A text
    shorter than ``n`` words is one shingle of all its words; empty text gives the empty set.

    Hashes (Python's ``hash`` of the word tuple: equal within one process, not across
    processes, so never store them) make the same set comparisons as the tuples, bar a
    64-bit collision, with one tracked object a set instead of one per shingle (evidence
    of thousands of documents at scale, issue 37)."""
    w = _ALNUM.findall((text or "").lower())
    if not w:
        return set()
    if len(w) < n:
        return {hash(tuple(w))}
    return {hash(tuple(w[i:i + n])) for i in range(len(w) - n + 1)}


def ends_its_paragraph(unit: str | None, passage: str | None) -> bool:
    """True for a sentence whose source omits the full stop at the end of its paragraph:
    ``unit`` is the end of ``passage`` (whitespace normalised), starts like a sentence and
    ends in a name or a number ("... construed in accordance with the laws of Hong Kong",
    where clause 16.2 starts the next paragraph), with at least 8 words and a verb such as
    "is" or "shall" (an address block or a heading is no sentence). A piece that ends in a lower-case word
    ("... governed by the laws") may be a sentence the parser cut at a page or node break
    and does not count."""
    u, p = normalize_ws(unit), normalize_ws(passage)
    if not u or not p.endswith(u) or (len(p) > len(u) and not p[-len(u) - 1].isspace()):
        return False
    head = _ENUM.sub("", u).lstrip("\"'\u201c\u2018([")
    if not (head[:1].isupper() or head[:1].isdigit()):
        return False
    words = u.split()
    # a sentence says something: an address block or a heading ("4.1.4. Expiration Time Claim") does not
    if len(words) < 8 or not any(w.lower().strip(",;:()") in _FINITE for w in words):
        return False
    if re.search(r"[.!?:]\s+\(?\d+(?:\.\d+)*\.?\)?\s", u):  # a numbered heading run into its end
        return False
    last = words[-1].rstrip("\"'\u201d\u2019)]")
    return bool(last) and (last[:1].isupper() or last[:1].isdigit()) and last[-1:].isalnum()


_FINITE = frozenset("is are was were shall will may must can could should would has have had be been does do did".split())
