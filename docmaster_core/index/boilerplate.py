"""Boilerplate passages kept out of the collection clustering (issue 36).

Clustering every TEXT node of a collection together groups what the embeddings find
alike. Passages that say nothing about a document's subject are alike in the wrong way:
a signature line ("Its: Chief Administrative Officer"), a cover-page line ("Amendment
N° 1 Global Maintenance Agreement"), "[Signature page follows]", a running footer or a
notice printed on every document of a filing. They gather in clusters of their own, or
pull a cluster's name towards the parties' names, so a contract collection's clusters
stop being clause topics. This module says which passages to leave out, by rules that
know no document:

``short``
    fewer than ``min_words`` words (a word: two letters or more, any script; each CJK
    character counts as a word): signature blocks, party and title lines, page labels,
    exhibit lists' entries;
``repeated``
    the same text (case, digits, punctuation and spacing ignored) in ``min_docs`` or more
    documents, or ``min_repeats`` or more times in one: running headers and footers,
    redaction notices, filing stamps, a form's fixed sentences;
``front`` / ``back``
    with ``roles`` given, passages before a document's first heading (cover page, title
    block, preamble naming the parties) or under references / acknowledgements, as
    :func:`docmaster_core.tree.roles.path_role` reads the headings. Off by default;
``signature``
    with ``signature`` given, passages the parser tagged as a signature block
    (:func:`docmaster_core.parsing.pdf.clauses.mark_signature_blocks`: "IN WITNESS WHEREOF,
    the parties have executed ...", "By: ... Name: ... Title: ..."), however long.

The passages stay in their documents (tree, search, filter and the hyper-edges see them);
the collection clustering leaves them out.

Reference lists (:func:`back_matter_reasons`) are left out of what the pages show of a
per-document index too (its anchor pairs and topics,
:func:`~docmaster_core.index.builder.leave_out_back_matter`; at build time only with
``build_document_index(..., back_matter=True)``, which moves the hyper-edge links retrieval uses):
a paper's bibliography entries are each other's nearest neighbours ("[17] Matteo Hessel,
..., Dan Horgan" / "[18] Dan Horgan, John Quan, ..."), so they took the top SEC pairs
and formed a "reference list" topic. A passage is reference-list matter when

* a heading on its section path, at any level, opens back matter ("References",
  "REFERENCES", "7. References", "§9 References", "References:", "Bibliography",
  "Acknowledgements"; :func:`is_back_heading`), unless a heading below it opens an
  appendix; the outermost named heading alone (:func:`~docmaster_core.tree.roles.path_role`)
  missed "10 Conclusion > References", and the "§" numbering missed "§9 References";
* it follows a passage that *is* such a heading (the parser kept "References" as a
  paragraph) in the same section, or begins with one ("Acknowledgements We thank ...");
* it reads like a bibliography entry wherever it is (:func:`looks_like_reference`:
  "[12] Smith, J. ...", "Davidson, K. R. and Szarek, S. J. ... pp. 317-336", "Bruna J,
  Mallat S. 2013 ..."): a reference list whose heading the parser lost; or it lies between
  two such entries and has few function words (an entry split over two paragraphs).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Hashable, Sequence

import numpy as np

from ..text.words import letters_key

__all__ = ["boilerplate_reasons", "passage_key", "word_count", "REASONS", "back_matter_reasons", "is_back_heading",
           "looks_like_reference", "BACK_REASONS"]

#: Reason codes, "" for a passage that is kept.
REASONS = ("short", "repeated", "front", "back", "reference", "signature")
#: Reason codes of :func:`back_matter_reasons`: under a back-matter heading, or read as a bibliography entry.
BACK_REASONS = ("back", "reference")

_WORD = re.compile(r"[^\W\d_]{2,}")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def word_count(text: str) -> int:
    """Words of ``text``: runs of two letters or more (any script), each CJK character
    counted as one word."""
    text = text or ""
    cjk = len(_CJK.findall(text))
    return len(_WORD.findall(_CJK.sub(" ", text))) + cjk


def passage_key(text: str) -> str:
    """The text as compared for repeats: lower case, letters only, single spaces
    ("Page 3 of 10" and "Page 4 of 10" share the key ``page of``;
    :func:`~docmaster_core.text.words.letters_key`)."""
    return letters_key(text)


def boilerplate_reasons(texts: Sequence[str], groups: Sequence[Hashable], *, min_words: int = 8,
                        min_docs: int = 2, min_repeats: int = 3,
                        roles: Sequence[str] | None = None, signature: Sequence[bool] | None = None) -> np.ndarray:
    """Why each passage is boilerplate, or ``""`` when it is kept.

    Args:
        texts: The passages, length n.
        groups: The document of each passage (any hashable ids), length n.
        min_words: A passage of fewer words is ``short`` (0 turns the rule off).
        min_docs: A text found in this many documents or more is ``repeated`` (0: off).
            With fewer documents than ``min_docs`` in all, the rule is off.
        min_repeats: A text found this many times or more in one document is
            ``repeated`` (0: off).
        roles: Optional role of each passage's section (``"front"``, ``"back"``, ...);
            front and back matter are left out when given (``"reference"``, a passage
            :func:`back_matter_reasons` reads as a bibliography entry, too).
        signature: Optional flag of each passage: the parser tagged it as part of a
            signature block; such passages are left out when given.

    Returns:
        An object array of n reason strings (first rule that applies, in the order
        short, repeated, front, back, signature).

    Raises:
        ValueError: ``groups``, ``roles`` or ``signature`` differ in length from ``texts``.
    """
    n = len(texts)
    if len(groups) != n:
        raise ValueError(f"{len(groups)} document ids for {n} passages")
    if roles is not None and len(roles) != n:
        raise ValueError(f"{len(roles)} roles for {n} passages")
    if signature is not None and len(signature) != n:
        raise ValueError(f"{len(signature)} signature flags for {n} passages")
    out = np.full(n, "", dtype=object)
    keys = [passage_key(t) for t in texts]
    docs_of: dict[str, set] = defaultdict(set)
    per_doc: Counter = Counter()
    for k, g in zip(keys, groups):
        if k:
            docs_of[k].add(g)
            per_doc[(k, g)] += 1
    n_docs = len(set(groups))
    for i, (t, k, g) in enumerate(zip(texts, keys, groups)):
        if min_words > 0 and word_count(t) < min_words:
            out[i] = "short"
        elif k and ((min_docs > 0 and n_docs >= min_docs and len(docs_of[k]) >= min_docs)
                    or (min_repeats > 0 and per_doc[(k, g)] >= min_repeats)):
            out[i] = "repeated"
        elif roles is not None and roles[i] in ("front", "back", "reference"):
            out[i] = roles[i]
        elif signature is not None and signature[i]:
            out[i] = "signature"
    return out


# ------------------------------------------------------------------ reference lists

#: A heading that opens a reference list, after its numbering ("7.", "§9", "IX.", "A.") is stripped.
_REFERENCE_HEADING = re.compile(
    r"^(?:[ivxlc]+[.)]?\s+|[a-z][.)]\s+)?(?:(?:normative|informative|selected|cited|additional|further)\s+)?"
    r"(?:references|bibliography|works\s+cited|literature\s+cited|cited\s+literature|reference\s+list)\b"
    r"|^(?:[ivxlc]+[.)]?\s+|[a-z][.)]\s+)?reference\s*[:.]?\s*$", re.IGNORECASE)
#: Acknowledgements: back matter of a document with a reference list (a paper's thanks); a
#: contract's "23. Acknowledgments" clause (what a party acknowledges) is kept.
_ACK_HEADING = re.compile(r"^(?:[ivxlc]+[.)]?\s+|[a-z][.)]\s+)?acknowle?d?ge?ments?\b", re.IGNORECASE)
_APPENDIX_HEADING = re.compile(r"^(?:[a-z][.)]?\s+)?(?:appendix|appendices|supplementary|supplemental)\b",
                               re.IGNORECASE)
_LEADING_NUMBERING = re.compile(r"^[\W\d_]+")
#: A paragraph that starts with the heading run in ("References [1] ...", "Acknowledgements We thank").
_RUN_IN_REFERENCES = re.compile(r"^\W*(?:\d+[.)]?\s*)?(?i:references|bibliography)(?:\s*$|:|\.?\s+[A-Z\[(\d])")
_RUN_IN_ACK = re.compile(r"^\W*(?:\d+[.)]?\s*)?(?i:acknowle?d?ge?ments?)(?:\s*$|[:.]?\s+[A-Z])")

_YEAR = re.compile(r"(?<![\d.])(?:1[89]\d\d|20\d\d)[a-z]?(?!\d)")
_NAME = r"[A-Z][a-z][\w'’\-]+"
_SURNAME = r"[A-Z][\w'’\-]+"
#: How a bibliography entry starts.
_ENTRY_START = re.compile(
    r"^\s*(?:\[\d{1,4}\]\s*[A-Z]"                                              # [12] Smith
    r"|\[[A-Za-z][\w.\-]{1,40}\]\s+[A-Z]"                                      # [RFC2119] Bradner
    r"|\d{1,3}[.)]?\s+" + _SURNAME + r",\s*(?:[A-Z]\.|[A-Z][a-z])"             # 12. Smith, J. / 12 Smith, John
    r"|" + _SURNAME + r"(?:\s" + _SURNAME + r")?,\s+(?:[A-Z]\.\s?-?){1,3}[,\s]"  # Smith, J. R., / Van Dyke, J.
    r"|" + _NAME + r"\s[A-Z]{1,3}(?:,\s" + _NAME + r"\s[A-Z]{1,3})+[,.]"       # Bruna J, Mallat S.
    r"|" + _NAME + r"\s[A-Z]{1,3}\.?\s+\(?(?:1[89]|20)\d\d"                    # Lowe DG. 2004
    r"|(?:" + _NAME + r"\s){1,3}" + _NAME + r",\s(?:" + _NAME + r"\s){1,3}" + _NAME + r",)")  # Dan Horgan, John Quan,
#: Marks of a publication record: venue, pages, volume, identifiers.
_PUBLICATION = re.compile(
    r"(?:\bIn\s+Proceedings\b|\bProceedings\s+of\b|\bProc\.\s|\barXiv\s+preprint\b|\barXiv:\s?\d|\bCoRR\b|\babs/\d|"
    r"\bpp\.\s*\d|\bpages\s+\d+\s*[-–—]+\s*\d+|\b[Vv]ol\.\s*\d|\bdoi:|\bdoi\.org/|\bDOI\s+10\.|\bJournal\s+of\b|"
    r"\bTransactions\s+on\b|\bURL\s+http|\bTechnical\s+report\b|\bPh\.?\s?D\.?\s+thesis\b|\bIn\s+Advances\s+in\b|"
    r"\bUniversity\s+Press\b|\bRFC\s\d{3,5}\b)")
_VENUE = re.compile(r"\b(?:Conference|Workshop|Symposium|Springer|Elsevier|ACM|IEEE|NeurIPS|NIPS|ICML|ICLR|CVPR|"
                    r"ECCV|ICCV|AAAI|IJCAI|SIGIR|KDD|EMNLP|NAACL|ACL|COLING|Press)\b|https?://")
#: A citation in running text, "(Peters et al., 2018a; Radford et al., 2018)": its years are no entry's.
_INLINE_CITATION = re.compile(r"\([A-Z][^()]*?(?:1[89]|20)\d\d[a-z]?[^()]*\)")
_WORDS = re.compile(r"[^\W\d_]+")
#: English function words: prose has many (four in ten words), a bibliography entry few.
_FUNCTION_WORDS = frozenset(
    "a about above after again all also an and any are as at be been before being between both but by can could did do "
    "does each few for from further had has have having he her here him his how i if in into is it its itself may "
    "might more most must no nor not now of off on once only or other our out over own same shall she should so some "
    "such than that the their them then there these they this those through to too under until up upon very was we "
    "were what when where which while who whom why will with would you your".split())


def _heading(h: str | None) -> str:
    """The heading without its numbering or section sign, or "" when it is too long to be one."""
    h = _LEADING_NUMBERING.sub("", (h or "").strip())
    return h if len(h.split()) <= 6 else ""


def is_back_heading(heading: str | None, acknowledgements: bool = True) -> bool:
    """True when ``heading`` opens back matter: references, bibliography, works cited (and
    acknowledgements with ``acknowledgements``), with any numbering or section sign before
    it ("7. REFERENCES", "§9 References", "References:"); not "Referenced documents" or
    "Literature review"."""
    h = _heading(heading)
    return bool(h) and bool(_REFERENCE_HEADING.match(h) or (acknowledgements and _ACK_HEADING.match(h)))


def _function_share(words: list[str]) -> float:
    return sum(w.lower() in _FUNCTION_WORDS for w in words) / max(len(words), 1)


def looks_like_reference(text: str | None) -> bool:
    """True when ``text`` reads like one or more bibliography entries: it starts as an
    entry does ("[12] Smith", "Smith, J. R.,", "Bruna J, Mallat S.", "Dan Horgan, John
    Quan,") and holds a year or a publication mark, or it is dense in years and
    publication marks ("In Proceedings of", "pp. 3-9", "arXiv preprint", "doi:"); prose
    with citations ("as Devlin et al. (2019) show ...") has too many function words.
    Contracts, reports and manuals have no such passages, so the rule knows no document kind."""
    t = text or ""
    words = _WORDS.findall(t)
    if len(words) < 3 or _function_share(words) > 0.4:
        return False
    if _ENTRY_START.match(t) and (_YEAR.search(t) or _PUBLICATION.search(t) or _VENUE.search(t)):
        return True
    t = _INLINE_CITATION.sub(" ", t)
    years, pubs = len(_YEAR.findall(t)), len(_PUBLICATION.findall(t))
    return bool(years and pubs and (years + pubs + len(_VENUE.findall(t))) * 10 >= len(words))


def _under_heading(path: Sequence[str], match) -> bool:
    """A heading ``match`` accepts on the path, at any level, and no appendix heading below it."""
    hit = False
    for h in path or ():
        if match(h):
            hit = True
        elif hit and _APPENDIX_HEADING.match(_heading(h)):
            hit = False
    return hit


def back_matter_reasons(texts: Sequence[str], section_paths: Sequence[Sequence[str]], *,
                        max_share: float = 0.9) -> np.ndarray:
    """Which passages of ONE document are its reference list (and, when it has one, its
    acknowledgements).

    Args:
        texts: The document's passages (TEXT nodes) in reading order, length n.
        section_paths: The headings above each passage, outermost first, length n.
        max_share: When the rules would leave out more than this share of the passages,
            none is left out for a heading (the document is a bibliography, or its
            headings were misread); passages read as entries still are, unless they
            too are more than this share.

    Returns:
        An object array of n strings: ``"back"`` (under a reference-list heading, after a
        paragraph that is one, or starting with one; acknowledgements alike when the
        document has a reference list), ``"reference"`` (reads as a bibliography entry,
        :func:`looks_like_reference`), ``""`` (kept).

    Raises:
        ValueError: ``section_paths`` differs in length from ``texts``.
    """
    n = len(texts)
    if len(section_paths) != n:
        raise ValueError(f"{len(section_paths)} section paths for {n} passages")
    out = np.full(n, "", dtype=object)
    if n == 0:
        return out

    def flags(heading, run_in) -> np.ndarray:
        got = np.zeros(n, dtype=bool)
        opened: tuple | None = None  # the section in which a paragraph read "References"
        for i, (t, path) in enumerate(zip(texts, section_paths)):
            key = tuple(path or ())
            if opened is not None and key != opened:
                opened = None
            stripped = (t or "").strip()
            if heading(stripped):  # the heading kept as a paragraph: what follows in its section is back matter
                opened = key
            got[i] = _under_heading(path, heading) or opened is not None or bool(run_in.match(stripped))
        return got

    back = flags(lambda h: is_back_heading(h, acknowledgements=False), _RUN_IN_REFERENCES)
    ref = np.asarray([looks_like_reference(t) for t in texts], dtype=bool)
    # an entry split over two paragraphs: between two entries, few function words
    for i in range(1, n - 1):
        if not ref[i] and ref[i - 1] and ref[i + 1] and _function_share(_WORDS.findall(texts[i] or "")) < 0.3:
            ref[i] = True
    if back.any() or ref.sum() >= 3:  # a document that cites: its acknowledgements are back matter too
        back |= flags(lambda h: bool(_heading(h)) and bool(_ACK_HEADING.match(_heading(h))), _RUN_IN_ACK)
    if back.sum() > max_share * n:
        back[:] = False
    if ref.sum() > max_share * n:
        ref[:] = False
    out[back] = "back"
    out[~back & ref] = "reference"
    return out
