"""Reusable renderers: node content, page images with boxes, evidence passages.

Page images are rendered with PyMuPDF from the document's ``source_path`` at 1.5x
(108 dpi) and the boxes (PDF points, origin top-left, as stored in the document tree)
are drawn with PIL. When the source PDF is gone the renderers say so and go on.
All document text is shown escaped (see :mod:`ui.text`).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd
import streamlit as st

from .text import looks_like_latex, md_escape, one_line

__all__ = [
    "ZOOM",
    "resolve_pdf",
    "page_png",
    "page_with_boxes",
    "render_page_image",
    "table_frame",
    "render_node_content",
    "section_line",
    "render_evidence",
    "vector_bars",
]

ZOOM = 1.5
_COLORS = ["#dc2626", "#2563eb", "#16a34a", "#d97706", "#7c3aed", "#0891b2"]


def resolve_pdf(source_path: str | None) -> Path | None:
    """The PDF to render for a document, or None when it is not on disk.

    A MinerU ``X_content_list.json`` source maps to ``X.pdf`` beside it.
    """
    if not source_path:
        return None
    p = Path(source_path)
    cands = [p]
    if p.name.endswith("_content_list.json"):
        stem = p.name[: -len("_content_list.json")]
        cands += [p.with_name(stem + ".pdf"), p.with_name(stem + "_origin.pdf"), p.parent.parent / (stem + ".pdf")]
    for c in cands:
        if c.suffix.lower() == ".pdf" and c.is_file():
            return c
    return None


@st.cache_data(max_entries=64, show_spinner=False)
def page_png(pdf_path: str, mtime: float, page: int, zoom: float = ZOOM) -> bytes | None:
    """PNG bytes of one page rendered at ``zoom`` (1.0 = 72 dpi); None when the page
    does not exist or the file cannot be opened. ``mtime`` keys the cache."""
    import pymupdf as fitz

    try:
        with fitz.open(pdf_path) as doc:
            if not 1 <= page <= doc.page_count:
                return None
            pix = doc[page - 1].get_pixmap(matrix=fitz.Matrix(zoom, zoom), alpha=False)
            return pix.tobytes("png")
    except (RuntimeError, ValueError, OSError):
        return None


def page_with_boxes(
    pdf: Path, page: int, boxes: Sequence[Sequence[float]], labels: Sequence[str] | None = None, zoom: float = ZOOM
):
    """The page image with rectangles drawn on it.

    Args:
        pdf: PDF file.
        page: 1-based page number.
        boxes: ``(x0, y0, x1, y1)`` in PDF points (origin top-left).
        labels: Optional short label per box (e.g. evidence ids).
        zoom: Render scale.

    Returns:
        A ``PIL.Image.Image`` (RGB), or None when the page cannot be rendered.
    """
    from PIL import Image, ImageDraw

    png = page_png(str(pdf), pdf.stat().st_mtime, int(page), zoom)
    if png is None:
        return None
    img = Image.open(io.BytesIO(png)).convert("RGB")
    overlay = Image.new("RGBA", img.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for i, b in enumerate(boxes):
        x0, y0, x1, y1 = (float(v) * zoom for v in b[:4])
        if x1 < x0:
            x0, x1 = x1, x0
        if y1 < y0:
            y0, y1 = y1, y0
        color = _COLORS[i % len(_COLORS)]
        rgb = tuple(int(color[j : j + 2], 16) for j in (1, 3, 5))
        draw.rectangle([x0 - 2, y0 - 2, x1 + 2, y1 + 2], outline=rgb + (255,), width=3, fill=rgb + (40,))
        if labels and i < len(labels) and labels[i]:
            tx, ty = x0, max(0.0, y0 - 14)
            text = str(labels[i])[:12]
            draw.rectangle([tx, ty, tx + 7 * len(text) + 6, ty + 13], fill=rgb + (230,))
            draw.text((tx + 3, ty), text, fill=(255, 255, 255, 255))
    return Image.alpha_composite(img.convert("RGBA"), overlay).convert("RGB")


def render_page_image(
    source_path: str | None,
    page: int,
    boxes: Sequence[Sequence[float]] = (),
    labels: Sequence[str] | None = None,
    caption: str | None = None,
    zoom: float = ZOOM,
) -> bool:
    """Show page ``page`` (1-based) of the document with boxes, rendered at ``zoom``
    pixels per PDF point; returns False (and says why) when the PDF is not available."""
    pdf = resolve_pdf(source_path)
    if pdf is None:
        st.info(f"Page image unavailable: the source PDF is not on disk ({one_line(source_path)}).")
        return False
    img = page_with_boxes(pdf, page, boxes, labels, zoom=zoom)
    if img is None:
        st.info(f"Page {page} could not be rendered from {pdf.name}.")
        return False
    st.image(img, caption=caption or f"page {page}", width="stretch")
    return True


def _unique(names: Iterable[Any]) -> list[str]:
    out, seen = [], {}
    for i, n in enumerate(names):
        s = one_line(n) or f"col{i + 1}"
        if s in seen:
            seen[s] += 1
            s = f"{s}.{seen[s]}"
        else:
            seen[s] = 0
        out.append(s)
    return out


def table_frame(rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """A table node's ``extra["rows"]`` as a DataFrame (first row as header when it
    has no empty cell), every cell as text."""
    rows = [["" if c is None else str(c) for c in r] for r in rows if r is not None]
    if not rows:
        return pd.DataFrame()
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    if len(rows) > 1 and all(c.strip() for c in rows[0]):
        return pd.DataFrame(rows[1:], columns=_unique(rows[0]))
    return pd.DataFrame(rows, columns=[f"col{i + 1}" for i in range(width)])


def section_line(path: Sequence[str]) -> str:
    """Section path as one line, e.g. ``"3 Method › 3.2 Training"``."""
    return " › ".join(one_line(p) for p in path) if path else "(document)"


def render_node_content(node: Any) -> None:
    """Raw content of a node: tables as tables, LaTeX-looking equations with
    ``st.latex`` (else code), other text escaped."""
    t = node.type.value
    if t == "TABLE":
        rows = node.extra.get("rows") if isinstance(node.extra, dict) else None
        if node.extra.get("caption"):
            st.caption(md_escape(node.extra["caption"]))
        if rows:
            st.dataframe(table_frame(rows), hide_index=True, width="stretch")
        elif node.content:
            st.code(node.content, language=None, wrap_lines=True)
        else:
            st.caption("(empty table)")
    elif t == "EQUATION":
        text = node.content or ""
        if looks_like_latex(text):
            st.latex(text)
            with st.expander("source"):
                st.code(text, language="latex", wrap_lines=True)
        else:
            st.code(text or "(empty)", language=None, wrap_lines=True)
    elif t == "IMAGE":
        cap = node.extra.get("caption") if isinstance(node.extra, dict) else None
        st.markdown(md_escape(cap or node.content or "(image without caption)"))
    elif t in ("TITLE", "ROOT"):
        st.markdown("**" + md_escape(node.content or "(untitled)") + "**")
    else:
        st.markdown(md_escape(node.content or "(empty)"))


def render_evidence(
    ev: dict[str, Any], source_path: str | None = None, show_image: bool = False, key: str | None = None,
    label: str | None = None,
) -> None:
    """One evidence passage (``Evidence.to_dict()``): id, strategy, score, page,
    section path and text; with ``show_image`` also its page with the box. ``label``
    replaces the evidence id at the head ("closest 1 (C5)")."""
    head = (
        f"{label or ev.get('evidence_id', '')} · {ev.get('strategy', '')} · score {float(ev.get('score', 0.0)):.3f} · "
        f"p. {ev.get('page', '?')} · {ev.get('node_type', '')} #{ev.get('node_id', '')}"
    )
    st.caption(md_escape(head))
    st.caption(md_escape(section_line(ev.get("section_path") or [])))
    st.markdown(md_escape(ev.get("text", "")))
    if show_image and ev.get("page"):
        boxes = [ev["bbox"]] if ev.get("bbox") else []
        render_page_image(source_path, int(ev["page"]), boxes, [str(ev.get("evidence_id", ""))])


def vector_bars(v: Sequence[float], width: int = 768, height: int = 150):
    """A bar picture of an embedding's components (one bar per dimension, blue above
    zero, red below, zero line grey), drawn with PIL: an image element instead of a
    chart, so the page loads no charting library for it.

    Args:
        v: float (d,) the vector.
        width, height: Picture size in pixels.

    Returns:
        ``PIL.Image.Image`` (RGB).
    """
    import numpy as np
    from PIL import Image, ImageDraw

    v = np.asarray(v, dtype=np.float64)
    img = Image.new("RGB", (width, height), (255, 255, 255))
    d = ImageDraw.Draw(img)
    m = float(np.max(np.abs(v))) if v.size else 0.0
    mid = height / 2
    if v.size and m > 0:
        bw = width / v.size
        for i, x in enumerate(v.tolist()):
            h = (x / m) * (height / 2 - 4)
            x0, x1 = i * bw, max(i * bw + 0.6, (i + 1) * bw - 0.4)
            d.rectangle([x0, min(mid, mid - h), x1, max(mid, mid - h)], fill=(37, 99, 235) if x >= 0 else (220, 38, 38))
    d.line([0, mid, width, mid], fill=(156, 163, 175), width=1)
    return img
