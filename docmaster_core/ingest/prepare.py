"""Preparing one document for the workspace: parse -> document tree -> embedding texts
-> vectors (SPEC F1, F2), with no workspace access, so that both ingest executors
(``local`` in :mod:`docmaster_core.ingest.stage`, ``ray`` in
:mod:`docmaster_core.ingest.ray_executor`) run the same code; plus the events and
results an ingest reports.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import DocMasterError, ParseError
from ..model import DocumentTree, NodeType, ParsedDocument

__all__ = [
    "EXECUTORS",
    "IngestEvent",
    "IngestResult",
    "PreparedDocument",
    "collect_inputs",
    "embed_prepared",
    "failure_reason",
    "node_embedding_text",
    "parse_file",
    "parser_note",
    "prepare_document",
]

INPUT_SUFFIXES = (".pdf",)
#: The ingest executors (``settings.ingest.executor``).
EXECUTORS = ("local", "ray")
MINERU_SUFFIX = "_content_list.json"


@dataclass
class IngestEvent:
    """A progress event: ``stage`` is one of queued, parsing, summarising, embedding,
    storing, indexing, done, skipped, failed. ``elapsed`` is seconds since the file started."""

    file: str
    index: int
    total: int
    stage: str
    elapsed: float = 0.0
    message: str = ""


@dataclass
class IngestResult:
    """Outcome for one input file."""

    file: str
    status: str  # "ingested", "skipped", "failed"
    doc_id: str | None = None
    reason: str = ""
    pages: int = 0
    nodes: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    #: LLM-dependent steps that failed for a stored document ("summaries", "index")
    llm_gaps: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "status": self.status,
            "doc_id": self.doc_id,
            "reason": self.reason,
            "pages": self.pages,
            "nodes": self.nodes,
            "counts": self.counts,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "llm_gaps": list(self.llm_gaps),
        }


def collect_inputs(paths: Iterable[str | os.PathLike]) -> tuple[list[Path], list[IngestResult]]:
    """Expand files and folders into the PDFs (and MinerU content lists) to ingest.

    Folders are searched recursively for ``*.pdf``; a ``*_content_list.json`` is taken
    only when given directly (beside a PDF it is picked up by the parser).
    Returns the inputs (sorted, de-duplicated) and failures for paths that do not exist
    or have an unsupported type.
    """
    out: list[Path] = []
    bad: list[IngestResult] = []
    seen = set()
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file() and q.suffix.lower() in INPUT_SUFFIXES)
        elif p.is_file():
            if p.suffix.lower() in INPUT_SUFFIXES or p.name.endswith(MINERU_SUFFIX):
                found = [p]
            else:
                bad.append(IngestResult(str(p), "failed", reason=f"{p.name}: unsupported file type (expected .pdf or *{MINERU_SUFFIX})"))
                found = []
        else:
            bad.append(IngestResult(str(p), "failed", reason=f"{p}: no such file or folder"))
            found = []
        for q in found:
            rq = q.resolve()
            if rq not in seen:
                seen.add(rq)
                out.append(q)
    return out, bad


def node_embedding_text(tree: DocumentTree, node_id: int) -> str:
    """The text embedded for a node: its content; a section path for empty content;
    the document title for ROOT."""
    n = tree.nodes[node_id]
    if n.type == NodeType.ROOT:
        return tree.title or tree.source or "document"
    text = (n.content or "").strip()
    if n.type in (NodeType.IMAGE, NodeType.TABLE) and n.extra.get("caption") and n.extra["caption"] not in text:
        text = (n.extra["caption"] + "\n" + text).strip()
    if not text:
        text = " / ".join(n.section_path) or n.type.value.lower()
    return text


@dataclass
class PreparedDocument:
    """One document ready to store: everything ingest computes before the LLM steps
    and the workspace write, with no workspace access (so it can run on a Ray worker).

    Attributes:
        tree: The document tree (``doc_id`` = first 16 hex digits of the SHA-256;
            pages 1-based, boxes in PDF points; summaries not yet filled).
        texts: The embedded text of each node (:func:`node_embedding_text`), len |V|.
        parser: The parser backend that produced it.
        page_sizes: ``[(width, height)]`` per page in PDF points.
        timings: Seconds per stage so far: ``parse``, ``tree`` and, once embedded, ``embed``.
        embeddings: float32 array (|V|, d) of unit rows, row i = node i; ``None`` until
            :func:`embed_prepared`.
        embedding_model: Name of the embedder that made ``embeddings``.
        parser_note: The parser's one-line note for the ingest report (e.g. "2 of 15
            pages re-read with the layout model, ... (2 for a formula)"; characters lost inside
            words, :func:`parser_note`), "" when none.
    """

    tree: DocumentTree
    texts: list[str]
    parser: str
    page_sizes: list[tuple[float, float]]
    timings: dict[str, float]
    embeddings: np.ndarray | None = None
    embedding_model: str = ""
    parser_note: str = ""


def parse_file(path: Path, parsing) -> tuple[ParsedDocument, float]:
    """Parse one file with the backend ``parsing.parser``.

    Args:
        path: A PDF or a MinerU ``*_content_list.json``.
        parsing: :class:`~docmaster_core.config.ParsingSettings`.

    Returns:
        The parsed document and the parse time in seconds.

    Raises:
        ParseError: the file cannot be parsed (one-line reason naming the file).
        ConfigError: unknown parser backend.
    """
    from ..parsing import parse_document

    t0 = time.perf_counter()
    parsed = parse_document(path, settings=parsing, parser=parsing.parser)
    return parsed, time.perf_counter() - t0


def build_prepared(parsed: ParsedDocument, path: Path, sha: str, parsing, t_parse: float = 0.0) -> PreparedDocument:
    """Document tree and embedding texts of a parsed file (no vectors yet).

    Args:
        parsed: The parser's output for ``path``.
        path: The input file (its name becomes the tree's ``source``).
        sha: The file's SHA-256 (hex); ``doc_id`` is its first 16 digits.
        parsing: :class:`~docmaster_core.config.ParsingSettings`.
        t_parse: Seconds the parse took (recorded in ``timings``).

    Raises:
        ParseError: the tree has no content node (``<name>: no content found``).
    """
    from ..tree.build import build_tree

    t0 = time.perf_counter()
    tree = build_tree(parsed, sha[:16], parsing)
    tree.source = tree.source or (path.name if path.suffix.lower() == ".pdf" else Path(parsed.path).name)
    t_tree = time.perf_counter() - t0
    if not any(n.type.is_content for n in tree.nodes):
        raise ParseError(f"{path.name}: no content found")
    texts = [node_embedding_text(tree, n.id) for n in tree.nodes]
    return PreparedDocument(tree, texts, parsed.parser, list(parsed.page_sizes), {"parse": t_parse, "tree": t_tree},
                            parser_note=parser_note(parsed))


def parser_note(parsed) -> str:
    """The parser's notes for the ingest report, one line: pages re-read with the layout
    model (``layout_note``) and characters lost inside words (``unreadable_note``); "" when
    there is nothing to say."""
    meta = parsed.metadata or {}
    return "; ".join(str(meta[k]) for k in ("layout_note", "unreadable_note") if meta.get(k))


def embed_prepared(prep: PreparedDocument, embedder) -> PreparedDocument:
    """Fill ``prep.embeddings`` (float32 (|V|, d)) from ``prep.texts`` with ``embedder``
    and record ``timings["embed"]`` (seconds); returns ``prep``.

    Raises:
        EmbeddingError: the embedder failed.
    """
    t0 = time.perf_counter()
    prep.embeddings = np.asarray(embedder.encode(prep.texts), dtype=np.float32)
    prep.embedding_model = getattr(embedder, "name", "")
    prep.timings["embed"] = time.perf_counter() - t0
    return prep


def prepare_document(path: Path, sha: str, parsing, embedder=None) -> PreparedDocument:
    """Parse -> tree -> embedding texts (-> vectors when ``embedder`` is given) of one
    file: the pure per-document work of ingest, shared by every executor.

    Raises:
        ParseError, ConfigError: as :func:`parse_file` and :func:`build_prepared`.
        EmbeddingError: the embedder failed.
    """
    parsed, t_parse = parse_file(path, parsing)
    prep = build_prepared(parsed, path, sha, parsing, t_parse)
    return embed_prepared(prep, embedder) if embedder is not None else prep


def failure_reason(path: Path, err: BaseException) -> str:
    """The reason recorded for a file whose ingest raised ``err`` (before the file
    name prefix and one-line clean-up of :meth:`IngestStage._fail`): ``str(err)`` for a
    DocMaster error, else ``<name>: unexpected <Type>: <message>``."""
    if isinstance(err, DocMasterError):
        return str(err)
    return f"{path.name}: unexpected {type(err).__name__}: {err}"


