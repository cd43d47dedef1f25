"""Answers an oracle gave about (condition, document) pairs: the review's memory (issue 33).

A mixin of :class:`docmaster_core.store.workspace.Workspace` (which supplies ``_con`` and
``transaction``). One row per (condition, document, source) in the ``judgements`` table:
``label`` 1 (match) or 0 (no match), ``source`` ``"user"`` (answered on the Filter page's
*Review* or in ``docmaster review``) or ``"labels"`` (read from a labels file by
``docmaster review --labels``), an optional note and the Unix time in seconds. An answer
given by hand outranks one read from a file for the same pair. Every filter run uses
them (they outrank the LLM and the offline rule); an LLM's own answers are not stored
here (the LLM response cache re-uses them for the same evidence). Conditions are keyed by their whitespace-normalised text, the
form a filter run stores.
"""
from __future__ import annotations

import csv
import io
import time
from typing import Iterable, Mapping

__all__ = ["JudgementStore", "SOURCES", "condition_key"]

#: Where an answer came from, strongest first: by hand, then from a labels file.
SOURCES = ("user", "labels")


def condition_key(condition: str) -> str:
    """The whitespace-normalised condition text answers are stored under."""
    return " ".join((condition or "").split())


class JudgementStore:
    """Stored oracle answers per condition (see the module docstring)."""

    def save_judgements(self, condition: str, answers: Mapping[str, bool | None], source: str = "user",
                        note: str = "") -> int:
        """Store answers ``{doc_id: True / False}`` for ``condition``; ``None`` removes that answer.

        Returns:
            Rows written or removed.

        Raises:
            ValueError: empty condition, unknown source, or a doc_id not in the workspace
                (nothing is written then).
        """
        key = condition_key(condition)
        if not key:
            raise ValueError("an answer needs a condition")
        if source not in SOURCES:
            raise ValueError(f"unknown answer source {source!r}; choose {' or '.join(SOURCES)}")
        known = {r[0] for r in self._con().execute("SELECT doc_id FROM documents").fetchall()}
        bad = [d for d in answers if d not in known]
        if bad:
            raise ValueError(f"no document {bad[0]!r} in this workspace; no answer was stored")
        now = time.time()
        with self.transaction() as con:
            for doc_id, v in answers.items():
                if v is None:
                    con.execute("DELETE FROM judgements WHERE condition=? AND doc_id=? AND source=?",
                                (key, doc_id, source))
                else:
                    con.execute("INSERT OR REPLACE INTO judgements(condition, doc_id, label, source, note, at) "
                                "VALUES(?,?,?,?,?,?)", (key, doc_id, int(bool(v)), source, note, now))
        return len(answers)

    def judgements(self, condition: str, sources: Iterable[str] = SOURCES) -> dict[str, tuple[bool, str]]:
        """``{doc_id: (label, source)}`` for ``condition``: per document the answer of the
        strongest source among ``sources`` (by hand before a labels file)."""
        want = [s for s in SOURCES if s in set(sources)]
        if not want:
            return {}
        rows = self._con().execute(
            f"SELECT doc_id, label, source FROM judgements WHERE condition=? AND source IN ({','.join('?' * len(want))})",
            (condition_key(condition), *want)).fetchall()
        out: dict[str, tuple[bool, str]] = {}
        for doc_id, label, source in sorted(rows, key=lambda r: SOURCES.index(r[2]), reverse=True):
            out[str(doc_id)] = (bool(label), str(source))  # the strongest source is written last
        return out

    def judged_conditions(self) -> list[tuple[str, int]]:
        """``(condition, answers)`` of every condition with stored answers, most answers first."""
        rows = self._con().execute(
            "SELECT condition, COUNT(*) FROM judgements GROUP BY condition ORDER BY COUNT(*) DESC").fetchall()
        return [(str(c), int(n)) for c, n in rows]

    def export_cases(self, condition: str, condition_id: str = "C1", sources: Iterable[str] = SOURCES) -> str:
        """The answers for ``condition`` as a cases TSV in the format of ``../shared/eval``
        (``file  condition  label  page  evidence``), readable by ``docmaster eval filter``
        with a conditions file holding ``condition_id<TAB>condition``."""
        files = {r[0]: r[1] for r in self._con().execute("SELECT doc_id, file_name FROM documents").fetchall()}
        buf = io.StringIO()
        w = csv.writer(buf, delimiter="\t", lineterminator="\n")
        w.writerow(["file", "condition", "label", "page", "evidence"])
        for doc_id, (label, _src) in sorted(self.judgements(condition, sources).items(),
                                            key=lambda kv: files.get(kv[0], kv[0])):
            if doc_id in files:
                w.writerow([files[doc_id], condition_id, int(label), "", ""])
        return buf.getvalue()
