"""Reading a model's filter decision out of what a real model answers (issue 38).

A hosted model with structured outputs replies with the JSON object the ``decide``
prompt asks for. A small local model behind llama.cpp, Ollama or vLLM often does not:
it answers "Yes.", "**Yes**", "The answer is yes because ...", a JSON object wrapped in
prose or a code fence, nothing at all, or a refusal. :func:`read_decision` turns any of
these into yes / no / undecided and keeps the model's own words as the rationale; it
never guesses: a reply that does not say yes or no plainly is undecided, with the
reason (``"empty"``, ``"refusal"``, ``"unclear"``) saying why.

The texts the unit tests read were produced by a real model (SmolLM2-135M-Instruct
behind ``llama_cpp.server``; tests/test_llm_reading.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ReadDecision", "read_decision", "find_json_object"]

#: Markdown that carries no words: emphasis stars, code backticks, heading marks and quote marks at a line start.
_MARKUP = re.compile(r"\*+|`+|^[ \t]*(?:#+|>)[ \t]*", re.M)
_LEAD = re.compile(r"^\W*(yes|no|true|false)\b", re.I)
_STATED = re.compile(
    r"\b(?:answer|decision|verdict|conclusion)\b(?:\s+(?:to\s+(?:the|this)\s+question|here))?\s*(?:is|:|=|would\s+be)\s*"
    r"\W{0,3}(yes|no|true|false)\b",
    re.I,
)
_REFUSAL = re.compile(
    r"\b(?:i\s*(?:'|’)?m\s+sorry|i\s+am\s+sorry|i\s+(?:cannot|can\s*not|can(?:'|’)t|am\s+unable|(?:'|’)m\s+unable)"
    r"|as\s+an\s+ai\b|i\s+(?:do\s+not|don(?:'|’)t)\s+have\s+(?:enough|access|the\s+ability))",
    re.I,
)
#: "The document does not satisfy the condition." (the decide prompt's own words, as small models
#: answer it), at the start of the reply or after "The answer is:"; a conditional ("satisfies the
#: condition if ...") is not a decision.
_SATISFY = re.compile(
    r"^(?:the\s+answer\s+is\s*:?\s*)?(?:the|this)\s+(?:document|paper|report)\s+"
    r"(does\s+not\s+|doesn(?:'|’)t\s+|fails\s+to\s+|does\s+)?satisf(?:y|ies)\s+the\s+condition\b"
    r"(?!\s+(?:if|only\s+if|when|unless|provided)\b)",
    re.I,
)
_WORDS_TRUE = {"yes": True, "true": True, "no": False, "false": False}


@dataclass(frozen=True)
class ReadDecision:
    """What :func:`read_decision` read.

    Attributes:
        decision: True (yes), False (no) or None (undecided).
        rationale: The model's explanation: the JSON ``rationale`` when there is one,
            else the reply's own text with markup removed (whitespace collapsed; the
            caller bounds its length). Empty only for an empty reply.
        how: How it was read: ``"json"`` (a JSON object, possibly inside other text),
            ``"leading"`` (the reply starts with yes / no), ``"stated"`` ("the answer is
            yes"), or, undecided, ``"empty"``, ``"refusal"``, ``"unclear"``.
        evidence_ids: Ids the JSON object cited (unchecked; the caller keeps those it gave).
        confidence: The JSON object's confidence in [0, 1], else None.
    """

    decision: bool | None
    rationale: str
    how: str
    evidence_ids: tuple[str, ...] = ()
    confidence: float | None = None


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (a whole reply, one inside a code fence, or one
    with prose before or after it), or None when there is none."""
    dec = json.JSONDecoder()
    s = text or ""
    i = s.find("{")
    while i != -1:
        try:
            obj, _ = dec.raw_decode(s, i)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return obj
        i = s.find("{", i + 1)
    return None


def _as_bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return _WORDS_TRUE.get(v.strip().strip(".!").lower())
    return None


def _plain(text: str) -> str:
    return " ".join(_MARKUP.sub("", text or "").split())


def read_decision(text: str | None) -> ReadDecision:
    """Read a yes / no decision from a model's reply, whatever its form.

    Order: a JSON object with a boolean (or ``"yes"``/``"no"``) ``decision``; a reply
    that starts with yes / no / true / false (markdown bold and the like ignored); a
    reply that states "the answer is yes" / "decision: no"; a refusal ("I'm sorry, I
    can't ...") is undecided (``how="refusal"``); a reply that starts "The document
    (does not) satisfy the condition" (not "... if ..."); else undecided: an empty
    reply (``"empty"``) or anything else (``"unclear"``). Words like "no" inside a
    sentence are never read as the decision.

    Args:
        text: The reply's text (None = empty).

    Returns:
        A :class:`ReadDecision`; never raises on any string.
    """
    raw = text or ""
    if not raw.strip():
        return ReadDecision(None, "", "empty")
    obj = find_json_object(raw)
    if obj is not None and "decision" in obj:
        d = _as_bool(obj.get("decision"))
        if d is not None:
            why = obj.get("rationale")
            ids = obj.get("evidence_ids")
            conf = obj.get("confidence")
            conf = float(conf) if isinstance(conf, (int, float)) and not isinstance(conf, bool) and 0 <= conf <= 1 else None
            return ReadDecision(
                d,
                _plain(why) if isinstance(why, str) and why.strip() else _plain(raw),
                "json",
                tuple(str(i) for i in ids if isinstance(i, (str, int))) if isinstance(ids, list) else (),
                conf,
            )
    plain = _plain(raw)
    m = _LEAD.match(plain)
    if m:
        return ReadDecision(_WORDS_TRUE[m.group(1).lower()], plain, "leading")
    m = _STATED.search(plain)
    if m:
        return ReadDecision(_WORDS_TRUE[m.group(1).lower()], plain, "stated")
    if _REFUSAL.search(plain):
        return ReadDecision(None, plain, "refusal")
    m = _SATISFY.match(plain)
    if m:
        neg = (m.group(1) or "").strip().lower()
        return ReadDecision(not (neg and neg != "does"), plain, "stated")
    return ReadDecision(None, plain, "unclear")
