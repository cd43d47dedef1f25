"""Answer support: which passages answer a question, which words to quote, and when
the documents do not hold the answer.

Used by :func:`docmaster_core.qa.ask.ask` (passage selection and the offline
decline decision) and by the offline answerer (sentence choice, :func:`rank_answer_units`).

Signals (all computed per *unit*: a sentence of a passage, or one row of a table
rendered with its column headers, ``"OpenAI GPT | MNLI: 82.1 | ... | Average: 75.1"``):

- **term coverage**: the question's content terms (light-stemmed, question words and
  generic verbs dropped) found in the unit, each weighted by its inverse document
  frequency over the nodes of the searched document(s) (the *document background*),
  divided by the total weight of the question's terms; a term the document never uses
  gets the largest weight, so a question about something the document does not
  mention keeps a low coverage everywhere;
- **answer type**: a number for "how many / how much / what score ..." questions (with
  the asked unit when the question names one, "in dollars", "in milliseconds"), an
  equation or ``=`` for formula questions, a caption for "which figure/table" questions;
- **similarity**: the embedding cosine of the unit with the question.

Passages are ranked by their best unit's support (plus their own coverage), so the
passage quoted first is the one whose words answer, not only the most similar one.
"""
from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .terms import GENERIC_NAME_WORDS, name_words
from .words import normalize_ws, split_sentences

__all__ = ["QuestionProfile", "profile_question", "terms_of", "Background", "doc_background", "table_rows",
           "passage_units", "UnitScores", "score_units", "Verdict", "verdict", "NOT_FOUND_PREFIX",
           "rank_answer_units", "names_place", "names_hardware", "askers_words", "question_names", "range_holds",
           "states_bound", "bounded_quantity", "states_asked_bound", "CLIPPINGS"]

NOT_FOUND_PREFIX = "The documents do not say"

_WORD = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*")
_NUM = re.compile(r"(?<![a-z])\d[\d,]*(?:\.\d+)?")

# question words, auxiliaries, pronouns and generic verbs/nouns that carry no topic
_STOP = set("""
a an the of to in on at by for from with without into onto over under about as and or but nor not no non
is are was were be been being am do does did done doing has have had having can could may might must shall
should will would what which who whom whose when where why how that this these those there here it its
they them their we our you your he she his her i me my one ones than then so such also very much many
any some each every all both either neither other another more most less least few
use used uses using give gives given giving obtain obtains obtained reach reaches reached achieve achieves
achieved get gets got make makes made take takes taken took involve involved involves depict depicts
depicted show shows shown showed describe described describes report reported reports according
mention mentioned mentions say says said state stated states value number amount kind type paper need needs needed
ask asks asked carry carries carried apply applies applied begin begins began start starts started end ends ended
document documents article work study authors author section figure table main specific exactly
typically normally now happen happens happened latest earliest
if whether unless until upon within before after during while
nobody anybody anyone someone somebody everyone everybody something anything everything up
go goes going went gone come comes coming came let lets letting put puts putting
through throughout across along toward towards via among around
""".split())  # the last lines: light verbs, as "get", "make", "take" ("go after", "come up with"; not "keep",
# which may ask what a party retains: "What percentage does Kubient keep?"), and prepositions ("goes *through* a change
# of control")

# words that qualify what is asked ("the *total* fee") but never carry it: a document that never uses
# them may still answer (its fee clause gives the one fee); a document that does use them is preferred
_QUALIFIERS = {"total", "overall", "full", "exact", "precise", "actual", "initial"}
#: The asker's names for the document itself ("under their co-branding *deal*"): a contract that calls itself an
#: "Agreement" answers a question about the deal all the same.
_DOCUMENT_KIND_WORDS = {"deal", "deals", "contract", "contracts", "pact", "arrangement", "arrangements"}
_ASKERS_FRAME_WORDS = _QUALIFIERS | _DOCUMENT_KIND_WORDS

_NUMBER_Q = re.compile(
    r"^(?:how (?:many|much|long|soon|fast|large|big|old|often|far|high|low|deep|wide)\b|in what year\b|when\b|"
    r"(?:(?:to|by|at|of|with) )?what (?:is |was |are |were )?(?:the )?(?:[\w'\u2019]+[ -]){0,4}?(?:percentage|percent|"
    r"fraction|proportion|ratio|score|error|accuracy|rate|size|speedup|speed-up|number|cost|price|latency|throughput|"
    r"bleu|f1|iou|perplexity|recall|precision|auc|ndcg|mrr|rmse|mae|mse|wer|rouge|"
    r"revenues?|sales|income|footprint|length|duration|count|momentum|temperature|value|dimension|dimensionality|"
    r"learning rate|batch size|interval|range|timeout|budget|parameters?|term|period)\b)", re.I)
# a phrase that sets the scene before the question proper ("Under the 1999 amendment, how long ...", "In
# Cargill's development agreement with Bioamber, how much ..."): the answer type is read after it
_LEADING_PHRASE = re.compile(r"^\s*(?:under|in|for|according to|per|pursuant to|regarding|with respect to|as to|"
                             r"within|by|on|from)\b[^?]{0,250}?,\s+"
                             r"(?=(?:(?:to|by|at|of|with)\s+)?(?:how|what|which|when|who|where|until)\b)",
                             re.I)
# the verbs of a "how long" question that only say "for what length of time"
_DURATION_VERBS = re.compile(r"\b(?:last|lasts|run|runs|continue|continues|remain|remains|stay|stays|endure|endures)\b",
                             re.I)
# "until what date does it run / last": the verb, as in "how long", says "for what length of time"; a document
# that never uses it still answers (a verdict's qualifier), one that does ("shall continue until") matches it
_UNTIL_Q = re.compile(r"\b(?:until|till|through) (?:what|which) (?:date|day|month|year|time)\b|\buntil when\b|"
                      r"^\s*(?:on )?(?:when|what date) (?:does|do|will|did)\b", re.I)
# ... and "when does it expire / end": a contract says "shall end as of December 31, 2000" as often as "expires"
_END_VERBS = re.compile(r"(?:expire|expires|terminate|terminates)", re.I)
# a term or a period is asked as a length of time ("the initial term", "the notice period")
_DURATION_Q = re.compile(r"^\s*(?:for )?how (?:long|soon)\b|\b(?:term|period|duration)\b", re.I)
# "how long did the sort take": the answer is a length of time, nothing else ("1 terabyte of data" is no answer);
# "how long is a row key" may be a size, "how long does the agreement last" may be "until terminated"
_TAKE_Q = re.compile(r"^\s*(?:for )?how long\b[^?]*\b(?:take|takes|took|taken)\b", re.I)
# "how often": a frequency; "how old": an age (each raises the units that give one, as "how long" a duration does)
_FREQUENCY_Q = re.compile(r"^\s*how (?:often|frequently)\b|\bat what (?:frequency|intervals?)\b", re.I)
_AGE_Q = re.compile(r"^\s*how old\b|\bat what age\b|\bwhat (?:is|was|were|are) (?:the )?(?:[\w'\u2019]+ ){0,3}?ages?\b",
                    re.I)
_FORMULA_Q = re.compile(r"\b(?:formula|equation|computed|compute|calculated|calculate|defined as|expression|"
                        r"loss function|objective|recast)\b", re.I)
_CAPTION_Q = re.compile(r"\b(?:which|what) (?:figure|table|fig\.?)\b|\b(?:figure|fig\.|table) \d+\b", re.I)
# "which state's law", "in what country", "which courts": the answer is a place; the class noun
# ("state", "jurisdiction") is what a place answers, so a unit naming a place covers it
_PLACE_Q = re.compile(r"\b(?:which|what|whose)\s+(?:[a-z]+\s+)?(state|country|jurisdiction|city|courts?|place|location|"
                      r"venue|county|province|nation|territory|forum)(?:'s|s'|\u2019s|s)?\b|"
                      r"\b(?:which|what)\s+(laws?)\s+(?:govern|appl|control)", re.I)
# "on what hardware were the models trained", "which GPU did they run ... on", "what kind of machine": the answer
# names computing hardware (a sentence far from the question in meaning: "on one machine with 8 NVIDIA P100 GPUs")
_HARDWARE_Q = re.compile(r"\b(?:what|which)\s+(?:kind of\s+|type of\s+|sort of\s+)?(?:hardware|machines?|computers?|"
                         r"gpus?|cpus?|tpus?|npus?|accelerators?|processors?)\b", re.I)
_HARDWARE_A = re.compile(r"\b(?:[gtn]pus?|cpus?|\d+(?:\.\d+)?\s?(?:[mg]hz|gb|tb)|ram|nvidia|intel|amd|xeon|pentium|"
                         r"titan|tesla|[vpakh]100|k80|ascend|workstations?|processors?|\d+[- ]cores?)\b", re.I)


def names_hardware(text: str) -> bool:
    """Whether a text names computing hardware ("8 NVIDIA P100 GPUs", "a 600 MHz machine
    with 2GB of RAM", "350 Ascend 910B-3 NPUs"): the answer to a hardware question."""
    return bool(_HARDWARE_A.search(text))


# a place named in a unit: "laws of the State of Indiana", "courts of Tel-Aviv", "in McLean, Virginia", "Delaware law"
_GENERIC_CAP = ("Agreement", "Party", "Parties", "This", "Such", "Any", "Each", "The", "Governing", "Applicable",
                "Choice", "Company", "Section", "Article", "Schedule", "Exhibit")
_PLACE_A = re.compile(
    r"\b(?:[Ll]aws?|[Cc]ourts?|[Ss]tate|[Cc]ommonwealth|[Pp]rovince|[Rr]epublic|[Kk]ingdom|[Cc]ounty|[Cc]ity|"
    r"[Cc]ountry|[Tt]erritory)\s+of\s+(?:the\s+)?(?:(?:State|Commonwealth|Province|Republic)\s+of\s+)?"
    r"(?!(?:%s)\b)[A-Z][\w'\u2019.-]+|"
    r"\b(?:in|at)\s+[A-Z][A-Za-z]+(?:\s+[A-Z][A-Za-z]+)?,\s+(?:[A-Z][a-z]+|[A-Z]{2})\b|"
    r"\b(?!(?:%s)\b)(?:[A-Z]{2,}|[A-Z][a-z]{2,})\s+[Ll]aws?\b|"
    # ... or one the clause describes: "the laws of the state in which Franchisor has its principal place of
    # business", "the courts of the country where the Licensee is incorporated"
    r"\b(?:[Ll]aws?|[Cc]ourts?)\s+(?:of|in)\s+the\s+(?:[Ss]tate|[Cc]ountry|[Jj]urisdiction|[Pp]rovince|[Cc]ounty)\s+"
    r"(?:in\s+which|where|of\s+(?:its|the)\s+(?:domicile|incorporation|residence))\b"
    % ("|".join(_GENERIC_CAP), "|".join(_GENERIC_CAP)))

# an asked unit: canonical name -> spellings that show a passage gives it
UNITS: dict[str, tuple[str, ...]] = {
    "dollar": ("$", "dollar", "usd", "us$"),
    # "at what price": an amount, or a share of another price ("at eighty percent (80%) of the net price")
    "price": ("$", "dollar", "usd", "us$", "€", " euro", " eur ", "£", " rmb", "%", "percent"),
    "euro": ("€", "euro", "eur"),
    "tonne": ("tonne", "tons", "ton", "tco2"),
    "co2": ("co2", "co 2", "carbon dioxide"),
    "kwh": ("kwh", "kilowatt", "mwh", "joule"),
    "millisecond": ("ms", "millisecond", "msec"),
    "second": ("second", "sec", " s "),
    "minute": ("minute", "min"),
    "hour": ("hour", "hrs", " h "),
    "day": ("day",),
    "week": ("week",),
    "year": ("year",),
    "byte": ("byte", "kb", "mb", "gb", "tb", "octet"),
    "percent": ("%", "percent"),
    "parameter": ("parameter", "param"),
    "duration": ("second", "minute", "hour", "day", "week", "month", "year", "epoch", "step", "iteration",
                 " ms ", " s ", " h "),
    # "how often": a frequency, with or without a number ("Clean drip tray daily", "once per calendar quarter",
    # "an interspecies mating rate of 0.001")
    "frequency": ("daily", "weekly", "monthly", "yearly", "annually", "hourly", "quarterly", "nightly", "every ",
                  "each day", "each week", "each month", "each year", "per day", "per week", "per month", "per year",
                  "per hour", "per quarter", "a day", "a week", "a month", "a year", "once", "twice", " times ",
                  " rate", "frequen", "interval"),
    # "how old": an age ("Age: 67", "a 67-year-old pilot", "aged 45")
    "age": ("age", "aged", "year-old", "years old", "years of age", " yrs"),
}
_UNIT_Q = re.compile(
    r"\b(?:in|of|per|much|many(?: [\w\-]+){0,2}) (?:(?:us|u\.s\.) )?(dollars?|usd|euros?|tonnes?|tons?|kilowatt[- ]hours?|kwh|"
    r"milliseconds?|ms|seconds?|minutes?|hours?|days?|weeks?|years?|bytes?|kilobytes?|megabytes?|"
    r"gigabytes?|percent|percentage)\b|\b(co2)\b|\b(monetary|price|dollar(?=\s+(?:cost|costs|amount|value|total)\b))\b",
    re.I)
# a question for a sum of money or a rate ("How much does Square Two Golf pay Kathy Whitworth", "What royalty
# does Glu pay Fox"): the answer gives an amount of money or a percentage (``UNITS["price"]``); "how much
# notice / time" asks for a duration
_MONEY_Q = re.compile(
    r"^(?:how much\b(?:(?!\b(?:notice|time|days?|weeks?|months?|years?|interest in)\b)[^?])*?\b(?:pay|pays|paid|charge|"
    r"charges|charged|cost|costs|earn|earns|earned|receive|receives|owe|owes|owed)\b|what (?:is |was |are |were )?"
    r"(?:the )?(?:(?!(?:purpose|reason|basis|effect|method|process|way|structure|schedule|type|kind|nature|"
    r"definition|meaning|calculation|formula|timing)\b)[\w\-'’]+ ){0,5}?(?:fee|fees|royalty|royalties|commission|"
    r"commissions|compensation|salary|rent|price|prices|purchase price|deposit)"
    r"(?:\s+(?:rate|rates|percentage|amount|payment))?"
    r"(?=\s+(?:does|do|did|is|are|was|were|must|shall|will|would|can|under|for|per|paid|payable|owed|due|that|in|to|"
    r"on|of)\b|(?-i:\s+[A-Z])|\s*[?,]|\s*$))", re.I)
_UNIT_CANON = {"usd": "dollar", "tons": "tonne", "ton": "tonne", "kilowatt": "kwh", "ms": "millisecond",
               "kilobyte": "byte", "megabyte": "byte", "gigabyte": "byte", "percentage": "percent",
               "monetary": "dollar"}


# derivational endings that make a noun of a verb: "termination" / "terminate", "renewal" / "renew",
# "payment" / "pay", "insurance" / "insured" share a stem
_DERIV = (("ation", "at"), ("ment", ""), ("ance", ""), ("ence", ""), ("wal", "w"), ("val", "v"), ("sal", "s"),
          ("ality", "al"))  # "confidentiality" / "confidential", "dimensionality" / "16-dimensional"

#: A number joined to a word: "16-dimensional", "12-layer" (its parts are terms, as a compound's)
_NUMBERED_WORD = re.compile(r"\d+(?:\.\d+)?-[a-z][a-z\-]*")

#: Clipped words and the words they clip ("spec" for "specification"): an asker writes the short form, a
#: document the long one (or the other way round); both give the long word's stem.
CLIPPINGS = {"spec": "specification", "specs": "specifications", "info": "information", "config": "configuration",
             "configs": "configurations", "repo": "repository", "repos": "repositories", "stats": "statistics",
             "param": "parameter", "params": "parameters", "promo": "promotion", "promos": "promotions",
             "ads": "advertisements", "admin": "administration", "dept": "department", "govt": "government",
             "mgmt": "management", "intl": "international", "corp": "corporation", "approx": "approximately"}


@functools.lru_cache(maxsize=1 << 16)
def _stem(w: str) -> str:
    """A light English stemmer: an irregular verb form to its lemma first (``paid`` -> ``pay``,
    ``held`` -> ``hold``, ``owed`` -> ``owe``; simplemma's English dictionary, Barbaresi 2021), then
    plural and verb endings (``models`` -> ``model``) and a noun's derivational ending
    (``termination`` and ``terminate`` -> ``terminat``). Memoised (65,536 words)."""
    if w[0].isdigit():
        return w
    lemma = _lemma(w) if len(w) >= 3 else ""  # not abbreviations: "ai", "cm", "na"
    regular = bool(lemma) and w.startswith(lemma[:-1] if lemma.endswith("e") else lemma)
    if lemma and lemma != w and lemma.isalpha() and lemma.islower() and not regular:
        w = lemma  # an irregular form: "paid", "held", "sold", "ran" (a regular one is left to the rules below)
    elif w.endswith("ed") and len(w) <= 5 and lemma and w.startswith(lemma):
        w = lemma  # a short regular form the rules below keep whole: "owed" -> "owe", "used" -> "use"
    if len(w) <= 3:
        return w
    for suf, rep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not w.endswith("ss") and not w.endswith("us"):
            w = w[: len(w) - len(suf)] + rep
            break
    for suf, rep in _DERIV:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[: len(w) - len(suf)] + rep
            break
    else:
        w = _able_base(w)
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def _able_base(w: str) -> str:
    """An adjective in -able / -ible (and its noun in -ability / -ibility) to the verb it comes
    from, when English has that verb (simplemma's dictionary, Barbaresi 2021): "terminable" ->
    "terminate" (as "termination"), "assignable" -> "assign", "enforceable" -> "enforce";
    "liability" -> "liable"; ``w`` itself otherwise ("capable" keeps its ending: the base must
    have 4+ letters)."""
    for suf, rep in (("ability", "able"), ("ibility", "ible")):
        if w.endswith(suf) and len(w) - len(suf) >= 2:
            w = w[: len(w) - len(suf)] + rep
            break
    if not w.endswith(("able", "ible")) or len(w) - 4 < 4:
        return w
    base = w[:-4]
    for verb in (base + "ate", base):  # not base + "e": "responsible" is no "response", "possible" no "posse"
        if _known(verb):
            return verb[:-1] if verb.endswith("ate") else verb
    return w


@functools.lru_cache(maxsize=4096)
def _known(word: str) -> bool:
    """Whether simplemma's English dictionary holds ``word`` (False when simplemma is missing)."""
    try:
        import simplemma
    except ImportError:  # pragma: no cover - a pinned dependency (requirements.txt)
        return False
    return bool(simplemma.is_known(word, lang="en"))


def _lemma(word: str) -> str:
    """simplemma's English lemma of a lower-case word ("" when simplemma is missing)."""
    try:
        import simplemma
    except ImportError:  # pragma: no cover - a pinned dependency (requirements.txt)
        return ""
    return simplemma.lemmatize(word, lang="en")


@functools.lru_cache(maxsize=4096)
def is_lay_word(word: str) -> bool:
    """True for a lower-case word that English uses only as a verb, an adjective or an adverb,
    never as a noun (LemmInflect's lexicon, Jascob 2019: "owe", "barred", "settles", "liable",
    "competing", "early"): what a question says with it, a document says in its own words
    ("shall pay", "shall not compete"); what a question asks *about* is a noun ("insurance",
    "penalty", "cap"). False for an unknown word, a capitalised one, a number, or when
    LemmInflect is missing."""
    if not word or not word.islower() or not word.isalpha():
        return False
    try:
        from lemminflect import getAllLemmas
    except ImportError:  # pragma: no cover - a pinned dependency (requirements.txt)
        return False
    pos = set(getAllLemmas(word))
    return bool(pos) and not pos & {"NOUN", "PROPN"}


# a number written with thousands separators or zero decimals ("$250,000.00"): one term, "250000"
_GROUPED_NUM = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,]|\.\d)|(?<![\w.,])\d+\.0+(?![\w.,]|,\d)")


def _plain_number(m: re.Match) -> str:
    n = m.group(0).replace(",", "")
    return n.rstrip("0").rstrip(".") if "." in n else n


def terms_of(text: str, keep_stop: bool = False) -> list[str]:
    """Stemmed content words of a text, in order (lower-cased; hyphenated words also
    give their parts; stop words and question words, and their plurals ("types"), dropped unless
    ``keep_stop``; a number is one term however its thousands and decimals are written: "$250,000"
    and "$250,000.00" give "250000"; a clipped word as the word it clips, :data:`CLIPPINGS`)."""
    out: list[str] = []
    for tok in _WORD.findall(_GROUPED_NUM.sub(_plain_number, (text or "").lower())):
        # a compound ("bert-base", "phc-u373") counts by its parts; a number keeps its dots
        parts = [tok] if ((tok[0].isdigit() and not _NUMBERED_WORD.fullmatch(tok)) or ("-" not in tok and "." not in tok)
                          ) else [p for p in re.split(r"[.\-]", tok) if p]  # "16-dimensional": "16", "dimensional"
        for p in parts:
            if not keep_stop and (p in _STOP or (p[-1:] == "s" and p[:-1] in _STOP) or (len(p) < 2 and not p.isdigit())
                                  or (p.endswith("ly") and len(p) > 5)):
                continue
            out.append(_stem(CLIPPINGS.get(p, p)))
    return out


@dataclass
class QuestionProfile:
    """What a question asks for.

    Attributes:
        text: The question, whitespace-normalised.
        terms: Distinct stemmed content terms.
        answer_type: ``"number"``, ``"formula"``, ``"caption"``, ``"place"`` (which
            state / country / jurisdiction / court, which law governs), ``"hardware"`` (on
            what hardware / which GPU / what kind of machine) or ``"description"``.
        units: Canonical asked units (keys of :data:`UNITS`), e.g. ``["dollar"]``; a question
            for a sum of money or a rate ("how much does A pay B", "what royalty ...") asks
            for ``["price"]`` (an amount of money or a percentage, ``_MONEY_Q``).
        numbers: Numbers written in the question (not an answer when found again).
        words: ``{term: the question's word}`` (for messages).
        soft_units: Units implied but not named ("how long" -> ``duration``, "how often" ->
            ``frequency``, "how old" -> ``age``): they raise the type match of a unit that gives
            one (a frequency also without a number: "daily"), but never decide "not found".
            "How long did X take" asks for ``duration`` outright (in ``units``).
        class_terms: The terms that name the kind of answer of a ``"place"`` question
            ("jurisdiction" in "which jurisdiction's law"): a unit that names a place
            covers them (the document says "Indiana", not "jurisdiction").
        counted: Stems of the noun a "how many / how large" question counts or
            measures ("datasets" in "how many datasets are included", "database" in "how
            large is the retrieval database"): a number written beside that noun answers it.
        amount_of: Stems of the noun a "how much" question asks the amount of ("notice" in
            "how much notice must the licensee give"): a number written beside that noun
            ("sixty (60) days' written notice") answers it before a number of something else
            ("for twenty-four (24) months following termination ... such other notice"). Unlike
            ``counted``, a document without such a number is not "not found" for it
            (contracts write "ninety days' notice" in words too).
        bound: ``"upper"`` when the question asks for an upper bound ("the *cap* on each
            party's damages", "the *maximum* liability", "the *limit* of the licensor's
            liability"), else ``""`` (:func:`states_bound`). Not for a lower bound ("the
            *minimum* insurance"): contracts write "at least" of notice periods in the
            same sentences as what they bound, and the documents mostly say "minimum"
            themselves (measured: one answer lost, none gained; docs/results/qa.md).
        bound_terms: The question's terms that name the bound ("cap", "maximum", "limit",
            "ceiling"): a sentence that states an upper bound on the bounded quantity
            covers them (the contract says "shall not exceed $1,000,000", not "cap").
        bounded: Stems of the quantity the bound is on (:func:`bounded_quantity`: "damag" in
            "the cap on each party's damages", "liability" in "the liability cap").
    """

    text: str
    terms: list[str]
    answer_type: str
    units: list[str] = field(default_factory=list)
    numbers: set[str] = field(default_factory=set)
    words: dict[str, str] = field(default_factory=dict)
    soft_units: list[str] = field(default_factory=list)
    class_terms: list[str] = field(default_factory=list)
    counted: list[str] = field(default_factory=list)
    amount_of: list[str] = field(default_factory=list)
    bound: str = ""
    bound_terms: list[str] = field(default_factory=list)
    bounded: list[str] = field(default_factory=list)


def profile_question(question: str) -> QuestionProfile:
    """The :class:`QuestionProfile` of a question (rules, no model)."""
    q = normalize_ws(question)
    # "how long / how many ..." ask for a quantity: "long", "many" are no topic terms
    topic = re.sub(r"\bhow (?:many|much|long|soon|fast|large|big|old|often|far(?: in advance)?|high|low|deep|wide)\b",
                   " ", q, flags=re.I)
    if re.search(r"\bhow long\b", q, re.I):
        # "how long does it last / run / stay in force": the verb is the length of time asked,
        # not a topic: a contract gives "a term of two years" and seldom says that it "lasts"
        topic = _DURATION_VERBS.sub(" ", topic)
    # "which of these contracts ...": the noun names the documents asked over, not a topic; "contain a
    # non-compete clause": the verb and the noun frame the kind of clause asked about
    topic = _CLAUSE_FRAME.sub(r" \1 ", _SCOPE_NOUN.sub(r"\1 ", topic))
    terms = list(dict.fromkeys(terms_of(topic)))
    # the question's frame after a leading phrase: "Under the Dexcel-Kitov agreement, *how much notice* ..."
    core = _LEADING_PHRASE.sub("", q, count=1)
    if _CAPTION_Q.search(q) and (re.match(r"^\s*(?:which|what) (?:figure|table|fig)", q, re.I) or re.search(
            r"\b(?:show|shows|depict|depicts|illustrate|illustrates|present|presents|report|reports|"
            r"summari[sz]e|summari[sz]es)\??$", q, re.I)):
        atype = "caption"
    elif _FORMULA_Q.search(q):
        atype = "formula"
    elif _NUMBER_Q.search(core):
        atype = "number"
    elif _HARDWARE_Q.search(q):
        atype = "hardware"
    elif _PLACE_Q.search(q):
        atype = "place"
    elif _NAME_Q.search(core):
        atype = "name"
    else:
        atype = "description"
    classes = []
    if atype == "place":
        m = _PLACE_Q.search(q)
        classes = [t for t in terms_of(m.group(1) or m.group(2) or "") if t in terms]
    units = []
    for m in _UNIT_Q.finditer(q):
        u = (m.group(1) or m.group(2) or m.group(3) or "").lower().replace(" ", "-")
        u = u.rstrip("s") if u not in ("ms",) else u
        u = _UNIT_CANON.get(u, u)
        if u.startswith("kilowatt"):
            u = "kwh"
        if u in UNITS and u not in units:
            units.append(u)
    if not units and _MONEY_Q.search(core):
        units = ["price"]  # "how much does A pay B", "what royalty ...": an amount of money or a percentage
    if _TAKE_Q.search(core) and "duration" not in units:
        units.append("duration")  # "how long did the sort take": a length of time or nothing
    if units and atype == "description":
        atype = "number"
    soft = [u for u, rx in (("duration", _DURATION_Q), ("frequency", _FREQUENCY_Q), ("age", _AGE_Q))
            if atype == "number" and rx.search(core)]
    words: dict[str, str] = {}
    for tok in re.findall(r"[A-Za-z0-9]+", q):
        for t in terms_of(tok):
            words.setdefault(t, tok)
    counted: list[str] = []
    m = _COUNTED_Q.search(q)
    loose = None if m else _COUNTED_LOOSE_Q.search(q)
    if m or loose:
        # a capitalised word is a name ("the retrieval database Retro uses"), not the noun
        noun = [w for w in re.findall(r"[A-Za-z][A-Za-z\-]*", m.group("noun") or m.group("noun2") if m
                                      else loose.group("noun"))
                if w.lower() not in _STOP and not (w[:1].isupper() and w[1:].islower())]
        # the counted noun ends at its first plural ("how many students took part": "students", not "part";
        # "MCTS" is no plural)
        plural = next((k for k, w in enumerate(noun) if w.islower() and len(w) > 3 and w.endswith("s")
                       and not w.endswith("ss")), None)
        if loose and plural is None:  # "how many ... make up": only a plural is surely the counted noun
            noun = []
        noun = [w.lower() for w in (noun[:plural + 1] if plural is not None else noun)]
        counted = [_stem(noun[-1])] if noun else []
    amount = _AMOUNT_OF_Q.search(q) if atype == "number" and not counted else None
    amount_of = [_stem(amount.group(1).lower())] if amount and amount.group(1).lower() not in _AMOUNT_GENERIC else []
    bound = "upper" if _UPPER_BOUND_Q.search(core) else ""
    bound_terms = [t for t in terms if t in _BOUND_WORDS] if bound else []
    return QuestionProfile(q, terms, atype, units, set(_NUM.findall(q)), words, soft, classes, counted, amount_of,
                           bound, bound_terms, bounded_quantity(q) if bound_terms else [])


_HOW_MANY = re.compile(r"\bhow many\b", re.I)
# "how much *notice* must ...", "how much *compensation* is ...": the noun whose amount is asked (one lower-case
# word before a verb or a preposition; not "how much at most", "how much is the fee")
_AMOUNT_OF_Q = re.compile(r"\bhow much (?-i:([a-z][a-z\-]+))(?= (?:does|do|did|is|are|was|were|must|shall|should|can|"
                          r"could|will|would|may|has|have|had|in|of|per|for|on|to|with|under|before|after)\b|\?)", re.I)
# ... not a word that says only "an amount" ("how much money", "how much more")
_AMOUNT_GENERIC = {"money", "more", "less", "time", "longer", "each", "total", "further"}


# A question asking for an upper bound: "What is the *cap* on each party's damages?", "the *maximum*
# liability", "the *limit* of the licensor's liability", "What is the *most* either side can owe?"
_UPPER_BOUND_Q = re.compile(r"\b(?:caps?|capped|ceilings?|maximum|max|upper limit|limit(?:s|ed)?\s+(?:of|on|to)|"
                            r"at most|(?:what|how much)(?:'s|\s+is|\s+was)?\s+the\s+most)\b", re.I)
# ... and the question's words that name the bound ("cap", "ceiling", "maximum", "limit"; stemmed in _BOUND_WORDS)
_BOUND_NOUNS = ("cap", "ceiling", "limit", "maximum", "max")
_BOUND_WORDS = {t for w in _BOUND_NOUNS + ("caps", "capped") for t in terms_of(w)}
# A sentence that states an upper bound: "shall not exceed $1,000,000", "limited to the amount of all fees actually
# received", "up to $250,000", "to a maximum of", "in excess of", "in no event more than"
_UPPER_BOUND_S = re.compile(r"\b(?:exceed(?:s|ed|ing)?|in excess of|(?:up|limited|capped|restricted) to|at most|"
                            r"(?:no|not)(?: \w+)? (?:more|greater|higher) than|maximum|cap(?:ped)?|ceiling)\b", re.I)


def states_bound(text: str, bound: str) -> bool:
    """Whether ``text`` states a bound of direction ``bound`` (``"upper"``: "shall not exceed",
    "limited to", "up to", "a maximum of", "in no event more than"); False for any other
    ``bound``."""
    return bound == "upper" and bool(_UPPER_BOUND_S.search(text))


# words between a bound and the quantity it bounds ("the cap on *each party's total* liability") and words
# that end the quantity's noun phrase ("the minimum insurance *under* the agreement")
_QUANTITY_SKIP = {"the", "a", "an", "each", "either", "any", "its", "their", "his", "her", "our", "total", "overall",
                  "aggregate", "annual", "yearly", "monthly", "amount", "level"}
_QUANTITY_END = {"under", "in", "for", "of", "on", "to", "that", "which", "who", "does", "do", "did", "must", "can",
                 "could", "may", "is", "are", "was", "will", "would", "shall", "should", "before", "after", "between",
                 "with", "per", "if", "when", "and", "or", "by", "from", "at"}


def bounded_quantity(question: str) -> list[str]:
    """The quantity a question asks the upper bound of, stemmed: the head noun of the phrase
    after the bound word ("the cap on each party's *damages*", "the maximum product liability
    *insurance*", "the limit of the licensor's *liability*") or the noun before it ("the
    *liability* cap"); ``[]`` when there is none ("Is there a cap?")."""
    low = [t.lower() for t in re.findall(r"[A-Za-z][\w'’\-]*", question)]
    for i, t in enumerate(low):
        if t.rstrip("s") not in _BOUND_NOUNS:
            continue
        k = i + 1 + (i + 1 < len(low) and low[i + 1] in ("on", "of", "for", "to"))
        head = ""
        for w in low[k:k + 6]:
            if w in _QUANTITY_END or (head and w.endswith("ed")):  # "the maximum gap *allowed* between ..."
                break
            if w in _QUANTITY_SKIP or w.endswith(("'s", "’s", "s'")) or w.rstrip("s") in _BOUND_NOUNS:
                continue  # "the maximum aggregate liability *cap*": liability
            if not terms_of(w):  # a stop word ends it: "the maximum volume *it* may order"
                break
            head = w
        if not head and i > 0 and low[i - 1] not in _QUANTITY_SKIP and low[i - 1] not in _QUANTITY_END:
            head = low[i - 1]  # "the liability cap"
        if head:
            return list(terms_of(head))
    return []


def states_asked_bound(profile: QuestionProfile, text: str) -> bool:
    """Whether the sentence ``text`` states the bound ``profile`` asks for (:func:`states_bound`)
    on the quantity it asks about (``profile.bounded``, which ``text`` must name). "EACH PARTY'S
    LIABILITY FOR DAMAGES HEREUNDER SHALL NOT EXCEED $1,000,000" states the cap on damages; "no
    appearance shall exceed a total of two (2) hours" states no cap on liability."""
    return bool(profile.bounded) and states_bound(text, profile.bound) and set(profile.bounded) <= set(terms_of(text))


# "which language model is used ...", "what optimizer was used": the answer names a model, mostly versioned
# ("gpt-3.5-turbo", "GPT-4", "ResNet-50", "BM25", "T5"): a sentence that writes such a name fits
_NAME_Q = re.compile(r"^\s*(?:which|what)\s+(?:[\w\-]+\s+){0,2}?(?:models?|llms?|optimi[sz]ers?|architectures?|"
                     r"encoders?|decoders?|backbones?|networks?|tokeni[sz]ers?|retrievers?)\s+"
                     r"(?:is|are|was|were|do|does|did)\b", re.I)
_VERSIONED_NAME = re.compile(r"\b(?=[\w.\-]*[a-z])(?=[\w.\-]*\d)[a-z][\w.\-]*\d[\w.\-]*\b|\b[a-z]+-?\d+\b", re.I)

# "which / how many / none of these contracts": the chosen-from noun is the searched documents themselves
_SCOPE_NOUN = re.compile(
    r"\b((?:which|how many|any|all|none|each|one|some) of (?:these|those|the \d+)) [a-z][a-z\-]*s\b", re.I)
_CLAUSE_FRAME = re.compile(r"\b(?:contains?|includes?|ha(?:ve|s))\s+(?:a|an|any|the)\s+((?:[\w\-]+\s+){0,3}?)"
                           r"(?:clauses?|provisions?|covenants?)\b", re.I)

# "how many [new] datasets are ...", "how large is the retrieval database": the counted or measured noun
_COUNTED_Q = re.compile(
    r"\bhow many (?P<noun>(?:[\w\-]+ ){0,2}?[\w\-]+?)(?= (?:are|is|were|was|do|does|did|have|has|had|can|could|will|"
    r"would|should|must|shall|may|in|of|per|for|on|at|to|with)\b|\?|$)"
    r"|\bhow (?:large|big) (?:is|was|are|were) (?:the |its |their |a )?(?P<noun2>(?:[\w\-]+ ){0,2}[\w\-]+?)"
    r"(?= (?:used|uses|use|has|have|contains?|holds?|that|which|in|of|for|on|at|to|with)\b|\?|$)", re.I)
# "how many datasets make up the benchmark": a verb the pattern above does not list; the noun is then the first
# plural of the (at most three) words after "how many"
_COUNTED_LOOSE_Q = re.compile(r"\bhow many (?!of\b)(?P<noun>(?:[\w\-]+ ){0,2}[\w\-]+)", re.I)


#: "What learning rate / RMSE / test error rate ... ?": a question for the value of a named measure. Its answer
#: writes the measure and a number in one sentence (or a table row under the measure's column).
_METRIC_Q = re.compile(
    r"^(?:(?:to|by|at|of|with) )?what (?:is |was |are |were )?(?:the )?(?:[\w'\u2019\-]+ ){0,3}?"
    r"(learning rate|batch size|error rate|word error rate|dropout rate|weight decay|rmse|mae|mse|perplexity|bleu|"
    r"rouge(?:-\w+)?|f1|auc|ndcg|mrr|top-[15] accuracy|accuracy|precision|recall|iou|dimensionality|momentum|"
    r"temperature|throughput|latency|speedup|speed-up)\b", re.I)


def asked_measure(profile: QuestionProfile) -> list[str]:
    """Stems of the measure a number question asks the value of ("What learning rate was
    used ...?" -> ``["learn", "rate"]``), after a scene-setting phrase; ``[]`` for any other
    question."""
    if profile.answer_type != "number":
        return []
    m = _METRIC_Q.search(_LEADING_PHRASE.sub("", profile.text, count=1))
    return terms_of(m.group(1)) if m else []


# a value written in words: "reduce the batch to a single image", "two GPUs" (not "one of", "one another")
_NUMBER_WORD = re.compile(r"\b(?:a single|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|sixteen|twenty|"
                          r"thirty|forty|fifty|hundred|thousand|million|billion|"
                          r"one(?! of\b| another\b| or\b| such\b| who\b| that\b| may\b| can\b))\b")


def gives_measure(profile: QuestionProfile, measure: Sequence[str], text: str) -> bool:
    """Whether a sentence (or table row) of ``text`` writes every stem of ``measure`` and a
    number the question does not give (element labels and reference marks aside), in digits or
    in words ("reduce the batch to a single image" gives a batch size)."""
    for u in split_sentences(text, max_words=60):
        low = _LABEL_NUM.sub(" ", u.lower())
        if set(measure) <= set(terms_of(low)) and (any(n not in profile.numbers for n in _NUM.findall(low))
                                                   or _NUMBER_WORD.search(low)):
            return True
    return False


def beside_number(low: str, counted: Sequence[str], of: bool = False) -> bool:
    """Whether a number stands at most three words before a counted noun ("18 diverse
    datasets", "a 2 trillion token database") or right after it as a table cell
    ("#Database tokens: 4B"); with ``of``, also in the phrase after it ("notice of thirty (30)
    days", "a fee equal to $500").

    Args:
        low: The lower-cased text.
        counted: Stems of the counted noun (:attr:`QuestionProfile.counted`,
            :attr:`QuestionProfile.amount_of`).
        of: Also a number after the noun and "of" / "equal to" / "in the amount of".
    """
    toks = re.findall(r"[a-z0-9][a-z0-9,.%]*|:", low)
    for i, t in enumerate(toks):
        if t == ":" or t[0].isdigit() or _stem(t.rstrip(".,")) not in counted:
            continue
        if any(x[0].isdigit() for x in toks[max(0, i - 4):i] if x != ":"):
            return True
        after = toks[i + 1:i + 4]
        if ":" in after and any(x[0].isdigit() for x in after[after.index(":") + 1:]):
            return True
        if of and after[:1] in (["of"], ["equal"], ["in"]) and any(x[0].isdigit() for x in toks[i + 2:i + 7]):
            return True
    return False


# a question about several documents: a plural of a document's kind, a comparison ("compare", "which of",
# "differ"), or the collection itself; not "each" / "both" / "all" alone ("on *each* sale", "*both* parties")
_SEVERAL_Q = re.compile(
    r"\b(?:papers|documents|contracts|agreements|reports|studies|articles|filings|manuals|licen[cs]es|"
    r"compare|compared|comparison|differ|differs|difference|which of|collection|corpus|any of)\b", re.I)


_TITLE_RUN = re.compile(r"\b[A-Z][a-z][\w'\u2019-]*(?:\s+[A-Z][a-z][\w'\u2019-]*)+")


def asks_about_several(question: str) -> bool:
    """True when ``question`` asks about several documents ("Which papers use reinforcement
    learning?", "Which datasets are used in these papers?", "Compare the notice periods"; not
    "What fee is due on each sale?" or "Must both parties sign?"); a
    question about one thing ("What batch size was used to train the DPR retriever?") is answered
    from one document: over a scope of several, sentences of the other documents that share its
    words (other papers' batch sizes) are padding, not answer."""
    # a title's words are no determiners ("Attention Is *All* You Need"): a run of capitalised words goes first
    return bool(_SEVERAL_Q.search(_TITLE_RUN.sub(" ", question or "")))


def names_place(text: str) -> bool:
    """True when ``text`` names a place the way a clause does: "laws of the State of
    Indiana", "courts of Tel-Aviv", "in McLean, Virginia", "Delaware law", or describes it:
    "the laws of the state in which Franchisor has its principal place of business"."""
    return bool(_PLACE_A.search(text or ""))


@dataclass
class Background:
    """Document frequencies of terms over the nodes of the searched documents.

    Attributes:
        n_nodes: Number of nodes counted.
        df: ``{term: nodes containing it}``.
        idf_from: When set, the :meth:`weight` of a term comes from this wider background
            (the whole collection) while :meth:`has` still asks the searched documents: over
            one named contract, every word it lacks would otherwise weigh the most.
    """

    n_nodes: int
    df: Counter
    idf_from: "Background | None" = None

    def weight(self, term: str) -> float:
        """IDF weight ``log(1 + N / (1 + df))``; largest for a term the documents never use."""
        if self.idf_from is not None:
            return self.idf_from.weight(term)
        return math.log1p(self.n_nodes / (1.0 + self.df.get(term, 0)))

    def has(self, term: str) -> bool:
        """True when some node uses ``term``."""
        return self.df.get(term, 0) > 0


_BG_CACHE: dict[tuple, Background] = {}


def doc_background(view, doc_indices: Sequence[int]) -> Background:
    """The :class:`Background` of the given documents of a corpus view (cached per
    view signature and document set), their reference lists left out
    (:func:`~docmaster_core.tree.roles.in_reference_list`): "on an NVIDIA H100" is asked of
    a paper that names the H100 only in a cited title, and the paper does not say it."""
    key = (id(view), getattr(view, "signature", ()), tuple(sorted(doc_indices)))
    bg = _BG_CACHE.get(key)
    if bg is not None:
        return bg
    from ..tree.roles import in_reference_list

    df: Counter = Counter()
    n = 0
    for di in doc_indices:
        for node in view.docs[di].tree.nodes:
            if in_reference_list(node.section_path):  # a term only a cited title uses is none the document uses
                continue
            text = node.content or ""
            if isinstance(node.extra, dict) and node.extra.get("caption"):
                text += " " + str(node.extra["caption"])
            df.update(set(terms_of(text)))
            n += 1
    bg = Background(n, df)
    if len(_BG_CACHE) > 64:
        _BG_CACHE.clear()
    _BG_CACHE[key] = bg
    return bg


def table_rows(rows: Any, max_rows: int = 200) -> list[str]:
    """Table rows as self-contained units: ``"row label | header: cell | ..."``.

    Args:
        rows: ``[[cell, ...], ...]`` with the header row first (a node's ``extra["rows"]``).

    Returns:
        One string per body row with a non-empty cell (at most ``max_rows``).
    """
    if not isinstance(rows, list) or len(rows) < 2 or not all(isinstance(r, list) for r in rows):
        return []
    header = [normalize_ws(str(c)) for c in rows[0]]
    out = []
    for r in rows[1:max_rows + 1]:
        cells = [normalize_ws(str(c)) for c in r]
        if not any(cells[1:]) and not cells[:1]:
            continue
        parts = [cells[0]] if cells and cells[0] else []
        for j, c in enumerate(cells[1:], start=1):
            if c:
                h = header[j] if j < len(header) and header[j] else f"column {j + 1}"
                parts.append(f"{h}: {c}")
        if len(parts) > 1 or (parts and any(ch.isdigit() for ch in parts[0])):
            out.append(" | ".join(parts))
    return out


def passage_units(text: str, node_type: str = "TEXT", rows: Any = None, caption: str | None = None) -> list[str]:
    """The quotable units of a passage: its sentences, or for a table its caption's
    sentences and its rows with column headers (:func:`table_rows`)."""
    if node_type == "TABLE" and rows:
        tr = table_rows(rows)
        if tr:
            return split_sentences(caption or "", max_words=60) + tr
    return split_sentences(text, max_words=60)


@dataclass
class UnitScores:
    """Support of each unit for a question; arrays have shape (n_units,), float64.

    Attributes:
        coverage: Weighted fraction of the question's terms in the unit, in [0, 1].
        type_match: Answer-type match in [0, 1].
        cosine: Embedding cosine with the question.
        support: The combined score ``0.45 cos + 0.35 coverage + 0.2 type``.
    """

    coverage: np.ndarray
    type_match: np.ndarray
    cosine: np.ndarray
    support: np.ndarray


# (and the "column 3:" label a table row gives a column without a header, qa.answering.table_text)
_LABEL_NUM = re.compile(r"\b(?:table|figure|fig\.?|section|sec\.?|eqn?\.?|equation|appendix|step|stage|column)\s*"
                        r"\(?[0-9ivx]+(?:\.\d+)*\)?|\[\d+(?:\s*[,\u2013-]\s*\d+)*\]|^\s*\d+(?:\.\d+)*\s+(?=[a-z])")


#: A length of time given without a number: the answer to "how long" of a term without an end date.
# an end date answers "how long does the agreement last?": a contract often states its Term by its end ("shall end
# as of December 31, 2000", "until March 31, 2008", "expire on June 30, 2010")
_END_DATE = re.compile(r"\b(?:end|ends|ending|expire|expires|expiring|expiration|until|through|terminate on)\b"
                       r"[^.;]{0,40}?\b(?:19|20)\d{2}\b")
_OPEN_ENDED = re.compile(r"\b(?:indefinite(?:ly)?|perpetu(?:al(?:ly)?|ity)|unlimited (?:term|period|duration|time)|"
                         r"until (?:terminated|termination|further notice))\b")


def _has_unit(text_l: str, unit: str) -> bool:
    padded = f" {text_l} "
    return any(s in padded for s in UNITS.get(unit, (unit,)))


# a redaction mark of a filed contract: "[***]", "*****", "[*]", "[Redacted]", "[Confidential Treatment Requested]"
_MARK = r"(?:\[\s*\*+\s*\]|\*{3,}|\[\s*(?:redacted|omitted|confidential)[^\]]{0,60}\])"
# ... standing where a value is: "$[***]", "[***] percent", "***** (*****) days", "US$ *****"
_REDACTED_VALUE = re.compile(r"(?:us\$|\$|€|£|\brmb|\busd)\s*" + _MARK + r"|" + _MARK +
                             r"(?:\s*\(\s*" + _MARK + r"\s*\))?\s*(?:%|[a-z]+\b)", re.I)


def redacted_values(text: str) -> str:
    """``text`` with its redacted values left out: a redaction mark standing where an amount is
    ("$[***]", "[***] percent", "***** (*****) days") goes with the unit beside it, so that a unit
    check (:func:`verdict`) finds only the values a passage gives."""
    return _REDACTED_VALUE.sub(" ", text)


_AMOUNT = r"(\$?)\s?(\d[\d,]*(?:\.\d+)?)"
# "$3,500,001 to $5,000,000", "10-20 units", "from 1,000 through 5,000"; "greater than $100,000,000", "up to 500"
_RANGE = re.compile(_AMOUNT + r"\s*(?:to|through|-|\u2013|\u2014)\s*" + _AMOUNT)
_ABOVE = re.compile(r"\b(?:greater than|more than|over|above|in excess of|exceeding)\s+" + _AMOUNT)
_BELOW = re.compile(r"\b(?:up to|less than|under|below|not exceeding)\s+" + _AMOUNT)


# a number the question gives as a quantity: not part of a name ("GPT-2", "ZeRO-100B", "S3") and not a
# modifier joined to its noun ("an 8-core computer", "16-way parallelism"), except a length of time ("a 5-year term")
_ASKED_AMOUNT = re.compile(r"(?<![A-Za-z\-])" + _AMOUNT + r"(?![\d,.]*[A-Za-z])"
                           r"(?!-(?!(?:year|month|week|day|hour|minute|second)s?\b)[A-Za-z])", re.I)


def _amount(number: str) -> float | None:
    try:
        return float(number.replace(",", ""))
    except ValueError:
        return None


def range_holds(profile: QuestionProfile, unit_lower: str) -> bool | None:
    """Whether a unit's ranges hold a number the question gives: a tier of a table or a
    clause ("$3,500,001 to $5,000,000 | Royalty: $250,000", "greater than $100,000,000")
    answers "what royalty when net sales are $4,000,000" only when it holds 4,000,000. An
    amount of money is compared with the question's amounts of money only, a plain number
    with its plain numbers ("in 12 months" is no sales figure).

    Returns:
        None when the question gives no number of the kind of the unit's ranges or the
        unit states no range; True when a range holds one of them; False when none does.
    """
    asked = [(bool(m), _amount(n)) for m, n in _ASKED_AMOUNT.findall(profile.text)]
    spans = [(bool(m1 or m2), _amount(a), _amount(b)) for m1, a, m2, b in _RANGE.findall(unit_lower)]
    spans += [(bool(m), _amount(a), float("inf")) for m, a in _ABOVE.findall(unit_lower)]
    spans += [(bool(m), float("-inf"), _amount(b)) for m, b in _BELOW.findall(unit_lower)]
    spans = [(m, a, b) for m, a, b in spans if a is not None and b is not None and a <= b]
    seen = [(m, a, b) for m, a, b in spans if any(mx == m and x is not None for mx, x in asked)]
    if not seen:
        return None
    return any(a <= x <= b for m, a, b in seen for mx, x in asked if mx == m and x is not None)


def type_match(profile: QuestionProfile, unit: str, node_type: str = "TEXT") -> float:
    """How well a unit's form fits the asked answer type, in [0, 1]. A unit stating ranges
    when the question gives a number fits by whether a range holds it (:func:`range_holds`:
    1.0, else 0.2)."""
    low = unit.lower()
    holds = range_holds(profile, low)
    if holds is not None:
        return 1.0 if holds else 0.2
    if profile.answer_type == "number":
        # element labels and reference marks are not answers: "Table 1", "Eq. (2)", "[36]"
        low = _LABEL_NUM.sub(" ", low)
        if "duration" in profile.soft_units and _OPEN_ENDED.search(low):
            return 1.0  # "how long ...?" answered without a number: "valid for an indefinite term"
        if "duration" in profile.soft_units and _END_DATE.search(low):
            return 1.0  # "how long does the agreement last?" answered by its end: "shall end as of December 31, 2000"
        if "frequency" in profile.soft_units and _has_unit(low, "frequency") and not _NUM.search(low):
            return 1.0  # "how often ...?" answered without a number: "Clean drip tray daily"
        nums = [n for n in _NUM.findall(low) if n not in profile.numbers]
        if not nums:
            return 0.0
        if profile.units or profile.soft_units:
            return 1.0 if any(_has_unit(low, u) for u in profile.units + profile.soft_units) else 0.4
        if profile.counted or profile.amount_of:  # "how many datasets": "18 diverse datasets" over a number of
            # something else; "how much notice": "sixty (60) days' written notice"
            return 1.0 if beside_number(low, profile.counted or profile.amount_of, of=not profile.counted) else 0.6
        return 1.0
    if profile.answer_type == "formula":
        if node_type == "EQUATION" or "=" in unit or re.search(r"[\u2200-\u22ff\u0391-\u03c9]|softmax|exp\(|log\(", low):
            return 1.0
        return 0.3
    if profile.answer_type == "caption":
        return 1.0 if re.match(r"^\s*(?:figure|fig\.|table)\s*\d+", low) else 0.2
    if profile.answer_type == "place":
        return 1.0 if names_place(unit) else 0.3
    if profile.answer_type == "hardware":
        return 1.0 if names_hardware(unit) else 0.2
    if profile.answer_type == "name":
        return 1.0 if _VERSIONED_NAME.search(unit) else 0.5
    return 0.5


def score_units(profile: QuestionProfile, units: Sequence[str], node_types: Sequence[str], bg: Background,
                cosine: np.ndarray | None = None) -> UnitScores:
    """Score units for a question (see the module docstring).

    Args:
        profile: From :func:`profile_question`.
        units: Unit texts, length n.
        node_types: The node type name of each unit's passage, length n.
        bg: The document background (term weights).
        cosine: float (n,) cosines with the question, or None (0.0).

    Returns:
        :class:`UnitScores`.
    """
    n = len(units)
    w = np.array([bg.weight(t) for t in profile.terms], dtype=np.float64)
    total = float(w.sum()) or 1.0
    cov = np.zeros(n)
    tm = np.zeros(n)
    for i, u in enumerate(units):
        present = set(terms_of(u))
        tm[i] = type_match(profile, u, node_types[i] if i < len(node_types) else "TEXT")
        if profile.class_terms and tm[i] >= 1.0:  # "Indiana" answers "which jurisdiction"
            present.update(profile.class_terms)
        if profile.bound and states_asked_bound(profile, u):  # "shall not exceed $1,000,000" answers "the cap"
            present.update(profile.bound_terms)
            tm[i] = max(tm[i], 1.0)
        if profile.terms:
            cov[i] = float(sum(wt for t, wt in zip(profile.terms, w) if t in present)) / total
    cos = np.zeros(n) if cosine is None else np.asarray(cosine, dtype=np.float64)
    return UnitScores(cov, tm, cos, 0.45 * cos + 0.35 * cov + 0.2 * tm)


@dataclass
class Verdict:
    """Whether the searched documents answer a question (offline evidence).

    Attributes:
        found: False when the documents do not hold the answer.
        reason: One line: why not (or the evidence when found).
        doc_coverage: Weighted fraction of the question's terms the documents use at all.
        best_coverage: Coverage of the best passage (its text with its section path).
        missing_terms: Question terms no node of the documents uses.
        unit_found: False when the question asks for a unit no top passage gives.
    """

    found: bool
    reason: str
    doc_coverage: float
    best_coverage: float
    missing_terms: list[str]
    unit_found: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"found": self.found, "reason": self.reason, "doc_coverage": round(self.doc_coverage, 4),
                "best_coverage": round(self.best_coverage, 4), "missing_terms": list(self.missing_terms),
                "unit_found": self.unit_found}


# decision thresholds, chosen on the "tune" half of eval/qa_cases.tsv (answerable questions: best
# coverage >= 0.7, document coverage 1.0; unanswerable: best <= 0.26, document <= 0.58) with a margin
# towards answering, then reported on the held-out half (docs/results/qa.md)
MIN_DOC_COVERAGE = 0.7
MIN_BEST_COVERAGE = 0.4
# a passage this well covered overrides (a) (a paraphrased question word the document never uses)
STRONG_BEST_COVERAGE = 0.5


#: A term the whole collection uses in at most this share of its nodes (and at least ``ASKERS_MIN_NODES``)
#: is no word of the collection's language ("stop" a renewal, "stay" in effect, "run" for a term).
ASKERS_WORD_SHARE = 0.001
ASKERS_MIN_NODES = 3
#: A verb, adjective or adverb (:func:`is_lay_word`) the searched documents lack is the asker's own word
#: only when at most this share of the collection's nodes use it: "owe" (0.4 % of the 59 contracts'
#: nodes), "liable" (0.8 %), "barred"; not "terminate" (8 %) or "pay" (10.5 %), which name a clause the
#: collection writes about, so that a contract without them has none.
LAY_WORD_SHARE = 0.05


def _rare_in_collection(bg: "Background", term: str) -> bool:
    coll = bg.idf_from or bg
    return coll.df.get(term, 0) <= LAY_WORD_SHARE * max(coll.n_nodes, 1)


def askers_words(profile: QuestionProfile, bg: Background, passage_texts: Sequence[str]) -> list[str]:
    """The question's terms that are the asker's own words, not the documents' language: the
    searched documents never use them and the whole collection (``bg.idf_from``) hardly does
    (in at most ``max(ASKERS_MIN_NODES, ASKERS_WORD_SHARE * nodes)`` nodes), while the question
    asks for a typed answer (a number, a period, a place) that a sentence of one of the three
    best passages gives.

    "How much advance notice is needed to *stop* the agreement from renewing?": no contract says
    "stop" (they say "notice of non-renewal"), so its absence from the named contract says
    nothing about whether the contract answers; a clause term the named contract lacks but
    other contracts use ("insurance", "royalty") still counts. Only when the documents were
    chosen by the question's names (``bg.idf_from`` set, :func:`~docmaster_core.qa.answering.
    select_passages` with ``whole_documents``); a lay noun of a question that asks for a
    description ("the liability *cap*") still counts.

    Args:
        profile: The question.
        bg: Background of the searched documents, with the collection's as ``idf_from``.
        passage_texts: The best passages' texts, best first.

    Returns:
        The terms (stems), in question order; ``[]`` when none or when the rule does not apply.
    """
    coll = bg.idf_from
    if coll is None or profile.answer_type not in ("number", "place"):
        return []
    rare = max(ASKERS_MIN_NODES, ASKERS_WORD_SHARE * coll.n_nodes)
    own = [t for t in profile.terms if not bg.has(t) and coll.df.get(t, 0) <= rare]
    if not own:
        return []
    typed = any(type_match(profile, u) >= 1.0 for p in passage_texts[:3] for u in split_sentences(p, max_words=60))
    return own if typed else []


#: A capitalised word of the question is taken for a name the answer must hold only when at most this
#: share of the collection's nodes use it ("Microsoft" in a 10-K's list of competitors, not "Company").
NAME_NODE_SHARE = 0.01


@functools.lru_cache(maxsize=1)
def _region_codes() -> tuple[tuple[str, str], ...]:
    """``(name, postal code)`` of the states, provinces and territories of the countries whose
    documents write them by code (United States, Canada, Australia), from ISO 3166-2
    (``pycountry``): ``("Alabama", "AL")``, ``("British Columbia", "BC")``, ``("New South
    Wales", "NSW")``; ``()`` when pycountry is missing."""
    try:
        import pycountry
    except ImportError:  # pragma: no cover - a pinned dependency (requirements.txt)
        return ()
    out = []
    for country in ("US", "CA", "AU"):
        for sub in pycountry.subdivisions.get(country_code=country) or ():
            out.append((sub.name, sub.code.split("-", 1)[1]))
    return tuple(out)


def region_names_coded(question: str, passage_texts: Sequence[str]) -> list[str]:
    """The state and province names of ``question`` ("Alabama", "New South Wales") that one of
    the passages writes by its postal code only, as a word in capitals ("White Plains, AL",
    "Sydney NSW 2000"); ``[]`` when none. Codes that are English words in capitals ("IN",
    "OR", "ME") count only after a comma ("Indianapolis, IN")."""
    text = " ".join(passage_texts)
    out = []
    for name, code in _region_codes():
        if not re.search(rf"\b{re.escape(name)}\b", question, re.I):
            continue
        pattern = rf",\s*{code}\b" if code in ("IN", "OR", "ME", "OK", "HI", "OH", "AS", "ON", "AT") \
            else rf"\b{code}\b"
        if re.search(pattern, text):
            out.append(name)
    return out


def _named_in_question(profile: QuestionProfile, term: str) -> bool:
    """True when the question writes ``term`` as a name: capitalised ("Michigan"), not in
    capitals (an abbreviation the document may spell out: "LRU") unless with a digit (an
    identifier no document spells out: "GSM8K", "FT18150", or joined to a number: "CIFAR-10"), and
    not the question's first word ("Which", "Under")."""
    word = profile.words.get(term, "")
    first = re.match(r"\W*([A-Za-z0-9]+)", profile.text)
    if first and first.group(1) == word:
        return False
    if word.isupper():
        return any(ch.isdigit() for ch in word) or bool(re.search(rf"\b{re.escape(word)}-\d", profile.text))
    return word[:1].isupper()


# capitalised words that name a kind of place, party or document, not a particular one (stemmed)
_KIND_WORDS = {_stem(w) for w in GENERIC_NAME_WORDS}


def question_names(question: str) -> list[str]:
    """The names a question asks about: its terms written as names it requires
    (:func:`~docmaster_core.text.terms.name_words`: capitalised, not its first word, not in
    capitals unless with a digit ("BM25"), outside parentheses and lists of examples or alternatives, not "State"): "California" in "Which
    of these agreements are governed by the laws of the State of California?".

    Returns:
        Stemmed terms (:func:`terms_of`), in question order.
    """
    wanted = {t for w in name_words(question, identifiers=True) for t in terms_of(w)}
    return [t for t in profile_question(question).terms if t in wanted and t not in _KIND_WORDS]


def verdict(profile: QuestionProfile, bg: Background, passage_texts: Sequence[str]) -> Verdict:
    """Decide whether the documents answer the question.

    Not found when (a) the question's terms the documents never use carry more than
    ``1 - MIN_DOC_COVERAGE`` of the question's term weight and no passage covers
    ``STRONG_BEST_COVERAGE`` of it, or a name the question asks about (a capitalised word,
    "Michigan") is one of them, or such a name (used by at most ``NAME_NODE_SHARE`` of the
    collection's nodes) is in none of the passages, or (b) no passage covers
    ``MIN_BEST_COVERAGE`` of it, or (c) the question asks for a place ("which state's law
    governs ...") and no passage names one (:func:`names_place`), or computing hardware ("on what
    hardware ...") and no passage names any (:func:`names_hardware`), or the value of a named
    measure ("what learning rate ...", :func:`asked_measure`) and no sentence gives the measure
    with a number, or (d) the question asks for a unit ("in dollars", "in milliseconds", "how many
    GPU hours", "how much does A pay B": an amount of money or a percentage) that none of the
    passages gives.

    A passage with a sentence that states the bound the question asks for on the quantity it asks
    about (:func:`states_asked_bound`: "LIABILITY FOR DAMAGES ... SHALL NOT EXCEED $1,000,000" for
    "the *cap* on each party's damages") uses the bound's words.

    The asker's own words (:func:`askers_words`) and the qualifiers the documents never use
    (``_QUALIFIERS``: "the *total* fee" over a contract that states its one fee; the verb of "until
    what date does it *run*"; the asker's name for the document, ``_DOCUMENT_KIND_WORDS``: "their
    co-branding *deal*" over an "Agreement") are left out of the question's terms first.

    Args:
        profile: The question.
        bg: Background of the searched documents.
        passage_texts: The best passages' texts (each with its section path), best first.
    """
    terms = profile.terms
    if not terms:
        return Verdict(True, "the question has no content term to check", 1.0, 1.0, [])
    own = askers_words(profile, bg, passage_texts) + [
        t for t in terms if not bg.has(t) and (profile.words.get(t, t).lower() in _ASKERS_FRAME_WORDS or (
            is_lay_word(profile.words.get(t, t)) and _rare_in_collection(bg, t)) or (
            _UNTIL_Q.search(profile.text) and (_DURATION_VERBS.fullmatch(profile.words.get(t, t))
                                              or _END_VERBS.fullmatch(profile.words.get(t, t)))))]
    if own:
        terms = [t for t in terms if t not in own]
        if not terms:
            return Verdict(True, "the question's only terms are its own words", 1.0, 1.0, [])
    w = np.array([bg.weight(t) for t in terms])
    total = float(w.sum()) or 1.0
    # a passage that names a place answers the class noun of a place question ("which jurisdiction")
    placed = [bool(profile.class_terms) and names_place(p) for p in passage_texts]
    # "near White Plains, *Alabama*" over a report that writes "White Plains, AL": a state or province that the
    # passages write by its postal code is named there
    coded = set(terms_of(" ".join(region_names_coded(profile.text, passage_texts)))) & set(terms)
    # a passage with a sentence that states the bound asked about on the quantity asked about covers the bound's
    # words ("the cap on each party's damages": "EACH PARTY'S LIABILITY FOR DAMAGES HEREUNDER SHALL NOT EXCEED
    # $1,000,000"; an appearance that "shall not exceed a total of two hours" does not)
    bound = set(profile.bound_terms) & set(terms)
    bounded = [bool(bound) and any(states_asked_bound(profile, u) for u in split_sentences(p, max_words=60))
               for p in passage_texts]
    used = {t for t in terms if bg.has(t)} | (set(profile.class_terms) if any(placed) else set()) | coded | (
        bound if any(bounded) else set())
    missing = [t for t in terms if t not in used]
    doc_cov = float(sum(wt for t, wt in zip(terms, w) if t in used)) / total
    best = 0.0
    for p, pl, bd in zip(passage_texts, placed, bounded):
        present = set(terms_of(p)) | (set(profile.class_terms) if pl else set()) | coded | (bound if bd else set())
        best = max(best, float(sum(wt for t, wt in zip(terms, w) if t in present)) / total)
    unit_found, redacted = True, False
    if profile.units:
        # a value the filing redacted ("a royalty of [***] percent") is none the passages give
        low = [f" {normalize_ws(redacted_values(p)).lower()} " for p in passage_texts]
        unit_found = any(any(_has_unit(t, u) for t in low) for u in profile.units)
        redacted = not unit_found and any(any(_has_unit(f" {normalize_ws(p).lower()} ", u) for u in profile.units)
                                          for p in passage_texts)
    # a name the question asks about ("governed by *Michigan* law") that no searched document uses:
    # whatever else matches, the documents do not say it (names that picked the documents were
    # taken out of the question before, qa.names.route_by_names)
    names = [t for t in missing if _named_in_question(profile, t)]
    if (doc_cov < MIN_DOC_COVERAGE and best < STRONG_BEST_COVERAGE) or names:
        why = "they never mention " + ", ".join(f'"{profile.words.get(t, t)}"' for t in (names or missing)[:4])
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    # ... or that the documents use only elsewhere: "Microsoft's total revenue" over a collection whose
    # only "Microsoft" is a competitor named in Amazon's 10-K, and whose best passages are Amazon's figures
    in_passages = (set().union(*(terms_of(p) for p in passage_texts)) if passage_texts else set()) | coded
    coll = bg.idf_from or bg
    elsewhere = [t for t in terms if t in used and t not in in_passages and _named_in_question(profile, t)
                 and coll.df.get(t, 0) <= NAME_NODE_SHARE * coll.n_nodes]  # a name, not "Company" of a party
    if elsewhere:
        why = "the passages that answer best never mention " + ", ".join(
            f'"{profile.words.get(t, t)}"' for t in elsewhere[:4])
        return Verdict(False, why, doc_cov, best, elsewhere, unit_found)
    if best < MIN_BEST_COVERAGE:
        why = f"no passage covers the question's terms (the best covers {best:.0%} of their weight)"
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    if profile.counted and _HOW_MANY.search(profile.text) and profile.answer_type == "number" and not profile.units \
            and not any(
            beside_number(_LABEL_NUM.sub(" ", u.lower()), profile.counted)
            for p in passage_texts for u in split_sentences(p, max_words=60)):
        # "how many parameters does the largest model have": no passage writes a number beside "parameters" (not
        # for "how large was one phase": "approximately 3800 lines of C++ code" gives its size in other words)
        why = f'no passage gives a number of "{profile.words.get(profile.counted[0], profile.counted[0])}"'
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    measure = asked_measure(profile)
    if measure and not profile.units and not any(gives_measure(profile, measure, p) for p in passage_texts):
        # "what learning rate was used to train the U-Net": no passage writes a learning rate with a number
        asked = _METRIC_Q.search(_LEADING_PHRASE.sub("", profile.text, count=1)).group(1)
        why = f'no passage gives a value of "{asked}"'
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    if profile.answer_type == "hardware" and not any(names_hardware(p) for p in passage_texts):
        why = "no passage names computing hardware (a GPU, a CPU, a machine's memory or clock)"
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    if profile.answer_type == "place" and not any(names_place(p) for p in passage_texts):
        # "which state's law governs ...": the passages must name a state, a country or a court's place
        why = "no passage names a place (a state, a country or a court's seat)"
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    if not unit_found and redacted:
        why = "the documents give it only as a redaction mark ([***]): the filed copy leaves the value out"
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    if not unit_found:
        why = "no passage gives " + ", ".join("a price (an amount of money or a percentage)" if u == "price"
                                              else f"a value in {u}" for u in profile.units)
        return Verdict(False, why, doc_cov, best, missing, unit_found)
    return Verdict(True, f"passage coverage {best:.2f}, document coverage {doc_cov:.2f}", doc_cov, best, missing)


#: A sentence opening with a personal pronoun as its subject refers back to the sentence before it.
_PRONOUN_SUBJECT = re.compile(r"^(?:It(?!\s+(?:is|was|will|would|shall|should|may|might|must|can|could|has been|"
                              r"had been)\b)|They|He|She)\s+[a-z]")


def refers_back(units: Sequence[str], owner: Sequence[int], i: int) -> bool:
    """True when unit ``i`` opens with a personal pronoun as its subject ("It achieved ...";
    not "It is / shall / may ...", most often impersonal: "It is agreed that", "It is the parties'
    expectation") and unit ``i - 1`` is the sentence before it in the same passage: what the
    pronoun names is most often there (Hobbs 1978: a pronoun's antecedent lies mostly in its own
    or the previous sentence)."""
    return i > 0 and int(owner[i]) == int(owner[i - 1]) and bool(_PRONOUN_SUBJECT.match(units[i]))


def rank_answer_units(question: str, units: Sequence[str], node_types: Sequence[str], cosine: np.ndarray,
                      owner: Sequence[int] | None = None, min_cos: float | None = None,
                      relative_coverage: float | None = None, context: Sequence[int] | None = None) -> np.ndarray:
    """Order answer sentences by support: ``0.3 cos + 0.45 coverage + 0.25 type`` plus
    ``0.15 * (1 - passage rank / passages)`` (the passages come best first), with term
    weights from the sentences themselves (their own background).

    A table row (a unit with ``" | "`` in a TABLE passage) is covered together with its
    table's caption (the passage's first unit), so "What is X's score in table T?" is
    answered by X's row; the caption itself counts half for a number question.

    Args:
        question: The question.
        units: Candidate sentences / table rows, length n.
        node_types: Node type of each unit's passage, length n.
        cosine: float (n,) sentence-question cosines.
        owner: int (n,) passage index of each unit (None: every unit its own passage).
        min_cos: When given, only units with cosine >= ``min_cos`` or covering at least
            half of the question's term weight (or, for a hardware question, naming
            hardware) are returned (a table row only when it shares a term with the
            question itself).
        relative_coverage: When given, only units of the best unit's context (``context``) and
            units elsewhere covering at least this share of the best unit's term coverage are
            returned: a sentence elsewhere that holds none of the question's terms while the best
            does ("Agreement made ... Between: Co-Diagnostics, Inc. ...", which holds only the
            names the question was routed by) is not quoted beside it; the best one's neighbours
            ("The entire computation finishes in 933 seconds", the paragraph's next node) may be.
        context: int (n,) context of each unit for ``relative_coverage``: units of one passage,
            or of adjacent passages of one document, share it (None: the passage, ``owner``).

    Returns:
        int64 (m,) unit indices, best first (m = n without ``min_cos``).
    """
    profile = profile_question(question)
    df: Counter = Counter()
    for u in units:
        df.update(set(terms_of(u)))
    n = len(units)
    own = np.arange(n) if owner is None else np.asarray(owner)
    first: dict[int, int] = {}
    for i in range(n):
        first.setdefault(int(own[i]), i)
    is_row = np.array([node_types[i] == "TABLE" and " | " in units[i] for i in range(n)], dtype=bool)
    whole: dict[int, str] = {}
    for i in range(n):
        whole[int(own[i])] = whole.get(int(own[i]), "") + " " + units[i]
    # a table row is covered with its caption, an equation with its lead-in sentence, a sentence whose
    # subject is a pronoun ("It achieved ... a perplexity of 10.21") with the sentence it refers back to
    ctx = [f"{units[first[int(own[i])]]} {units[i]}" if is_row[i]
           else whole[int(own[i])] if node_types[i] == "EQUATION"
           else f"{units[i - 1]} {units[i]}" if refers_back(units, own, i) else units[i] for i in range(n)]
    sc = score_units(profile, ctx, node_types, Background(max(n, 1), df), cosine)
    tm = sc.type_match.copy()
    if profile.answer_type == "number":
        cap = np.array([node_types[i] == "TABLE" and not is_row[i] for i in range(n)], dtype=bool)
        tm[cap] *= 0.5
    # the passages come best supported first (select_passages): a small prior by rank
    prior = 0.15 * (1.0 - own / float(max(int(own.max()) + 1, 1))) if n else np.zeros(0)
    support = 0.3 * sc.cosine + 0.45 * sc.coverage + 0.25 * tm + prior
    order = np.argsort(-support, kind="stable").astype(np.int64)
    if min_cos is not None:
        ok = (sc.cosine >= min_cos) | (sc.coverage >= 0.5)
        if profile.answer_type == "hardware":  # "a linux based PC with Intel Pentium III processor": far in meaning
            ok |= tm >= 1.0
        if is_row.any():  # a row must itself name something the question asks about
            own_cov = score_units(profile, units, node_types, Background(max(n, 1), df)).coverage
            ok &= ~is_row | (own_cov > 0)
        order = order[ok[order]]
    if relative_coverage is not None and order.size:
        best = float(sc.coverage[order[0]])
        ctx_of = own if context is None else np.asarray(context)
        order = order[(sc.coverage[order] >= relative_coverage * best) | (ctx_of[order] == ctx_of[order[0]])]
    return order
