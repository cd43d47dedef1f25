"""Route a question by the documents it names (issue 35).

"Which state's law governs the Integrity Media agreement?" names a document; it must be
answered from that document, and from its governing-law clause, not from the preamble
that holds the names. :func:`route_by_names` finds the documents a question names and
splits the question into the *names* (which pick the documents) and the *need* (what
is asked; it picks the passages inside them).

How a document is named: its file name, its title and its opening text (the first
``front_chars`` characters in reading order: a contract's parties paragraph, a paper's
title, authors and affiliations) form its *name field*: the words there written like
names (capitalised or all capitals) and the file name's words. A question word is a name
candidate when it looks like a name in the question (capitalised other than as the
first word, or all capitals), is a file name's word with a digit ("cuad-077"), or is rare
in the whole collection (in at most ``rare_docs`` documents' text, of at least
``10 * rare_docs``); common question and document words (``what``, ``agreement``, ``law``)
never are, and a candidate counts only where the question refers to a document by it
(after "between", or near "agreement", "paper", ...). A document is named when the candidates it holds in
its name field are *distinctive*: each in the name fields of at most ``max_share`` of the
documents (and at most ``max_docs``), weighted by their inverse document frequency over
the name fields, and a run of names written together in the question ("Integrity Media")
counts once more where the document has it together too; the documents within
``keep_ratio`` of the best score that hold as many of these (all of up to three, all but
one of more) are kept (at most ``max_named``). Nothing is routed when no candidate is distinctive, or when the best
document holds a single name that other documents hold too, so a question that names
nothing ("Which contracts require insurance?") keeps its scope.

The name fields and their statistics are built once per corpus view
(``view.aux("name_fields", ...)``).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

__all__ = ["NameFields", "Route", "name_fields", "route_by_names", "name_tokens", "named_apart", "refers_back"]

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'&.\-/]*")
_SPLIT = re.compile(r"[^a-z0-9]+")

#: Words that are never names, whatever their case: question words, function words and the
#: nouns every document of a kind uses about itself.
STOP = frozenset("""
a about above according after against all also am an and any are as at be been before being between both but by
can could did do does doing done during each either for from had has have having he her here hers him his how i if
in into is it its itself may me might more most must my no nor not of on once only or other our out over own per
s same shall she should so some such than that the their them then there these they this those through to under
until up upon very was we were what when where which while who whom whose why will with within would you your
agreement agreements contract contracts document documents paper papers report reports article section clause
party parties between among term terms law laws state states which whats what's how's say says said tell list name
named give given main new use used using based""".split())


def name_tokens(text: str) -> list[str]:
    """Lower-case name tokens of ``text``: each word, its parts split at punctuation, and
    the word with its punctuation removed (``U-Net`` gives ``u-net``, ``u``, ``net``, ``unet``)."""
    out: list[str] = []
    for w in _WORD.findall(text or ""):
        lw = w.lower().strip(".'-/&")
        if not lw:
            continue
        parts = [p for p in _SPLIT.split(lw) if p]
        out.append(lw)
        if len(parts) > 1:
            out.extend(parts)
            out.append("".join(parts))
    return out


@dataclass
class NameFields:
    """The name field of every document of a view and their document frequencies.

    Attributes:
        tokens: One set of name tokens per document (view order): of the words of the name
            field written like names (capitalised or all capitals) and of the file name.
        df: Name-field document frequency of each token.
        text_df: Document frequency of each token over the documents' whole text (a
            read-only mapping).
        n_docs: Documents.
        file_df: Document frequency of each token of the file names.
        squashed: Per document, its file name and name-field words lower-cased with
            everything but letters and digits removed ("integritymediainc..."), where a
            phrase of the question ("Integrity Media") is looked for whole.
    """

    tokens: list[set[str]]
    df: Counter
    text_df: Mapping[str, int]
    n_docs: int
    file_df: Counter = field(default_factory=Counter)
    squashed: list[str] = field(default_factory=list)


def _front_text(tree, front_chars: int) -> str:
    """The document's title and its first ``front_chars`` characters in reading order."""
    out, n = [tree.title or ""], 0
    for node in tree.nodes[1:]:
        t = node.content or ""
        out.append(t)
        n += len(t)
        if n >= front_chars:
            break
    return " ".join(out)


class _IdCounts(Mapping):
    """``{token: count}`` read from an int64 count per id of a shared ``{token: id}`` map."""

    def __init__(self, ids: dict[str, int], counts: np.ndarray):
        self._ids, self._counts = ids, counts

    def __getitem__(self, t: str) -> int:
        i = self._ids[t]
        if i >= self._counts.size or not self._counts[i]:
            raise KeyError(t)
        return int(self._counts[i])

    def __iter__(self):
        return (t for t, i in self._ids.items() if i < self._counts.size and self._counts[i])

    def __len__(self) -> int:
        return int(np.count_nonzero(self._counts))


def doc_name_tokens(view, dv, front_chars: int = 1500) -> tuple[set[str], set[str], str, np.ndarray]:
    """One document's part of :class:`NameFields`, kept across runs (issue 37).

    Kept in the view's byte-bounded :attr:`~docmaster_core.retrieval.corpus.CorpusView.doc_cache`
    and on disk (``collection/docinfo/names``, tagged with the node count, ``front_chars``
    and the file name), so that routing a question by names reads no tree of a document
    seen before: at 5,000 documents, building the name fields from every tree took 144 s
    of a cold ``ask``.

    Returns:
        ``(name tokens, file-name tokens, squashed name text, text token ids)``: the
        last is int64 (t,), the ids in the view's shared ``term_ids`` of the distinct
        name tokens of the whole text and the name field.
    """
    from ..store.docinfo import load_arrays, save_arrays

    key = ("names", dv.doc_id, dv.n_nodes, int(front_chars), dv.file_name)
    got = view.doc_cache.get(key)
    if got is not None:
        return got
    tag = f"{dv.n_nodes}|{int(front_chars)}|{dv.file_name}"

    def words(a: np.ndarray) -> list[str]:
        raw = a.tobytes().decode("utf-8")
        return raw.split("\n") if raw else []

    z = load_arrays(view.ws_path, "names", dv.doc_id, tag)
    if z is not None:
        s, ft, squashed, text = set(words(z["name"])), set(words(z["file_name"])), words(z["squashed"]), words(z["text"])
        squashed = squashed[0] if squashed else ""
    else:
        stem = re.sub(r"\.pdf$", "", dv.file_name, flags=re.I)
        tree = dv.tree
        front = " ".join(w for w in _WORD.findall(_front_text(tree, front_chars)) if _looks_like_name(w))
        ft = set(name_tokens(stem) + name_tokens(stem.replace("_", " ").replace("-", " ")))
        s = ft | set(name_tokens(front))
        squashed = re.sub(r"[^a-z0-9]", "", (stem + " " + front).lower())
        body: set[str] = set()
        for node in tree.nodes:
            body.update(name_tokens(node.content or ""))
        text = sorted(body | s)

        def enc(xs) -> np.ndarray:
            return np.frombuffer("\n".join(xs).encode("utf-8"), dtype=np.uint8)

        save_arrays(view.ws_path, "names", dv.doc_id, tag, name=enc(sorted(s)), file_name=enc(sorted(ft)),
                    squashed=enc([squashed]), text=enc(text))
    tid = view.ids_of_terms(text)
    got = (s, ft, squashed, tid)
    view.doc_cache.put(key, got, 64 * (len(s) + len(ft)) + len(squashed) + tid.nbytes + 200)
    return got


#: A file name's company token: the name written without spaces, then its legal form
#: ("stampscominc", "audibleinc", "azulsa", "elpollolocoholdingsinc"), the form at least 4 letters from the start.
_FILE_COMPANY = re.compile(r"^([a-z0-9]{4,}?)(?:holdings?)?(?:inc|corp|co|ltd|llc|plc|sa|ag|lp|llp|nv|group)$")


def name_fields(view, front_chars: int = 1500) -> NameFields:
    """The (cached) :class:`NameFields` of a corpus view: file name, title and opening text
    (per document from :func:`doc_name_tokens`)."""

    def build() -> NameFields:
        toks: list[set[str]] = []
        df: Counter = Counter()
        file_df: Counter = Counter()
        squashed: list[str] = []
        text_ids: list[np.ndarray] = []
        for dv in view.docs:
            s, ft, sq, tid = doc_name_tokens(view, dv, front_chars)
            # a company written without spaces in the file name, with its legal form ("stampscominc"):
            # the name without the form ("Stamps.com" -> "stampscom") names the document too
            short = {m.group(1) for t in ft if (m := _FILE_COMPANY.match(t))}
            if short:
                s, ft = s | short, ft | short
            file_df.update(ft)
            squashed.append(sq)
            toks.append(s)
            df.update(s)
            text_ids.append(tid)
        counts = np.bincount(np.concatenate(text_ids), minlength=len(view.term_ids)) if text_ids else np.zeros(0, np.int64)
        return NameFields(toks, df, _IdCounts(view.term_ids, counts), len(view.docs), file_df, squashed)

    return view.aux(("name_fields", int(front_chars)), build)


@dataclass
class Route:
    """The documents a question names.

    Attributes:
        doc_ids: The named documents, best first.
        names: The question's words that named them, in question order.
        need: The question without those words: what is asked (it picks the passages).
        scores: ``{doc_id: score}`` of the named documents (sum of the idf of their names).
    """

    doc_ids: list[str]
    names: list[str]
    need: str
    scores: dict[str, float] = field(default_factory=dict)


_POSSESSIVE = re.compile(r"['\u2019]s$", re.I)


def _looks_like_name(word: str) -> bool:
    """Written like a name: capitalised or all capitals."""
    core = word.strip(".'-/&?")
    # "2THEMART.COM", "3M", "7-Eleven": a name may start with a digit when it has capitals
    return bool(core) and (core[:1].isupper() or (core[:1].isdigit() and any(c.isupper() for c in core)))


#: A name that starts with a number and goes on in a capitalised word: "2TheMart", "7-Eleven".
_DIGIT_LED_NAME = re.compile(r"^\d+-?[A-Z][a-z]")


def _candidates(question: str, nf: NameFields, rare_docs: int) -> list[tuple[str, str]]:
    """``(word as written, token)`` of the question's name candidates: written like a name
    (not as the first word), or rare (in at most ``rare_docs`` documents' text, of a
    collection of at least ``10 * rare_docs`` documents, so that rare means something)."""
    out = []
    words = _WORD.findall(question)
    rare_ok = nf.n_docs >= 10 * rare_docs
    for i, w in enumerate(words):
        core = w.strip(".'-/&?")
        if not core:
            continue
        looks = i > 0 and _looks_like_name(core)
        # a word with a digit names a document only as (part of) a file name: "cuad-077", not "top-1", or as a
        # company's name that starts with a number ("2TheMart", "7-Eleven"; not "8K", "GSM8K")
        ref = any(c.isdigit() for c in core) and (core.lower() in nf.file_df or bool(_DIGIT_LED_NAME.match(core)))
        # "Stamps.com's agreement": the possessive is no part of the name
        for t in dict.fromkeys(name_tokens(core) + name_tokens(_POSSESSIVE.sub("", core))):
            if len(t) < 2 or t in STOP or t.isdigit() and len(t) < 3:
                continue
            if any(c.isdigit() for c in t) and not ref:
                continue
            if looks or ref or (rare_ok and 0 < nf.text_df.get(t, 0) <= rare_docs):
                out.append((w, t))
    return out


def _phrases(question: str, names: set[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Runs of two or more consecutive name candidates in the question, each as
    ``(squashed text, words)``: "Integrity Media" gives ``("integritymedia", ("Integrity", "Media"))``."""
    out, run = [], []
    for w in _WORD.findall(question) + [""]:
        if w in names:
            run.append(w)
            continue
        if len(run) >= 2:
            out.append((re.sub(r"[^a-z0-9]", "", "".join(run).lower()), tuple(run)))
        run = []
    return out


#: Nouns by which a question refers to a document ("the Integrity Media *agreement*", "the U-Net *paper*").
DOC_NOUNS = frozenset("""agreement agreements contract contracts amendment lease license licence letter memo
memorandum deed policy paper papers article report reports document documents manual filing study thesis
proposal plan charter bylaws""".split())


#: Words that make a plural document noun after them the collection a question asks about ("which papers").
_COLLECTION_WORDS = frozenset("which what many any all every list these those other".split())


def _refers_to_document(question: str, word: str, nf: NameFields, window: int = 4) -> bool:
    """A name candidate refers to a document (not to a method or a dataset the question
    mentions) when it is a file name, comes after "between", or stands within ``window`` words
    of a noun for a document (:data:`DOC_NOUNS`), unless that noun is the collection the question
    asks about ("Which *papers* use Wikipedia?": a plural after "which", "any", "these" ...)."""
    core = _POSSESSIVE.sub("", word.lower().strip(".'-/&?"))
    if core in nf.file_df or (re.search(r"[.\-/&]", core) and re.sub(r"[^a-z0-9]", "", core) in nf.file_df):
        return True  # "cuad-077", or a company as the file name writes it ("Stamps.com": "stampscom")
    words = [w.strip(" ?,.;:'\"()").lower() for w in question.split()]
    core = word.strip(" ?,.;:'\"()").lower()
    at = [i for i, w in enumerate(words) if w == core]
    # "Which papers use Wikipedia?", "how many of these contracts ...": the noun is the collection
    # asked about, and a name beside it is what the documents are asked about, not a document's name
    asked = {i for i, w in enumerate(words) if w in DOC_NOUNS and w.endswith("s")
             and any(q in _COLLECTION_WORDS for q in words[max(0, i - 3):i])}
    for i in at:
        near = [w for j, w in enumerate(words[max(0, i - window): i + window + 1], start=max(0, i - window))
                if j not in asked]
        if any(w in DOC_NOUNS or w.removesuffix("'s") in DOC_NOUNS for w in near):
            return True
        if "between" in words[:i]:  # "the agreement between A, B and C"
            return True
    return False


def _name_runs(question: str, words: set[str]) -> list[set[str]]:
    """The question's names as runs of consecutive name candidates: "Eco Science Solutions pay
    Fruit of Life Productions" gives ``{Eco, Science, Solutions}``, ``{Fruit}``, ``{Life, Productions}``."""
    out: list[set[str]] = []
    run: set[str] = set()
    for w in _WORD.findall(question) + [""]:
        if w in words:
            run.add(w)
            continue
        if run:
            out.append(run)
        run = set()
    return out


def _named_together(question: str, cands: list[tuple[str, str]], nf: NameFields, allowed: set[int] | None = None,
                    max_named: int = 3) -> tuple[list[tuple[str, str]], list[int]]:
    """The documents whose name fields hold two distinct names of the question (words of two
    different runs of names, :func:`_name_runs`): a pair of parties names their contract, and the
    amendments and schedules between the same parties too; a document holding one party's name
    only (another contract of that party) is not named. Kept when there are at most
    ``max_named`` of them. When no document holds two names, the one document (if only one)
    whose name field holds two words of one name ("Kiosk Concepts") is named.

    Args:
        question: The question.
        cands: ``(word as written, token)`` name candidates (distinctive ones).
        nf: The name fields.
        allowed: Document indices that may be named (None: all).
        max_named: Most documents named.

    Returns:
        ``(candidates held, document indices, most names held first)``; ``([], [])`` when no
        document, or more than ``max_named``, holds two names.
    """
    runs = _name_runs(question, {w for w, _ in cands})
    held_by: dict[int, set[str]] = {}
    for di, toks in enumerate(nf.tokens):
        if allowed is None or di in allowed:
            held = {w for w, t in cands if t in toks}
            if len(held) >= 2:
                held_by[di] = held
    holders = {di: h for di, h in held_by.items() if sum(1 for r in runs if r & h) >= 2}
    if not holders and len(held_by) == 1:  # one name of two or more words that one document alone holds
        holders = held_by
    if not holders or len(holders) > max_named:
        return [], []
    held_all = set().union(*holders.values())
    order = sorted(holders, key=lambda di: (-len(holders[di]), di))
    return [(w, t) for w, t in cands if w in held_all], order


def route_by_names(question: str, view, doc_ids: Sequence[str] | None = None, *, max_share: float = 0.1,
                   max_docs: int = 5, rare_docs: int = 2, keep_ratio: float = 0.6, max_named: int = 3
                   ) -> Route | None:
    """The documents ``question`` names, among ``doc_ids`` (default: every document of ``view``).

    Args:
        question: The question.
        view: The :class:`~docmaster_core.retrieval.corpus.CorpusView`.
        doc_ids: Documents that may be named.
        max_share, max_docs: A name counts when its name-field document frequency is at
            most ``max(1, min(max_docs, max_share * N))``.
        rare_docs: A lower-case question word is a candidate when at most this many
            documents' text holds it.
        keep_ratio: Documents scoring at least this share of the best are named too.
        max_named: Most documents named.

    A candidate counts only where the question refers to a document by it (a file name,
    after "between", or near a noun such as "agreement" or "paper"; :data:`DOC_NOUNS`), so
    "ranking by PageRank" or "error on ImageNet" route nowhere. The best document must hold
    one name no other document's name field holds, or two names. When that names nothing, or
    names a document that holds fewer of the question's names than the documents holding two of
    them together, two distinct names of the question held together by at most ``max_named``
    documents' name fields name them all (:func:`_named_together`; a pair of parties: "must Audible give
    Amazon.com Commerce Services ...", or a contract and its amendments between the same
    parties: "the Fox and Glu Mobile license under Amendment No. 3"). Failing both, "the <Word> paper"
    (or agreement, report, ...) names the one document whose title begins with that word
    (:func:`_route_by_title_head`: "the Attention paper"); else nothing is routed.

    Returns:
        The :class:`Route`, or None when the question names no document.
    """
    nf = name_fields(view)
    if nf.n_docs < 2:
        return None
    allowed = set(doc_ids) if doc_ids is not None else None
    cap = max(1, min(max_docs, int(max_share * nf.n_docs)))
    rare = [(w, t) for w, t in _candidates(question, nf, rare_docs) if 0 < nf.df.get(t, 0) <= cap]
    cands = [(w, t) for w, t in rare if _refers_to_document(question, w, nf)]
    route = _route_by_candidates(question, view, nf, cands, allowed, keep_ratio, max_named) if cands else None
    # names still route when two of them are held together by at most ``max_named`` documents'
    # name fields (a pair of parties names their contract, or their contract and its amendments:
    # each of them is searched, and the need picks the passage): when no word refers to a
    # document by its place in the question ("must Audible give Amazon.com Commerce Services
    # ...", "the Cardlytics schedule"), when those that do are not distinctive enough, or when
    # a document they name holds fewer of the question's names than such a pair's document
    # ("Golfers Incorporated pay Andy North under his F2 golf clubs endorsement agreement": only
    # "golf" stands beside "agreement", and another contract's file name holds it)
    idx = None if allowed is None else {i for i, d in enumerate(view.docs) if d.doc_id in allowed}
    held, family = _named_together(question, rare, nf, idx, max_named)
    if route is not None:
        row = {d.doc_id: i for i, d in enumerate(view.docs)}

        def n_names(di: int) -> int:
            return len({w for w, t in rare if t in nf.tokens[di]})

        if not family or min(n_names(row[d]) for d in route.doc_ids) >= max(map(n_names, family)):
            return route
    if not family:
        return _route_by_title_head(question, view, nf, allowed)
    by_word = {w for w, _ in held}
    names = list(dict.fromkeys(w for w, _ in held))
    front = set().union(*(nf.tokens[di] for di in family))
    need = _need(question, by_word, front)
    if not [w for w in name_tokens(need) if w not in _FUNCTION and len(w) > 2]:
        need = question
    idf = {t: math.log(nf.n_docs / nf.df[t]) for _, t in held}
    scores = {di: sum(idf[t] for _, t in held if t in nf.tokens[di]) for di in family}
    return Route([view.docs[di].doc_id for di in family], names, need,
                 {view.docs[di].doc_id: round(scores[di], 3) for di in family})


_TITLE_HEAD = re.compile(r"\bthe\s+([A-Z][A-Za-z0-9\-]*)\s+(" + "|".join(sorted(DOC_NOUNS)) + r")\b")


def _route_by_title_head(question: str, view, nf: NameFields, allowed: set[str] | None, max_read: int = 20
                         ) -> Route | None:
    """A document called by the first word of its title, as people call papers ("How many layers
    does the encoder have in *the Attention paper*?" for "Attention Is All You Need", a word
    other documents' opening text holds too): "the <Word> <document noun>" names the one
    document whose title begins with that word (None when none or several do, or when more
    than ``max_read`` documents' name fields hold the word)."""
    for m in _TITLE_HEAD.finditer(question or ""):
        word = m.group(1)
        # the title is in the name field: only documents whose name field holds the word are read
        # (a word most documents hold names none of them this way)
        held = [di for di, dv in enumerate(view.docs) if (allowed is None or dv.doc_id in allowed)
                and word.lower() in nf.tokens[di]]
        if len(held) > max_read:
            continue
        hits = [di for di in held if name_tokens(view.docs[di].tree.title or "")[:1] == [word.lower()]]
        if len(hits) == 1:
            di = hits[0]
            need = _need(question, {word}, nf.tokens[di])
            if not [w for w in name_tokens(need) if w not in _FUNCTION and len(w) > 2]:
                need = question
            return Route([view.docs[di].doc_id], [word], need, {view.docs[di].doc_id: 1.0})
    return None


#: A follow-up's reference to the document the conversation is about: a pronoun, or a singular
#: document noun after "the", "this", "that" or "the same" ("Can *it* be terminated early?",
#: "What does *this agreement* say about notice?").
_BACK = re.compile(r"\b(?:it|its|it's|itself)\b|\b(?:the|this|that|the\s+same)\s+(?:"
                   + "|".join(sorted(n for n in DOC_NOUNS if not n.endswith("s") or n == "bylaws")) + r")\b", re.I)

#: A question about the collection, not the last document ("Which contracts ...", "any of the papers").
_ABOUT_COLLECTION = re.compile(r"\b(?:which|what|how\s+many|any|all|every|each|other|these|those)\s+(?:of\s+the\s+)?(?:"
                               + "|".join(sorted(n for n in DOC_NOUNS if n.endswith("s"))) + r")\b", re.I)


def refers_back(question: str) -> bool:
    """True when ``question`` refers to a document already being talked about instead of
    naming one: "Can it be terminated early, and on what notice?", "What does this agreement
    say about the term?", "Who signed the contract?" (not "Which contracts can be terminated?",
    not "any of these papers"). A question that names documents is routed by its names first
    (:func:`route_by_names`); this only decides whether a question that names none continues
    the last one."""
    q = question or ""
    return bool(_BACK.search(q)) and not _ABOUT_COLLECTION.search(q)


def named_apart(route: Route, view) -> bool:
    """True when a route's documents are named by different names ("What do RAPTOR and LightRAG
    use?": two papers, each to be answered from), not by the same ones (a contract and its
    amendments between the same parties: one answer from the best of them): no name of the
    question is in every named document's name field."""
    if len(route.doc_ids) < 2:
        return False
    nf = name_fields(view)
    row = {d.doc_id: i for i, d in enumerate(view.docs)}
    toks = [set(name_tokens(w)) for w in route.names]
    held = [{k for k, ts in enumerate(toks) if ts & nf.tokens[row[d]]} for d in route.doc_ids if d in row]
    return bool(held) and not set.intersection(*held)


def _route_by_candidates(question: str, view, nf: NameFields, cands: list[tuple[str, str]],
                         allowed: set[str] | None, keep_ratio: float, max_named: int) -> Route | None:
    """The route of :func:`route_by_names` from the name candidates that refer to a document
    (None when they name none distinctly)."""
    idf = {t: math.log(nf.n_docs / nf.df[t]) for _, t in cands}
    by_word: dict[str, list[str]] = {}
    for w, t in cands:
        by_word.setdefault(w, []).append(t)
    phrases = _phrases(question, set(by_word))
    scores: dict[int, float] = {}
    hits: dict[int, set[str]] = {}  # the question words (not their pieces) each document holds
    for di, dv in enumerate(view.docs):
        if allowed is not None and dv.doc_id not in allowed:
            continue
        held = {w: [t for t in ts if t in nf.tokens[di]] for w, ts in by_word.items()}
        held = {w: ts for w, ts in held.items() if ts}
        together = [ph for ph in phrases if ph[0] in nf.squashed[di]]
        for _, words in together:  # the names written together in the question, together in the document
            for w in words:
                held.setdefault(w, by_word[w])
        if held:
            scores[di] = sum(max(idf[t] for t in ts) for ts in held.values())
            scores[di] += sum(max(idf[t] for t in by_word[w]) for _, words in together for w in words)
            hits[di] = set(held) | {ph for ph, _ in together}
    if not scores:
        return None
    best = max(scores.values())
    top = max(scores, key=scores.get)
    unique = any(nf.df[t] == 1 for w in hits[top] for t in by_word.get(w, ()) if t in nf.tokens[top])
    if len(hits[top]) < 2 and not unique:
        return None
    # a document named as well as the best (an amendment, a twin with the same parties) is kept
    # too; one that shares only some of its names ("Media" of "Integrity Media") is not
    need = len(hits[top]) if len(hits[top]) <= 3 else len(hits[top]) - 1
    picked = sorted((di for di, s in scores.items() if s >= keep_ratio * best and len(hits[di]) >= need),
                    key=lambda di: -scores[di])[:max_named]
    used = set().union(*(hits[di] for di in picked))
    names = list(dict.fromkeys(w for w, _ in cands if w in used))
    front = set().union(*(nf.tokens[di] for di in picked))
    need = _need(question, set(names), front)
    if not [w for w in name_tokens(need) if w not in _FUNCTION and len(w) > 2]:
        need = question  # the names were all there was: nothing else to choose passages by
    return Route([view.docs[di].doc_id for di in picked], names, need,
                 {view.docs[di].doc_id: round(scores[di], 3) for di in picked})


#: Question and function words: a need made of these only asks nothing.
_FUNCTION = frozenset("""a an the of to in on at by for with between and or is are was were be been do does did
what which who whom whose when where why how that this these those it its any all there""".split())


#: Words that only join names ("between A and B", "A, Inc.", "with A"): left out of the need with them.
_JOINERS = frozenset("between and with by of the a an & d/b/a".split())


def _strip(w: str) -> str:
    return w.strip(" ?,.;:'\"()")


def _need(question: str, names: set[str], front: set[str]) -> str:
    """The question without the names: each name grows into the whole span of words around
    it that the named documents' name fields hold ("Cargill, Incorporated", "Bioamber
    S.A.S."), then the joiners left next to a dropped word go too. Words every document
    uses (:data:`STOP`, e.g. "law", "agreement") stay: they are what is asked."""
    words = question.split()
    drop = [_strip(w) in names for w in words]
    for i, w in enumerate(words):  # the named documents' other names ("Watchit Media", "XpresSpa"): written
        t = _strip(w)               # like names and in their name fields, they say which document, not what
        toks = name_tokens(t)
        if i and toks and _looks_like_name(t) and t.lower() not in STOP and all(x in front for x in toks):
            drop[i] = True

    def part(w: str, both: bool) -> bool:
        t = _strip(w)
        toks = name_tokens(t)
        # a common word belongs to a name when written like one (all capitals) or inside one
        named_like = t.lower() not in STOP or (len(t) > 1 and t.isupper()) or both
        return bool(toks) and named_like and all(x in front for x in toks)

    changed = True
    while changed:
        changed = False
        for i, w in enumerate(words):
            if drop[i]:
                continue
            left, right = i > 0 and drop[i - 1], i + 1 < len(words) and drop[i + 1]
            if (left or right) and (part(w, left and right) or _strip(w).lower() in _JOINERS):
                drop[i] = changed = True
    # a title's small words between two of its dropped words ("Attention *Is All You* Need"): the whole
    # span is the name when the named documents' name fields hold every word of it
    for i in range(len(words)):
        if drop[i]:
            continue
        j = i
        while j < len(words) and not drop[j] and j - i < 4:
            j += 1
        if i > 0 and drop[i - 1] and j < len(words) and drop[j] and all(
                (toks := name_tokens(_strip(w))) and all(x in front for x in toks) for w in words[i:j]):
            for m in range(i, j):
                drop[m] = True
    _drop_name_spans(words, drop)
    _drop_kind_words(words, drop, front)
    _drop_abbreviations(words, drop)
    out = " ".join(w for w, d in zip(words, drop) if not d).strip(" ,")
    # what is left of a fronted phrase that only named the document: "In [the Attention Is All You Need]
    # paper, how many ..." -> "how many ..."
    m = re.match(r"^(?:in|under|for|from|according to)\s+(?:the\s+|this\s+|that\s+)?(\w+)\s*,\s*(?=\S)", out, re.I)
    if m and m.group(1).lower() in DOC_NOUNS and any(drop):
        out = out[m.end():]
    return out + ("?" if question.rstrip().endswith("?") and not out.endswith("?") else "")


def _drop_abbreviations(words: list[str], drop: list[bool]) -> None:
    """Drop, in place, a word in capitals that abbreviates a dropped name of the question
    ("without *AP's* consent" beside "The Associated Press"): the initials of a run of dropped
    capitalised words, joiners ("of", "and", "the") skipped. Like the name, it says who, not what
    is asked; a contract that spells the name out never writes it (a held-out question was declined
    for "they never mention AP", docs/results/qa.md)."""
    initials: set[str] = set()
    run: list[str] = []
    for w, d in list(zip(words, drop)) + [("", False)]:
        t = _strip(w)
        if d and t[:1].isupper():
            run.append(t)
            continue
        if d and t.lower() in _JOINERS:
            continue
        caps = [x[0] for x in run if x.lower() not in _JOINERS]
        for i in range(len(caps)):  # every contiguous part of the run: "Associated Press" of "The Associated Press"
            for j in range(i + 2, len(caps) + 1):
                initials.add("".join(caps[i:j]).upper())
        run = []
    for k, w in enumerate(words):
        t = re.sub(r"['\u2019]s$", "", _strip(w))
        if not drop[k] and 2 <= len(t) <= 6 and t.isalpha() and t.isupper() and t in initials:
            drop[k] = True


#: Words before a document noun that end the words naming its kind ("the co-branding agreement").
_DETERMINERS = frozenset("the this that its their his her our your a an each any such".split())


def _drop_kind_words(words: list[str], drop: list[bool], front: set[str]) -> None:
    """Drop, in place, the words that name the kind of a named document, written just before
    its noun and all in the named documents' name fields ("the *co-branding* agreement", "the
    *services and hosting* agreement"): like the names, they say which document, and every
    passage of a co-branding agreement is about co-branding, so they would pull up its title
    and preamble rather than the clause asked about. Up to four words between a determiner and
    the noun go too, whether or not the name fields hold them ("his *F2 golf clubs* endorsement
    agreement": own6, where "F2 golf clubs" pulled up the clause on using the F2 wedges instead of
    the royalty asked about). The noun itself stays."""
    for k, w in enumerate(words):
        if drop[k] or _strip(w).lower() not in DOC_NOUNS:
            continue
        i = k - 1
        while i >= 0 and not drop[i]:
            t = _strip(words[i])
            if not t or t.lower() in _DETERMINERS or words[i].endswith((",", ";", ":", "?")):
                break
            toks = name_tokens(t)
            if not (t.lower() in ("and", "&") or (toks and all(x in front for x in toks))):
                break
            i -= 1
        # "his *F2 golf clubs* endorsement agreement": up to four words between a determiner
        # and the noun describe the named document as much as its name fields do
        d = next((d for d in range(k - 1, max(-1, k - 6), -1) if drop[d] or words[d].endswith((",", ";", ":", "?"))
                  or _strip(words[d]).lower() in _DETERMINERS), None)
        if d is not None and not drop[d] and _strip(words[d]).lower() in _DETERMINERS:
            i = min(i, d)
        j = i + 1
        while j < k and _strip(words[j]).lower() in ("and", "&"):  # never a leading "and"
            j += 1
        for m in range(j, k):
            drop[m] = True


#: Words that start a clause after the names ("... and B if the ISO application ..."): a names phrase ends there.
_CLAUSE_OPENERS = frozenset("""if when unless for under after before during that which who whether to in on
regarding about concerning until where while upon""".split())

#: Words that introduce the parties of an agreement: "between A and B", "with A".
_SPAN_OPENERS = frozenset("between with".split())


def _drop_name_spans(words: list[str], drop: list[bool], max_gap: int = 4) -> None:
    """Drop, in place, the rest of a names phrase opened by "between" or "with": from the
    opener to the last dropped name word after it, with gaps of at most ``max_gap`` kept
    words ("between Payment Data Systems, Inc and NETWORK 1 FINANCIAL, INC" leaves no
    "1"; "between Web site owners (hereafter, ...) and Software Publishers" no "site
    owners"). A phrase ends at the end of its sentence or at a word that opens a clause
    ("... Payment Data Systems if the ISO application is not approved": "if" stays)."""
    i = 0
    while i < len(words):
        if _strip(words[i]).lower() in _SPAN_OPENERS and any(drop[i + 1:i + 3]):
            last, gap = i, 0
            for j in range(i + 1, len(words)):
                if drop[j]:
                    last, gap = j, 0
                else:
                    gap += 1
                    if gap > max_gap or _strip(words[j]).lower() in _CLAUSE_OPENERS:
                        break
                if words[j].rstrip("\"')").endswith(("?", "!")) or (words[j].endswith(".") and j + 1 < len(words)
                                                                     and words[j + 1][:1].isupper() and not drop[j]):
                    break
            for j in range(i, last + 1):
                drop[j] = True
            i = last + 1
            continue
        i += 1
