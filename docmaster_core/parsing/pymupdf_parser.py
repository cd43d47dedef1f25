"""Compatibility shim: the PyMuPDF parser now lives in the staged package
:mod:`docmaster_core.parsing.pdf` (one module per stage). Existing imports of
``PyMuPDFParser``, ``open_pdf`` and ``FRONT_BACK_MATTER`` from here keep working.
"""
from __future__ import annotations

from .pdf import FRONT_BACK_MATTER, PyMuPDFParser, open_pdf

__all__ = ["PyMuPDFParser", "open_pdf", "FRONT_BACK_MATTER"]
