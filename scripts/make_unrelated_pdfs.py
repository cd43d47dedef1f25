"""Write unrelated PDFs for the filter stability measurement (``scripts/stability_filter.py``).

Renders manual pages installed on this machine (``/usr/share/man/man1``, rendered with
``man``) into multi-page PDFs with PyMuPDF: real, varied, structured documents (NAME,
SYNOPSIS, DESCRIPTION, OPTIONS sections) about command-line software, unrelated to the
research papers, manuals and reports of the corpus. Nothing is copied into the
repository; the PDFs go to the output folder.

Usage::

    python scripts/make_unrelated_pdfs.py OUT_DIR [--n 63] [--seed 0] [--max-pages 6]
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
from pathlib import Path

import pymupdf


def render(name: str) -> str:
    """Plain text of one manual page (empty when ``man`` cannot render it)."""
    env = {**os.environ, "MANWIDTH": "90", "MAN_KEEP_FORMATTING": "0", "LC_ALL": "C.UTF-8"}
    try:
        out = subprocess.run(["man", "-P", "cat", name], capture_output=True, text=True, timeout=20, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout if out.returncode == 0 else ""


def write_pdf(text: str, title: str, path: Path, max_pages: int) -> int:
    """Write ``text`` (section headings are the unindented lines) to a PDF; returns its page count."""
    doc = pymupdf.open()
    lines = [ln.rstrip() for ln in text.splitlines()]
    y, page = 0.0, None
    for ln in [title, ""] + lines:
        if page is None or y > 740:
            if doc.page_count >= max_pages:
                break
            page = doc.new_page(width=612, height=792)
            y = 60.0
        if not ln.strip():
            y += 6
            continue
        heading = ln == title or (ln == ln.lstrip() and ln.isupper())
        size = 15 if ln == title else (12 if heading else 10)
        page.insert_text((60 if heading else 72, y), ln.strip()[:110], fontsize=size,
                         fontname="hebo" if heading else "tiro")
        y += size + 4
    n = doc.page_count
    doc.save(path)
    doc.close()
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=63)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-pages", type=int, default=6)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name.split(".")[0] for p in Path("/usr/share/man/man1").glob("*.1*.gz"))
    random.Random(a.seed).shuffle(names)
    made, families = 0, set()
    for name in names:
        if made >= a.n:
            break
        family = name.replace("-", "_").split("_")[0]  # one page per tool family (not 60 gcloud pages)
        if family in families:
            continue
        families.add(family)
        text = render(name)
        if len(text) < 3000:  # skip stubs
            continue
        pages = write_pdf(text, f"The {name} command: user manual", out / f"unrelated_man_{name}.pdf", a.max_pages)
        made += 1
        print(f"{name}: {pages} pages")
    print(f"{made} PDFs in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
