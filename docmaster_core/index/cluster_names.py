"""Names for clusters from their content: class-based TF-IDF (issue 36).

A cluster of passages is named by the terms that are frequent in it and rare in the
other clusters, the class-based TF-IDF of BERTopic (Grootendorst 2022, "BERTopic: Neural
topic modeling with a class-based TF-IDF procedure", Eq. 1):

    W(t, c) = tf(t, c) * log(1 + A / f(t))

with ``tf(t, c)`` the frequency of term t in cluster c (all its passages joined, L1-
normalised per cluster), ``f(t)`` the frequency of t over all clusters and ``A`` the
average number of words per cluster. Counting is scikit-learn's ``CountVectorizer`` over
readable words only (:func:`terms_of`): words of 3+ letters and nothing else, none with a
math-alphanumeric letter (U+1D400-U+1D7FF: the "𝐵", "𝑚" of equations gave names like
"r𝐵𝑟, 𝑚new"), no part of a URL or e-mail address ("https", "www", "arxiv", "doi"), no
lower-case word without a vowel ("ffl", a ligature's remains; "LLMs", an acronym, stays),
no stop word (scikit-learn's English list), no generic word of any document
(:data:`GENERIC_WORDS`: "according", "takes", "extra", "shown", "paper", "figure") and no
function word of legal English or prefix cut off by a hyphen (:data:`FUNCTION_WORDS`:
"thereof", "pursuant", "pre"). A term
found in one passage only is
not a name (``min_passages``): a name says what several passages share; and with four or
more clusters a term found in most of them names none (``max_share``). Over a collection, a
term found in the passages of one document only is not a name either (``min_groups``): a party,
a station's call sign ("WLIB"), a product or a defined term names a contract, not what the
contracts of a cluster share.

A term the passages never write in lower case is shown as they write it when that is an acronym
or has an inner capital ("ROFR", "LLMs", "WeChat"): an abbreviation a contract defines reads as
one, not as a typo; a longer word set in capitals ("MEXICO") is named in lower case.

A topic of one passage whose telling words are names ("edward, lockhart, schmitt": an
author line; "london, college, gower": an affiliation) says nothing to a reader: with the
passages' section titles given it is named by its section ("section “Acknowledgements”"),
else :data:`NAMES_TOPIC` ("a list of names": a newcomer asked what a box tagged "names
only" meant); a topic with no telling word at all is named by its section alike.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Sequence

import numpy as np

__all__ = ["cluster_names", "representative_passages", "terms_of", "GENERIC_WORDS", "URL_WORDS", "FUNCTION_WORDS",
           "NAMES_TOPIC"]

#: Words of any document that say nothing about a topic: reporting and linking verbs,
#: hedges, document furniture ("figure", "section"), ordinals. Added to scikit-learn's
#: English stop words (which hold "show", "also", "however", not "shown" or "according").
GENERIC_WORDS = frozenset("""
according accordingly achieve achieved achieves add added adding adds additional additionally allow allowed allows
apply applied applies approximately available based basis case cases certain chapter clearly consider considered
considering considers contain contained containing contains corresponding currently demonstrate demonstrated
demonstrates describe described describes different discuss discussed discusses does doing done due eg etc et al
example examples extra fact fig figs figure figures finally find finding finds follow followed following follows
furthermore generally given gives giving good great greater help helps high higher highly ie important include included
includes including indeed instead introduce introduced introduces just key known large larger largely lead leads let
lets like likely low lower main mainly make makes making made mean means necessary need needed needs new note noted
notes novel obtain obtained obtains order overall page pages paper papers paragraph particular particularly perform
performed performing performs possible present presented presents previous previously propose proposed proposes
provide provided provides providing really recent recently refer referred refers regarding related relatively report
reported reports respectively result results said section sections see seen shall showed showing shown shows
significant significantly similar similarly simple simply small smaller specific specifically studied suggest suggests
suppose table tables take taken takes taking therefore thus total toward towards typically use used uses using usually
various versus via way ways whether yes first second third fourth fifth last next
""".split())
#: Legal English's function words ("thereof", "hereunder", "pursuant": a contract topic was named "parties,
#: arbitration, thereof" for a newcomer) and the bound prefixes a hyphen leaves alone ("pre-" of "pre-approved",
#: "non-" of "non-exclusive": "items, future, pre"). Neither says what a topic is about.
FUNCTION_WORDS = frozenset("""
aforementioned aforesaid foregoing hereafter hereby herein hereinafter hereinabove hereinbelow hereof hereto
heretofore hereunder herewith notwithstanding pursuant thereafter thereby therefor therefrom therein thereof thereon
thereto theretofore thereunder therewith whereas whereby wherein whereof whereupon
anti inter intra multi non pre semi sub
""".split())
#: Parts of web and e-mail addresses and of identifiers that name no topic.
URL_WORDS = frozenset("http https www com org net edu gov html htm php pdf url doi arxiv preprint abs".split())

_URL = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\w+|\b[\w.-]+\.(?:com|org|net|edu|gov|io)\b\S*", re.IGNORECASE)
_RUN = re.compile(r"[^\W_]+")
_MATH_LETTER = re.compile("[\U0001D400-\U0001D7FF]")
_VOWEL = re.compile(r"[aeiouy]")
_LATIN = re.compile(r"^[a-z]+$")


def terms_of(text: str | None, stop: frozenset | None = None, forms: dict | None = None) -> list[tuple[str, bool]]:
    """The readable words of ``text`` as ``(term, written_lower)``: the term in lower case
    and whether this occurrence was written all in lower case (a proper name never is).

    Args:
        text: A passage.
        stop: Terms to drop (default: scikit-learn's English stop words, :data:`GENERIC_WORDS`,
            :data:`URL_WORDS` and :data:`FUNCTION_WORDS`).
        forms: When given, ``{term: Counter of the ways it is written}`` is updated with each
            occurrence not in lower case ("ROFR", "Xplore").
    """
    if stop is None:
        stop = _default_stop()
    out = []
    for run in _RUN.findall(_URL.sub(" ", text or "")):
        if _MATH_LETTER.search(run):  # "r𝐵𝑟", "𝑚new": a formula's letters
            continue
        word = unicodedata.normalize("NFKC", run)  # "ﬁnd" -> "find"
        if len(word) < 3 or not word.isalpha():  # digits glued to it ("h100", "2021a"): no word
            continue
        low = word.lower()
        if low in stop:
            continue
        if _LATIN.match(low) and not _VOWEL.search(low) and sum(c.isupper() for c in word) < 2:
            continue  # "ffl", "pp": no English word; "LLMs", "RSV" (acronyms) stay
        out.append((low, word == low))
        if forms is not None and word != low:
            forms.setdefault(low, Counter())[word] += 1
    return out


_STOP: frozenset | None = None


def _default_stop() -> frozenset:
    global _STOP
    if _STOP is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        _STOP = frozenset(ENGLISH_STOP_WORDS) | GENERIC_WORDS | URL_WORDS | FUNCTION_WORDS
    return _STOP


def _section_name(title: str, width: int = 40) -> str:
    """``section “Acknowledgements”``: a heading as a topic's name, cut at a word."""
    t = " ".join((title or "").split())
    if len(t) > width:
        t = t[:width].rsplit(" ", 1)[0].rstrip(" ,.;:") + "…"
    return f"section “{t}”"


def cluster_names(texts: Sequence[str], labels: Sequence[int], n_terms: int = 3, min_passages: int = 2,
                  max_share: float = 0.5, groups: Sequence[object] | None = None, min_groups: int = 2,
                  sections: Sequence[str] | None = None) -> dict[int, list[str]]:
    """The ``n_terms`` most distinctive terms of each cluster (BERTopic's c-TF-IDF).

    Args:
        texts: One passage per point, length n.
        labels: int (n,) cluster of each point (any integers; a negative label is noise and
            gets no name).
        n_terms: Terms per name.
        min_passages: A term must occur in at least this many passages of the cluster (of a
            cluster of at least twice as many passages; in a smaller one, in one).
        max_share: With 4 clusters or more, a term found in more than this share of the
            clusters names none (the words of a whole collection: "shall", "party").
        groups: Length n, the document of each passage (any hashable ids); None: one
            document.
        min_groups: A term must occur in passages of at least this many documents of the
            cluster (of a cluster spanning that many; else in one). A cluster none of whose
            terms passes this rule is named without it.
        sections: Length n, the title of each passage's section ("" for none); a topic
            of one passage whose words are mostly names, or a topic without telling
            words, is named by its (most common) section: ``["section “Acknowledgements”"]``.

    Returns:
        ``{cluster: [term, ...]}`` best first; a cluster without such terms gets ``[]``
        (or its section); a one-passage cluster of names ``["section “...”"]`` or
        ``[NAMES_TOPIC]``.

    Raises:
        ValueError: ``texts``, ``labels``, ``groups`` or ``sections`` differ in length.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    labels = np.asarray(labels, dtype=np.int64)
    if len(texts) != labels.size:
        raise ValueError(f"{len(texts)} texts but {labels.size} labels")
    if groups is not None and len(groups) != labels.size:
        raise ValueError(f"{len(groups)} document ids but {labels.size} labels")
    if sections is not None and len(sections) != labels.size:
        raise ValueError(f"{len(sections)} section titles but {labels.size} labels")
    keep = labels >= 0
    clusters = sorted(set(labels[keep].tolist()))
    if not clusters:
        return {}
    lower: dict[str, int] = {}  # occurrences written in lower case: a name has none
    forms: dict[str, Counter] = {}  # how a term is written when not in lower case ("ROFR", "LLMs")

    def analyse(text: str) -> list[str]:
        got = terms_of(text, forms=forms)
        for t, low in got:
            lower[t] = lower.get(t, 0) + int(low)
        return [t for t, _ in got]

    vec = CountVectorizer(analyzer=analyse)
    try:
        x = vec.fit_transform([t or "" for t, k in zip(texts, keep) if k])  # (passages, terms) counts
    except ValueError:  # no term at all (empty vocabulary)
        return _by_section({c: [] for c in clusters}, labels, sections, lower)
    lab = labels[keep]
    member = np.zeros((len(clusters), lab.size))
    member[np.searchsorted(clusters, lab), np.arange(lab.size)] = 1.0
    tf = np.asarray((x.T @ member.T).T)  # (clusters, terms) term counts per cluster
    passages = np.asarray(((x > 0).T @ member.T).T)  # passages of each cluster holding each term
    words = tf.sum(axis=1, keepdims=True)
    a = float(words.mean()) or 1.0
    f = tf.sum(axis=0)
    w = (tf / np.maximum(words, 1.0)) * np.log1p(a / np.maximum(f, 1.0))
    if len(clusters) >= 4:  # a word of most clusters ("shall", "party") names none of them
        spread = (passages > 0).sum(axis=0) / len(clusters)
        w[:, spread > max_share] = 0.0
    size = member.sum(axis=1, keepdims=True)
    need = np.where(size >= 2 * min_passages, min_passages, 1)  # a small cluster: any of its passages
    w[passages < need] = 0.0
    if groups is not None:  # a term of one document's passages (a party, a product) names no cluster
        from scipy import sparse

        _, g = np.unique(np.asarray([str(v) for v in groups], dtype=object)[keep], return_inverse=True)
        pair = np.searchsorted(clusters, lab) * (int(g.max()) + 1) + g  # (cluster, document) of each passage
        pairs, col = np.unique(pair, return_inverse=True)
        pm = sparse.csr_matrix((np.ones(lab.size), (col, np.arange(lab.size))), shape=(pairs.size, lab.size))
        held = ((pm @ (x > 0).astype(np.float64)) > 0).astype(np.float64)  # (cluster-document pairs, terms)
        owner = pairs // (int(g.max()) + 1)
        om = sparse.csr_matrix((np.ones(pairs.size), (owner, np.arange(pairs.size))), shape=(len(clusters), pairs.size))
        docs = np.asarray((om @ held).todense())  # documents of each cluster holding each term
        spans = np.bincount(owner, minlength=len(clusters))[:, None]
        shared = np.where(docs >= np.minimum(min_groups, spans), w, 0.0)
        # a cluster none of whose words is shared by its documents (mostly one document's
        # passages) keeps its own words rather than no name
        unnamed = ~(shared > 0).any(axis=1)
        w = np.where(unnamed[:, None], w, shared)
    terms = vec.get_feature_names_out()
    out, more = {}, {}
    for i, c in enumerate(clusters):
        ranked = np.argsort(-w[i], kind="stable")
        out[c] = [str(terms[j]) for j in ranked[:n_terms] if w[i, j] > 0]
        # the next terms, and any of the cluster's own words, to tell apart two clusters named alike
        more[c] = [str(terms[j]) for j in ranked[n_terms:n_terms + 8] if w[i, j] > 0] + [
            str(terms[j]) for j in np.argsort(-tf[i], kind="stable")[:8] if tf[i, j] > 0]
    out = _by_section(out, labels, sections, lower)
    named = {c: [_as_written(t, lower, forms) for t in words] for c, words in out.items()}
    return _distinct(named, more, lower, forms)


def _distinct(names: dict[int, list[str]], more: dict[int, list[str]], lower: dict[str, int],
              forms: dict[str, Counter]) -> dict[int, list[str]]:
    """Clusters named alike (two one-passage topics both "a list of names", two topics of one
    section, two with the same terms) each get one more word of their own: the best next term
    that no other of them took, as the passages write it when they never write it in lower
    case (a name: "Whitworth"). A cluster whose words are all taken keeps its name."""
    alike: dict[tuple[str, ...], list[int]] = {}
    for c, words in names.items():
        if words:
            alike.setdefault(tuple(words), []).append(c)
    for group in alike.values():
        if len(group) < 2:
            continue
        taken: set[str] = set()
        for c in group:
            for t in dict.fromkeys(more.get(c, [])):
                shown = forms[t].most_common(1)[0][0] if not lower.get(t, 0) and t in forms else t
                if shown.lower() in taken or t in names[c] or shown in names[c]:
                    continue
                taken.add(shown.lower())
                names[c] = names[c] + [shown]
                break
    return names


#: Longest word in capitals shown in capitals (an acronym: "ROFR", "ACDBE"); a longer one is a
#: word set in capitals ("MEXICO" in an address block).
ACRONYM_LETTERS = 5

_CAMEL = re.compile(r"[a-z][A-Z]")


def _as_written(term: str, lower: dict[str, int], forms: dict[str, Counter]) -> str:
    """A term the passages never write in lower case, shown as they write it when that is an
    acronym (2 to :data:`ACRONYM_LETTERS` capitals and at most one small letter: "ROFR",
    "ACDBE", "LLMs") or has a capital after a small letter ("WeChat", "ScanSource"): "rofr" or
    "acdbe" read as a typo (a newcomer asked what they meant)."""
    if lower.get(term, 0) or term not in forms:
        return term
    form = forms[term].most_common(1)[0][0]
    caps = sum(ch.isupper() for ch in form)  # "LLMs": a plural's small "s" aside
    acronym = 2 <= caps <= ACRONYM_LETTERS and len(form) - caps <= 1
    return form if acronym or _CAMEL.search(form) else term


#: The name of a one-passage topic of names (an author line, an affiliation, a party block) with
#: no section title to name it by.
NAMES_TOPIC = "a list of names"


def _by_section(names: dict[int, list[str]], labels: np.ndarray, sections: Sequence[str] | None,
                lower: dict[str, int]) -> dict[int, list[str]]:
    """One-passage topics named by names, and topics without a word, named by their section."""
    size = {int(c): int(n) for c, n in zip(*np.unique(labels[labels >= 0], return_counts=True))}
    for c, words in names.items():
        named = sum(lower.get(t, 0) == 0 for t in words)  # never written in lower case: a name
        of_names = size.get(c, 0) == 1 and bool(words) and 3 * named >= 2 * len(words)
        if words and not of_names:
            continue
        titles = [str(t or "").strip() for t, lab in zip(sections or [], labels.tolist()) if lab == c]
        titles = [t for t in titles if t]
        if titles:
            names[c] = [_section_name(max(set(titles), key=titles.count))]
        elif of_names:
            names[c] = [NAMES_TOPIC]
    return names


def representative_passages(emb: np.ndarray, labels: Sequence[int], n: int = 3) -> dict[int, list[int]]:
    """The passages that show what each cluster is about: its ``n`` members closest (cosine)
    to the cluster's mean embedding, the centroid-nearest "representative documents" of topic
    models (BERTopic shows its representatives beside the c-TF-IDF names). The first members
    in reading order, shown before, were often a section's opening lines, unlike the topic.

    Args:
        emb: float (N, d) passage embeddings (any norm; rows are L2-normalised here).
        labels: int (N,) cluster label per passage (-1 = noise, skipped).
        n: Representatives per cluster (>= 1).

    Returns:
        ``{label: [row index, ...]}``, closest first, at most ``n`` per cluster.

    Raises:
        ValueError: ``emb`` and ``labels`` differ in length, or ``n`` < 1.
    """
    x = np.asarray(emb, dtype=np.float32)
    lab = np.asarray(labels, dtype=np.int64)
    if x.ndim != 2 or x.shape[0] != lab.shape[0]:
        raise ValueError(f"emb has {x.shape[0] if x.ndim else 0} rows for {lab.shape[0]} labels")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    out: dict[int, list[int]] = {}
    for c in np.unique(lab[lab >= 0]):
        rows = np.flatnonzero(lab == c)
        centre = x[rows].mean(axis=0)
        sims = x[rows] @ (centre / max(float(np.linalg.norm(centre)), 1e-12))
        out[int(c)] = rows[np.argsort(-sims, kind="stable")[:n]].tolist()
    return out
