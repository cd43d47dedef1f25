"""Text helpers for showing document text and file names safely.

Document text and file names are data, never markup: wherever the app passes them to
``st.markdown`` / ``st.caption`` they go through :func:`md_escape`, which
backslash-escapes every Markdown-significant ASCII punctuation character (CommonMark
allows escaping any of them) including Streamlit's ``:color[...]`` / ``:emoji:``
directives and ``$`` (LaTeX). HTML is never enabled (no ``unsafe_allow_html``).
"""
from __future__ import annotations

import re

__all__ = ["md_escape", "one_line", "shorten", "looks_like_latex", "plural"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:=^&\"'])")
_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def md_escape(text: object) -> str:
    """Escape ``text`` so ``st.markdown`` shows it literally.

    Control characters and bidi overrides are removed; line breaks are kept as
    Markdown hard breaks so paragraphs read as in the source.
    """
    s = _CTRL.sub("", str(text if text is not None else ""))
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return s.replace("\r\n", "\n").replace("\n", "  \n")


def one_line(text: object) -> str:
    """Whitespace folded to single spaces, control characters removed."""
    return " ".join(_CTRL.sub(" ", str(text if text is not None else "")).split())


def shorten(text: object, n: int = 80) -> str:
    """:func:`one_line` cut to at most ``n`` characters (with an ellipsis when cut)."""
    s = one_line(text)
    return s if len(s) <= n else s[: max(1, n - 1)].rstrip() + "…"


_LATEX_HINT = re.compile(r"\\[A-Za-z]{2,}|\^\{|_\{|\\\\|\\[,;!]")


def looks_like_latex(text: str) -> bool:
    """True when an equation's text looks like LaTeX (``\\frac``, ``^{...}``, ``_{...}``).

    Plain extracted text (e.g. ``"E = mc2 (1)"``) returns False and is shown as code.
    """
    return bool(text) and bool(_LATEX_HINT.search(text))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 document"``, ``"3 documents"`` (``many`` for an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
