"""Parsing backends (SPEC F1): PDF -> :class:`~docmaster_core.model.ParsedDocument`.

Backends:

* ``"fast"`` (alias ``"pymupdf"``) — the embedded heuristic parser (:class:`PyMuPDFParser`),
  no model.
* ``"layout"`` — PyMuPDF's layout model via ``pymupdf4llm`` (:class:`LayoutParser`,
  ONNX, offline; ~0.5-0.9 s a page on 2 CPU cores).
* ``"mineru"`` — an installed MinerU run as a subprocess (:class:`MinerUParser`).
* ``"mineru-import"`` — MinerU output produced elsewhere (:func:`import_mineru`).
* ``"auto"`` — MinerU output next to the PDF if present, else an installed MinerU,
  else PyMuPDF with the layout model on the pages that need it (see :class:`AutoParser`).

PyMuPDF is imported lazily by the backends, so importing this package is cheap.
"""
from __future__ import annotations

from pathlib import Path

from ..config import ParsingSettings
from ..errors import ConfigError
from ..model import ParsedDocument
from .base import Parser
from .mineru import MinerUParser, find_mineru_output, import_mineru
from .pymupdf_parser import PyMuPDFParser
from .layout_model import LayoutParser, layout_available

__all__ = [
    "Parser",
    "AutoParser",
    "PyMuPDFParser",
    "LayoutParser",
    "layout_available",
    "MinerUParser",
    "get_parser",
    "parse_document",
    "import_mineru",
    "find_mineru_output",
]


class AutoParser:
    """Chooses a backend per file (SPEC F1 "auto").

    Order: (1) MinerU output beside the PDF (``<stem>_content_list.json``,
    ``<stem>/**/*_content_list.json``, ...; see :func:`find_mineru_output`) is
    imported; (2) else, when the ``mineru`` command is on PATH, it is run; (3) else
    the fast PyMuPDF parser is used, with the layout-model gate when
    ``settings.layout_gate`` (default on; :mod:`.pdf.gate`): pages holding display
    formulas or tables the fast parser missed are read with the layout model, which
    takes only those regions (``metadata["layout_pages"]``). ``parsed.parser`` names
    the backend that ran. The ``layout`` backend on every page is not chosen
    automatically: ~40x slower on a CPU and lower heading precision
    (docs/results/parsing_layout.md); ask for it with ``parser="layout"``.

    Attributes:
        name: ``"auto"``.
    """

    name = "auto"

    def __init__(self, settings: ParsingSettings | None = None) -> None:
        self.settings = settings or ParsingSettings()

    def parse(self, path: str | Path) -> ParsedDocument:
        """Parse ``path`` with the first available backend.

        Raises:
            ParseError: (or a subclass) from the backend that ran.
        """
        cl = find_mineru_output(path)
        if cl is not None:
            parsed = import_mineru(cl, pdf_path=path)
            parsed.path = str(path)
            return parsed
        mineru = MinerUParser(self.settings)
        if mineru.command is not None:
            return mineru.parse(path)
        return PyMuPDFParser(self.settings, gate=self.settings.layout_gate).parse(path)


def get_parser(name: str = "auto", settings: ParsingSettings | None = None) -> Parser:
    """Return a parser by name.

    Args:
        name: ``"auto"``, ``"fast"`` (alias ``"pymupdf"``), ``"layout"`` or ``"mineru"`` (``settings.parser`` is the
            usual source of the name).
        settings: Parsing settings passed to the backend.

    Raises:
        ConfigError: unknown name, or ``"mineru"`` when the MinerU command is missing.
    """
    st = settings or ParsingSettings()
    key = (name or "auto").lower()
    if key == "auto":
        return AutoParser(st)
    if key in ("pymupdf", "fast"):
        return PyMuPDFParser(st)
    if key == "layout":
        if not layout_available():
            raise ConfigError("parser 'layout' requested but pymupdf4llm / pymupdf.layout is not installed; "
                              "pip install pymupdf4llm==2.0, or use parser='fast'")
        return LayoutParser(st)
    if key == "mineru":
        p = MinerUParser(st)
        if p.command is None:
            raise ConfigError(f"parser 'mineru' requested but {st.mineru_command!r} is not on PATH; "
                              "install MinerU or use parser='pymupdf' / 'auto'")
        return p
    raise ConfigError(f"unknown parser {name!r}; choose 'auto', 'fast' (alias 'pymupdf'), 'layout' or 'mineru'")


def parse_document(path: str | Path, settings: ParsingSettings | None = None, parser: str = "auto") -> ParsedDocument:
    """Parse one document with :func:`get_parser` ``(parser, settings)``.

    A ``*_content_list.json`` (MinerU output) given directly is imported with
    :func:`~docmaster_core.parsing.mineru.import_mineru` whatever ``parser`` says.

    Args:
        path: The PDF file, or a MinerU ``*_content_list.json``.
        settings: Parsing settings (defaults).
        parser: Backend name (``"auto"``, ``"pymupdf"``, ``"mineru"``).

    Returns:
        The :class:`ParsedDocument` (elements in reading order, pages 1-based, boxes
        in PDF points).

    Raises:
        ParseError: unreadable file (subclasses ``EncryptedPDFError``,
            ``EmptyDocumentError``).
        ConfigError: unknown parser name.
    """
    if str(path).endswith("_content_list.json") or str(path).endswith("_content_list_v2.json"):
        from .mineru import import_mineru

        return import_mineru(path)
    return get_parser(parser, settings).parse(path)
