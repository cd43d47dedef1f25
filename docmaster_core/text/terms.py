"""Word tokens of conditions and passages, shared by lexical retrieval (BM25) and the
filter's lexical evidence: lower-case tokens with hyphenated words split and joined,
and a condition's topic terms (stop words removed)."""
from __future__ import annotations

import functools
import re
from collections import Counter

__all__ = ["STOPWORDS", "GENERIC_NAME_WORDS", "name_words", "tokens", "token_counts", "condition_terms"]

_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

#: Words that carry no topic in a filter condition.
STOPWORDS = frozenset(
    """a an the of on in or and to for with by as is are be been being was were does do did has have had
    paper papers document documents article report its it their they them this that these those such e g i
    ie eg example examples via into from at than then there which who whom whose what when where why how any
    all some each other own same so not no nor only also can could should would may might must will shall
    one ones""".split()
)


#: Capitalised words that name a kind of place, party or document, not a particular one ("the
#: *State* of California", "the *People's Republic* of China", "the *Agreement*"): never a name a
#: condition or a question requires (filtering.evidence.condition_names, text.answer_units.question_names).
GENERIC_NAME_WORDS = frozenset(
    "state states united kingdom republic people people's peoples commonwealth county province city federal "
    "agreement agreements contract contracts company party parties section article exhibit schedule paper papers "
    "document documents".split())


# in a clause holding one of these, a capitalised word is one alternative or an example, not a must:
# "board games (chess, Go)", "attention or Transformer layers", "models such as PaLM"
_ALTERNATIVES = re.compile(r"\b(?:or|such as|for example|for instance|e\.\s?g\.|including|like|either)\b", re.IGNORECASE)


def name_words(text: str, identifiers: bool = False) -> list[str]:
    """The words a condition or question writes as names it requires: capitalised, not in
    capitals (an abbreviation a document may spell out; with ``identifiers``, a word in
    capitals holding a digit is a name: "BM25", "P100" in a question; a condition's "of
    GPT-3 scale" names a size, not a model every match must mention), not the first word of a sentence,
    outside parentheses and outside a clause that lists alternatives or examples ("such as",
    "for example", "e.g.", "or", "including"), and not a word for a kind of place, party or
    document (:data:`GENERIC_NAME_WORDS`): "Japan" in "governed by the laws of Japan",
    "California" in "... the State of California"; none in "benchmarks (e.g. Natural
    Questions, TriviaQA)" or "attention or Transformer layers".

    Returns:
        The words as written, in text order.
    """
    text = re.sub(r"\([^)]*\)", " ", text or "")
    out: list[str] = []
    for clause in re.finditer(r"[^,;:]+", text):
        if _ALTERNATIVES.search(clause.group(0)):
            continue
        for m in re.finditer(r"[A-Za-z][A-Za-z0-9'’\-]*", clause.group(0)):
            w = m.group(0)
            before = text[:clause.start() + m.start()].rstrip()
            if not before or before[-1] in ".?!" or not w[:1].isupper():
                continue
            if w.isupper() and not (identifiers and any(ch.isdigit() for ch in w)):  # "BM25" in a question
                continue
            if w.lower().rstrip("'’s") in GENERIC_NAME_WORDS or w.lower() in GENERIC_NAME_WORDS:
                continue
            out.append(w)
    return out


def tokens(text: str) -> list[str]:
    """Lower-case word tokens; a hyphenated word gives its parts and the joined form."""
    out: list[str] = []
    for w in _TOKEN.findall((text or "").lower()):
        if "-" in w:
            parts = [p for p in w.split("-") if p]
            out.extend(parts)
            out.append("".join(parts))
        else:
            out.append(w)
    return out


@functools.lru_cache(maxsize=1 << 16)
def token_counts(text: str) -> dict[str, int]:
    """Occurrences of each :func:`tokens` token of ``text``, memoised: the same passage
    is scored by several strategies, condition parts and conditions (65,536 texts kept).
    Callers must not modify the result."""
    return dict(Counter(tokens(text)))


def condition_terms(condition: str) -> list[str]:
    """The distinct topic terms of a condition (stop words and 1-character tokens removed), in order."""
    seen: dict[str, None] = {}
    for t in tokens(condition):
        if t not in STOPWORDS and len(t) > 1:
            seen.setdefault(t, None)
    return list(seen)
