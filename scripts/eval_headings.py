#!/usr/bin/env python
"""Heading-detection quality of a parser (fast = heuristic PyMuPDF, or layout) against PDF outlines.

For every corpus PDF that has an outline (bookmarks), the document is parsed with the
outline *ignored* (``use_outline=False``), so headings come from numbering and font
size/weight only; the detected TITLE elements are compared with the outline entries.

Matching rules (documented here because they decide the numbers):

* Texts are normalised with :func:`docmaster_core.parsing.base.normalize_heading`:
  lower case, numbering ("3.2", "A.1", "II.") removed, only letters and digits kept.
  A detected title matches an outline entry when the normalised texts are equal, or
  when they are near-equal (``difflib`` ratio >= 0.85, or one is a prefix of the
  other covering >= 60 % of it: wrapped or truncated headings, "??" for broken
  LaTeX references). Matching is one-to-one (greedy, exact matches first), in
  document order, so a heading text repeated in the outline must be detected as
  often. Unmatched pairs get a second chance with a leading single-letter label
  removed on both sides (outline "C bAbI." vs. printed "Appendix C. bAbI.").
* **Recall** = matched outline entries / *visible* outline entries. An entry is
  visible when its normalised text occurs somewhere in the normalised text of the
  document (outline page numbers are sometimes wrong, e.g. PonderNet's appendix).
  Entries that are not printed in the document (e.g. "front cover", LaTeX
  "Proof of Theorem ??" with a broken reference) cannot be detected from the text and
  are reported separately as ``not_visible``.
* **Precision** = matched detected titles / detected titles, where a detected title
  that matches no entry but is a standard front/back-matter heading (Abstract,
  References, Acknowledgments, Appendix, Keywords, ... — ``FRONT_BACK_MATTER`` in
  ``docmaster_core.parsing.pymupdf_parser`` minus Introduction/Summary) is ignored:
  outlines built by LaTeX hyperref usually omit them although they are real
  headings in the text.
* Overall figures are micro-averaged over all documents.

Usage::

    python scripts/eval_headings.py [--corpus DIR] [--json] [--files GLOB] [--parser fast|layout] [--max-pages N]

Source: DocMaster SPEC F1 (headings "from font size / weight / numbering").
"""
from __future__ import annotations

import argparse
import difflib
import glob
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docmaster_core.config import ParsingSettings  # noqa: E402
from docmaster_core.model import NodeType  # noqa: E402
from docmaster_core.parsing.base import normalize_heading  # noqa: E402
from docmaster_core.parsing.pymupdf_parser import FRONT_BACK_MATTER, PyMuPDFParser  # noqa: E402


# front/back matter headings that outlines often omit (not counted when unmatched);
# "Introduction"/"Summary" are real sections and stay counted
IGNORABLE = FRONT_BACK_MATTER - {"introduction", "summary", "executivesummary"}


def _strip_letter(title: str) -> str:
    """Normalised text of a title without a leading single-letter label ("C bAbI.")."""
    return normalize_heading(title[2:]) if re.match(r"^[A-Z]\s", title.strip()) else normalize_heading(title)


def _similar(a: str, b: str) -> bool:
    if not a or not b:
        return False
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if long_.startswith(short) and len(short) >= 0.6 * len(long_):
        return True
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.85


def match(gold: list[str], pred: list[str]) -> list[tuple[int, int]]:
    """One-to-one matching of normalised gold and predicted heading texts; returns
    pairs ``(gold_index, pred_index)``; exact matches first, then near matches."""
    pairs: list[tuple[int, int]] = []
    used_p: set[int] = set()
    used_g: set[int] = set()
    for exact in (True, False):
        for gi, g in enumerate(gold):
            if gi in used_g:
                continue
            for pi, p in enumerate(pred):
                if pi in used_p:
                    continue
                ok = (g == p) if exact else _similar(g, p)
                if ok:
                    pairs.append((gi, pi))
                    used_g.add(gi)
                    used_p.add(pi)
                    break
    return pairs


def evaluate_file(path: Path, parser: PyMuPDFParser, max_pages: int | None = None) -> dict | None:
    """Evaluate one PDF; ``None`` when it has no outline (or more than ``max_pages`` pages)."""
    import pymupdf

    doc = pymupdf.open(str(path))
    try:
        toc = doc.get_toc(simple=True)
        if not toc or (max_pages is not None and doc.page_count > max_pages):
            return None
        full_text = "".join(normalize_heading(pg.get_text()) for pg in doc)
        gold, not_visible = [], []
        for lvl, title, pg in toc:
            n = normalize_heading(title)
            if not n:
                continue
            (gold if n in full_text else not_visible).append((title, n))
    finally:
        doc.close()
    t0 = time.perf_counter()
    parsed = parser.parse(path)
    dt = time.perf_counter() - t0
    titles = [e.text for e in parsed.elements if e.type == NodeType.TITLE]
    pred = [(t, normalize_heading(t)) for t in titles]
    pairs = match([g[1] for g in gold], [p[1] for p in pred])
    # second chance for single-letter labels the outline writes differently
    mg, mp = {g for g, _ in pairs}, {p for _, p in pairs}
    rest_g = [i for i in range(len(gold)) if i not in mg]
    rest_p = [i for i in range(len(pred)) if i not in mp]
    extra = match([_strip_letter(gold[i][0]) for i in rest_g], [_strip_letter(pred[i][0]) for i in rest_p])
    pairs += [(rest_g[a], rest_p[b]) for a, b in extra]
    matched_p = {pi for _, pi in pairs}
    matched_g = {gi for gi, _ in pairs}
    gold_norms = {g[1] for g in gold} | {g[1] for g in not_visible}
    ignored = [i for i, p in enumerate(pred) if i not in matched_p and p[1] in IGNORABLE and p[1] not in gold_norms]
    fp = [pred[i][0] for i in range(len(pred)) if i not in matched_p and i not in ignored]
    fn = [gold[i][0] for i in range(len(gold)) if i not in matched_g]
    tp = len(pairs)
    n_pred_counted = len(pred) - len(ignored)
    return {
        "file": path.name,
        "pages": parsed.n_pages,
        "seconds": round(dt, 3),
        "outline_entries": len(gold) + len(not_visible),
        "visible": len(gold),
        "not_visible": [t for t, _ in not_visible],
        "detected": len(pred),
        "ignored_front_back_matter": [pred[i][0] for i in ignored],
        "tp": tp,
        "recall": tp / len(gold) if gold else 1.0,
        "precision": tp / n_pred_counted if n_pred_counted else 1.0,
        "missed": fn,
        "false_positives": fp,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "pdf"), help="folder of PDFs")
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    ap.add_argument("--files", default="*.pdf", help="glob inside the corpus folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="list misses and false positives per file")
    ap.add_argument("--parser", choices=["fast", "pymupdf", "layout", "auto"], default="fast",
                    help="parser backend (fast = heuristic PyMuPDF parser, alias pymupdf; layout = PyMuPDF layout model; auto = fast + the layout model on gated pages)")
    ap.add_argument("--max-pages", type=int, default=None, help="only documents with at most N pages")
    args = ap.parse_args(argv)
    files = sorted(Path(p) for p in glob.glob(str(Path(args.corpus) / args.files)))
    if not files:
        print(f"no PDFs under {args.corpus}", file=sys.stderr)
        return 2
    from docmaster_core.parsing import get_parser

    parser = get_parser(args.parser, ParsingSettings(use_outline=False))
    rows = []
    for f in files:
        r = evaluate_file(f, parser, args.max_pages)
        if r is not None:
            rows.append(r)
    tp = sum(r["tp"] for r in rows)
    vis = sum(r["visible"] for r in rows)
    det = sum(r["detected"] - len(r["ignored_front_back_matter"]) for r in rows)
    overall = {
        "documents": len(rows),
        "outline_entries": sum(r["outline_entries"] for r in rows),
        "visible_entries": vis,
        "detected_titles_counted": det,
        "tp": tp,
        "recall": tp / vis if vis else 1.0,
        "precision": tp / det if det else 1.0,
    }
    overall["f1"] = (2 * overall["recall"] * overall["precision"] / (overall["recall"] + overall["precision"])
                     if overall["recall"] + overall["precision"] else 0.0)
    if args.json:
        print(json.dumps({"overall": overall, "documents": rows}, indent=1, ensure_ascii=False))
        return 0
    print(f"{'file':60s} {'vis':>4s} {'det':>4s} {'tp':>4s} {'R':>5s} {'P':>5s}")
    for r in rows:
        print(f"{r['file'][:60]:60s} {r['visible']:4d} {r['detected']:4d} {r['tp']:4d} {r['recall']:5.2f} {r['precision']:5.2f}")
        if args.verbose:
            for m in r["missed"]:
                print(f"      MISS {m!r}")
            for m in r["false_positives"]:
                print(f"      FP   {m!r}")
    print(f"\nOVERALL {args.parser} (micro, {overall['documents']} documents with an outline): "
          f"recall {overall['recall']:.3f}  precision {overall['precision']:.3f}  F1 {overall['f1']:.3f}  "
          f"(tp {tp}, visible outline entries {vis}, counted detections {det})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
