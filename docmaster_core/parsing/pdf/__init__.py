"""Staged PyMuPDF parser (SPEC F1), one module per stage; see :mod:`.parser`.

Public names: :class:`PyMuPDFParser`, :func:`open_pdf`, :data:`FRONT_BACK_MATTER`.
"""
from __future__ import annotations

from .common import FRONT_BACK_MATTER, ParseContext
from .opening import open_pdf
from .parser import PyMuPDFParser

__all__ = ["PyMuPDFParser", "open_pdf", "FRONT_BACK_MATTER", "ParseContext"]
