"""Stage "open and check": input checks of SPEC F1 before any parsing."""
from __future__ import annotations

from pathlib import Path

from ...config import ParsingSettings
from ...errors import EncryptedPDFError, ParseError


def open_pdf(path: str | Path, settings: ParsingSettings | None = None):
    """Open a PDF with PyMuPDF after the input checks of SPEC F1.

    Args:
        path: PDF file.
        settings: Parsing settings (``max_file_mb``, ``page_limit``).

    Returns:
        An open ``pymupdf.Document`` (authenticated when it had an empty password).

    Raises:
        ParseError: missing, empty, larger than ``max_file_mb``, not a PDF, truncated
            or damaged, no pages, more than ``page_limit`` pages.
        EncryptedPDFError: encrypted with a non-empty password.
    """
    import pymupdf

    st = settings or ParsingSettings()
    p = Path(path)
    name = p.name
    if not p.is_file():
        raise ParseError(f"{name}: file not found")
    size = p.stat().st_size
    if size == 0:
        raise ParseError(f"{name}: empty file (0 bytes)")
    if size > st.max_file_mb * 1024 * 1024:
        raise ParseError(f"{name}: file is {size / 2**20:.1f} MiB, over the {st.max_file_mb:g} MiB limit")
    with open(p, "rb") as fh:
        head = fh.read(1024)
        fh.seek(max(0, size - 2048))
        tail = fh.read()
    if b"%PDF-" not in head:
        raise ParseError(f"{name}: not a PDF file (no %PDF header)")
    try:
        try:
            str(p).encode("utf-8")
        except UnicodeEncodeError:
            # a non-UTF-8 file name (bytes decoded with surrogateescape): MuPDF takes
            # UTF-8 names only, so the bytes are handed over instead
            doc = pymupdf.open(stream=p.read_bytes(), filetype="pdf")
        else:
            doc = pymupdf.open(str(p), filetype="pdf")
    except Exception as exc:  # PyMuPDF raises FileDataError/RuntimeError on broken files
        raise ParseError(f"{name}: cannot open PDF ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'damaged'})") from exc
    try:
        if doc.needs_pass:
            if not doc.authenticate(""):
                raise EncryptedPDFError(f"{name}: PDF is encrypted with a password")
        truncated = b"%%EOF" not in tail
        n = doc.page_count
        if n == 0:
            raise ParseError(f"{name}: PDF has no pages (truncated or damaged)")
        if truncated and getattr(doc, "is_repaired", False):
            raise ParseError(f"{name}: PDF is truncated (no %%EOF marker, cross-reference table damaged)")
        if n > st.page_limit:
            raise ParseError(f"{name}: {n} pages, over the page limit of {st.page_limit}")
    except ParseError:
        doc.close()
        raise
    except Exception as exc:  # a damaged page tree: PyMuPDF raises RuntimeError/ValueError
        doc.close()
        raise ParseError(f"{name}: damaged PDF ({first_line(exc)})") from exc
    return doc


def first_line(exc: BaseException) -> str:
    """``"Type: first line of the message"`` of an exception (one line, at most 160 chars)."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:160]}" if msg else type(exc).__name__
