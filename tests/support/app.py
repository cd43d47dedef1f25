"""Helpers of the app tests (``tests/test_app*.py``): the app under
``streamlit.testing.v1.AppTest``, page texts, the collection table, and the small
paper-like PDFs the app workspace is built from. The fixtures that build that
workspace (``app_env``, ``app_uploaded``) are in ``tests/conftest.py``."""
from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
#: Seconds one app run may take (a first run loads the embedding model).
TIMEOUT = 180

PARAS = {
    "retrieval": [
        "Dense passage retrieval encodes questions and passages with two BERT encoders and retrieves the "
        "passages whose embeddings have the highest inner product with the question embedding.",
        "We evaluate retrieval accuracy on Natural Questions and TriviaQA, two open-domain question answering "
        "benchmarks, and report top-20 accuracy of the retrieved passages.",
    ],
    "storage": [
        "The storage layer keeps sorted string tables on a distributed file system; tablets are split when they "
        "grow beyond a size threshold and are served by tablet servers.",
        "Write throughput and read latency were measured on a cluster of fifty servers under a mixed workload "
        "of random reads and sequential writes.",
    ],
}


def make_pdf(path: Path, title: str, topic: str, with_table: bool = True) -> Path:
    """A two-page paper-like PDF: title, numbered bold headings, paragraphs, a ruled
    table with a caption and a display equation (PyMuPDF only)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 80), title, fontsize=18, fontname="hebo")
    y = 120
    sections = [("1 Introduction", PARAS[topic][:1]), ("2 Method", PARAS[topic][1:]),
                ("3 Results", [PARAS[topic][0].replace("The", "Our")])]
    for head, paras in sections:
        page.insert_text((72, y), head, fontsize=13, fontname="hebo")
        y += 20
        for para in paras:
            rect = pymupdf.Rect(72, y, 523, y + 70)
            page.insert_textbox(rect, para, fontsize=10, fontname="helv")
            y += 80
    if with_table:
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 80), "4 Evaluation", fontsize=13, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 95, 523, 150), PARAS[topic][1], fontsize=10, fontname="helv")
        page.insert_text((72, 170), "Table 1: Accuracy and latency of the systems.", fontsize=9, fontname="helv")
        rows = [["System", "Accuracy", "Latency"], ["Baseline", "61.2", "35 ms"], ["Ours", "78.4", "12 ms"]]
        x0, y0, cw, rh = 72, 180, 130, 22
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                rect = pymupdf.Rect(x0 + c * cw, y0 + r * rh, x0 + (c + 1) * cw, y0 + (r + 1) * rh)
                page.draw_rect(rect, color=(0, 0, 0), width=0.8)
                page.insert_text((rect.x0 + 4, rect.y1 - 7), cell, fontsize=9, fontname="helv")
        page.insert_text((230, 290), "L = - sum_i log p(y_i | x_i)        (1)", fontsize=10, fontname="helv")
    doc.save(path)
    doc.close()
    return path


def run_app(at: AppTest) -> AppTest:
    """Run the app script once; fail on any exception box."""
    at.run(timeout=TIMEOUT)
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_app(page: str | None = None) -> AppTest:
    """A new app session (as a browser reload gives), switched to ``page`` when given."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    run_app(at)
    if page:
        at.switch_page(page)
        run_app(at)
    return at


def collection_table(at: AppTest):
    """The Upload page's collection table (the dataframe with a ``doc_id`` column)."""
    frames = [df.value for df in at.dataframe if "doc_id" in df.value.columns and "parser" in df.value.columns]
    assert frames, "no collection table"
    return frames[0]


def page_texts(at: AppTest) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "text", "code", "subheader", "title"):
        out += [str(getattr(e, "value", "")) for e in getattr(at, kind)]
    out += [str(getattr(e, "label", "")) for e in at.expander]
    return [re.sub(r"\\(.)", r"\1", t) for t in out]  # undo md_escape


def doc_key(at: AppTest, base: str) -> str:
    """The key of a per-document widget of the current document."""
    return f"{base}_{at.session_state['dm_doc_id']}"
