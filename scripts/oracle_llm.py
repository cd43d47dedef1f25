#!/usr/bin/env python
"""A label oracle speaking the Chat Completions protocol: the LLM for cascade tests and benchmarks.

It is the fake OpenAI-compatible server of ``tests/support/fake_openai_server.py`` (a real HTTP
server on 127.0.0.1) answering DocMaster's ``decide`` requests from a labels file: the
decision is the document's label for the condition, optionally flipped for a given
fraction of requests (a noisy LLM). Other tasks get an HTTP 500.

The decide prompt carries the condition (``<condition>...</condition>``) and the
evidence passages (``<document id="E1" ...>text</document>``), but no document id or
file name. The oracle identifies the document by its text: it indexes 8-word shingles of
every node of the workspace's document trees (the texts evidence is made from) and
picks the document sharing most shingles with the passages.

Labels file: TSV with a header ``condition<TAB>file<TAB>label`` (condition = its text).
Make one from the public labels (files under ``../shared/eval`` are read, never copied)::

    python scripts/oracle_llm.py labels --cases ../shared/eval/filter_cases.tsv \\
        --conditions ../shared/eval/filter_conditions.tsv --out /tmp/labels.tsv

Serve it (prints the base URL; Ctrl-C stops)::

    python scripts/oracle_llm.py serve --workspace WS --labels /tmp/labels.tsv [--flip 0.1] [--seed 0]
    docmaster filter "..." --workspace WS --llm openai --base-url URL --cascade

A (condition, document) pair with no label (the readers disagreed) is answered false.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import html
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from support.fake_openai_server import FakeOpenAIServer, Reply, documents_in, user_text  # noqa: E402

__all__ = ["normalize", "read_labels", "labels_from_eval", "write_labels", "DocumentFinder", "Oracle", "serve"]

_WORD = re.compile(r"[a-z0-9]+")
_COND = re.compile(r"<condition>(.*?)</condition>", re.S)
SHINGLE = 8


def normalize(text: str) -> str:
    """Lower-case, whitespace-collapsed text (conditions are matched on this)."""
    return " ".join((text or "").lower().split())


def read_labels(path: str | Path) -> dict[tuple[str, str], int]:
    """``{(normalized condition text, file name): 0 or 1}`` from a labels TSV."""
    with open(path, newline="", encoding="utf-8") as f:
        return {(normalize(r["condition"]), r["file"]): int(r["label"]) for r in csv.DictReader(f, delimiter="\t")}


def labels_from_eval(cases: str | Path, conditions: str | Path) -> list[tuple[str, str, int]]:
    """``(condition text, file, label)`` rows from ``filter_cases*.tsv`` and ``filter_conditions*.tsv``."""
    with open(conditions, newline="", encoding="utf-8") as f:
        text = {r["condition"]: r["text"] for r in csv.DictReader(f, delimiter="\t")}
    with open(cases, newline="", encoding="utf-8") as f:
        return [(text[r["condition"]], r["file"], int(r["label"])) for r in csv.DictReader(f, delimiter="\t")]


def write_labels(rows: Iterable[tuple[str, str, int]], out: str | Path) -> int:
    """Write a labels TSV; returns the number of rows."""
    n = 0
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t")
        w.writerow(["condition", "file", "label"])
        for row in rows:
            w.writerow(row)
            n += 1
    return n


def _shingles(text: str) -> set[int]:
    words = _WORD.findall(text.lower())
    if len(words) < SHINGLE:
        return {hash(" ".join(words))} if words else set()
    return {hash(" ".join(words[i:i + SHINGLE])) for i in range(len(words) - SHINGLE + 1)}


class DocumentFinder:
    """Which document of a workspace a passage comes from (8-word shingle votes).

    Args:
        workspace: Path of a DocMaster workspace.
    """

    def __init__(self, workspace: str | Path):
        from docmaster_core.retrieval.corpus import evidence_text
        from docmaster_core.store.workspace import Workspace

        ws = Workspace(workspace, create=False)
        self.index: dict[int, set[str]] = {}
        self.files: dict[str, str] = {}
        for rec in ws.documents():
            tree = ws.load_tree(rec.doc_id)
            self.files[rec.doc_id] = rec.file_name
            for n in tree.nodes:
                for t in (n.content, evidence_text(tree, n.id)):
                    for h in _shingles(t):
                        self.index.setdefault(h, set()).add(rec.file_name)

    def find(self, passages: Iterable[str]) -> str | None:
        """The file name whose text shares most shingles with ``passages`` (None: no overlap)."""
        votes: Counter = Counter()
        for p in passages:
            for h in _shingles(html.unescape(p)):
                for f in self.index.get(h, ()):
                    votes[f] += 1
        return votes.most_common(1)[0][0] if votes else None


class Oracle:
    """Labels, optionally flipped: the "LLM" of the benchmark.

    Args:
        labels: ``{(normalized condition, file): label}``.
        flip: Fraction of answers flipped, in [0, 1].
        seed: Seed of the flips (a flip is a deterministic function of the seed, the
            condition, the file and ``salt``, so the same request gets the same answer).
    """

    def __init__(self, labels: dict[tuple[str, str], int], flip: float = 0.0, seed: int = 0):
        if not 0.0 <= flip <= 1.0:
            raise ValueError(f"flip must be in [0, 1], got {flip!r}")
        self.labels, self.flip, self.seed = labels, flip, seed

    def flipped(self, condition: str, file: str, salt: str = "") -> bool:
        """Whether this answer is flipped."""
        if self.flip <= 0.0:
            return False
        h = hashlib.sha256(f"{self.seed}\0{normalize(condition)}\0{file}\0{salt}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2 ** 64 < self.flip

    def answer(self, condition: str, file: str | None, salt: str = "") -> bool:
        """The (possibly flipped) label; False for an unknown pair."""
        y = bool(self.labels.get((normalize(condition), file or ""), 0))
        return (not y) if self.flipped(condition, file or "", salt) else y


def responder(oracle: Oracle, finder: DocumentFinder):
    """The fake server's responder: ``decide`` from the oracle, HTTP 500 for anything else."""

    def respond(req):
        system = str(req.messages[0].get("content", "")) if req.messages else ""
        text = user_text(req)
        m = _COND.search(text)
        if m is None or '"decision"' not in system:
            return Reply(status=500, body={"error": {"message": "the oracle only decides", "type": "server_error"}})
        cond = html.unescape(m.group(1))
        blocks = documents_in(text)
        ids = [a.get("id") for a, _ in blocks]
        file = finder.find(inner for _, inner in blocks)
        salt = hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:16]
        yes = oracle.answer(cond, file, salt)
        return json.dumps({"decision": yes, "rationale": f"oracle label for {file}", "evidence_ids": ids[:1],
                           "confidence": 1.0})

    return respond


def serve(workspace: str | Path, labels: str | Path, flip: float = 0.0, seed: int = 0) -> FakeOpenAIServer:
    """Start an oracle server (the caller stops it); ``server.count`` counts its requests."""
    oracle = Oracle(read_labels(labels), flip, seed)
    return FakeOpenAIServer(responder(oracle, DocumentFinder(workspace))).start()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("labels", help="make a labels TSV from the public eval files")
    lp.add_argument("--cases", nargs="+", required=True)
    lp.add_argument("--conditions", nargs="+", required=True)
    lp.add_argument("--out", required=True)
    sp = sub.add_parser("serve", help="serve decide requests from a labels TSV")
    sp.add_argument("--workspace", "-w", required=True)
    sp.add_argument("--labels", required=True)
    sp.add_argument("--flip", type=float, default=0.0, help="fraction of answers flipped (noisy LLM)")
    sp.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.cmd == "labels":
        if len(args.cases) != len(args.conditions):
            ap.error("give one --conditions file per --cases file")
        rows = [r for c, t in zip(args.cases, args.conditions) for r in labels_from_eval(c, t)]
        print(f"{write_labels(rows, args.out)} labels -> {args.out}")
        return 0
    server = serve(args.workspace, args.labels, args.flip, args.seed)
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print(f"{server.count} requests served", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
