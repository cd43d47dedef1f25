#!/usr/bin/env python
"""Clause headings and titles of contracts against a hand-labelled reference (issue 34).

The reference (``scripts/data/contract_headings.tsv``) was labelled here, by reading
the pages of 16 public CUAD contracts in different heading styles, without DocMaster's
output. It stores no contract text: each heading is kept as the SHA-1 of its
normalised text (:func:`key`), its page, level, numbering and kind (``heading`` on its
own line, ``runin`` at the start of a paragraph, ``doctitle`` the document's title).
``--make-reference TSV`` turns a labelled TSV with a ``text`` column into that form.

Figures (micro-averaged over the contracts):

* recall: reference headings matched by a TITLE element of the same normalised text
  (numbering and the words ARTICLE / Section / EXHIBIT removed; one-to-one, page within
  1), per kind;
* precision: TITLE elements that match a reference heading;
* level: matched headings whose level equals the reference level;
* titles: documents whose parsed title equals the reference title.

``--junk`` counts, over every contract in ``--cuad`` (not only the labelled ones), the
titles (ROOT and TITLE nodes) and the section summaries (ROOT and TITLE nodes, offline
summariser) that hold running text or a signature line: a redaction note ("...
omitted and filed separately"), a "Source: ..." filing footer, a page number ("-18-",
"Page 3 of 9"), a rule of dashes, or a signature field ("By:", "Name:", "/s/", "IN
WITNESS WHEREOF").

Usage::

    python scripts/eval_contract_headings.py [--cuad DIR] [--parser fast] [--json] [--show]
"""
from __future__ import annotations

import argparse
import csv
import glob
import hashlib
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docmaster_core.model import NodeType  # noqa: E402
from docmaster_core.parsing import parse_document  # noqa: E402

REFERENCE = ROOT / "scripts" / "data" / "contract_headings.tsv"
_PREFIX = re.compile(
    r"^\s*(?:(?:article|section|part|clause|exhibit|schedule|appendix|annex|attachment|§)\s*)?"
    r"(?:(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty)\b\.?|\(?[0-9IVXLCivxlc]{1,6}(?:[.\-][0-9A-Za-z]{1,3})*[.)]?|\(?[A-Za-z]\)|[A-Z](?:-\d+)?\.?)?(?=\s|$)\s*",
    re.IGNORECASE,
)


def key(text: str) -> str:
    """Normalised heading text: leading keyword and numbering removed, lower case,
    letters and digits only (``"Section 10.  Term and Termination"`` ->
    ``"termandtermination"``)."""
    t = text.strip()
    for _ in range(2):
        t2 = _PREFIX.sub("", t, count=1)
        if t2 == t:
            break
        t = t2
    return "".join(ch for ch in t.lower() if ch.isalnum())


def digest(text: str) -> str:
    """First 12 hex digits of the SHA-1 of :func:`key` (how the reference stores text)."""
    return hashlib.sha1(key(text).encode()).hexdigest()[:12]


def load_reference(path: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            out[row["doc"]].append(row)
    return out


def make_reference(src: Path, dst: Path) -> None:
    rows = list(csv.DictReader(open(src, encoding="utf-8"), delimiter="\t"))
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["doc", "page", "kind", "level", "numbering", "text_sha1", "has_text"])
        for r in rows:
            w.writerow([r["doc"], r["page"], r["kind"], r["level"], r["numbering"], digest(r["text"] or r["numbering"]),
                        int(bool(key(r["text"])))])
    print(f"wrote {len(rows)} rows to {dst}")


_JUNK = {
    "footer": re.compile(r"omitted and (?:has been )?filed separately|confidential treatment has been requested|"
                         r"Source: [A-Z].{0,60}\d{1,2}/\d{1,2}/\d{4}", re.IGNORECASE),
    "page number": re.compile(r"(?:^|\s)-\s?\d{1,3}\s?-(?:\s|$)|\bPage \d+ of \d+\b"),
    "rule": re.compile(r"-{6,}|_{6,}"),
    "signature": re.compile(r"(?:^|\s)(?:By|Name|Its)\s*:\s|/s/|IN WITNESS WHEREOF"),
}


def count_junk(cuad: Path) -> dict:
    """Titles and section summaries holding running text or signature lines (see the
    module docstring), over every PDF in ``cuad``."""
    from docmaster_core.llm import OfflineLLM, summarize_tree
    from docmaster_core.tree.build import build_tree

    llm = OfflineLLM()
    out = {"contracts": 0, "titles": 0, "summaries": 0}
    for k in _JUNK:
        out[f"titles_{k}"] = 0
        out[f"summaries_{k}"] = 0
    examples: list[str] = []
    for f in sorted(glob.glob(str(cuad / "*.pdf"))):
        parsed = parse_document(f, parser="fast")
        tree = build_tree(parsed, Path(f).stem[:8])
        summarize_tree(tree, llm)
        out["contracts"] += 1
        for n in tree.nodes:
            if n.type not in (NodeType.ROOT, NodeType.TITLE):
                continue
            title = tree.title if n.type == NodeType.ROOT else n.content
            out["titles"] += 1
            out["summaries"] += 1
            for k, rx in _JUNK.items():
                if rx.search(title or ""):
                    out[f"titles_{k}"] += 1
                    examples.append(f"{Path(f).name[:8]} title {k}: {title[:80]!r}")
                if rx.search(n.summary or ""):
                    out[f"summaries_{k}"] += 1
                    m = rx.search(n.summary)
                    examples.append(f"{Path(f).name[:8]} summary {k}: ...{n.summary[max(0, m.start() - 40):m.end() + 30]!r}")
    out["examples"] = examples[:40]
    return out


def evaluate(cuad: Path, ref: dict[str, list[dict]], parser: str, show: bool) -> dict:
    tot = defaultdict(int)
    per_doc = {}
    t0 = time.perf_counter()
    for doc, rows in sorted(ref.items()):
        files = glob.glob(str(cuad / f"{doc}_*.pdf"))
        if not files:
            print(f"{doc}: no PDF in {cuad}", file=sys.stderr)
            continue
        parsed = parse_document(files[0], parser=parser)
        titles = [e for e in parsed.elements if e.type == NodeType.TITLE]
        det = [(e.page, digest(e.text), e.level, e.text) for e in titles]
        used: set[int] = set()
        d = defaultdict(int)
        misses = []
        for r in rows:
            if r["kind"] == "doctitle":
                if r["page"] == "1" and not d["title_seen"]:
                    d["title_seen"] = 1
                    ok = digest(parsed.title or "") == r["text_sha1"]
                    d["title_ok"] += int(ok)
                    if show and not ok:
                        misses.append(f"  title: parsed {parsed.title!r}")
                continue
            d[f"ref_{r['kind']}"] += 1
            hit = None
            for i, (pg, h, lv, txt) in enumerate(det):
                if i not in used and abs(pg - int(r["page"])) <= 1 and h == r["text_sha1"]:
                    hit = i
                    break
            if hit is None:
                if show:
                    misses.append(f"  miss p{r['page']} L{r['level']} {r['kind']} {r['numbering']}")
                continue
            used.add(hit)
            d[f"hit_{r['kind']}"] += 1
            d["level_ok"] += int(str(det[hit][2]) == r["level"])
        d["detected"] = len(det)
        d["detected_matched"] = len(used)
        if show:
            extra = [f"  extra p{pg} L{lv} {txt[:70]!r}" for i, (pg, h, lv, txt) in enumerate(det) if i not in used]
            print(f"{doc}: {dict(d)}")
            print("\n".join(misses + extra))
        per_doc[doc] = dict(d)
        for k, v in d.items():
            tot[k] += v
    n_ref = tot["ref_heading"] + tot["ref_runin"]
    n_hit = tot["hit_heading"] + tot["hit_runin"]
    return {
        "parser": parser,
        "contracts": len(per_doc),
        "reference_headings": n_ref,
        "recall": round(n_hit / max(1, n_ref), 3),
        "recall_own_line": round(tot["hit_heading"] / max(1, tot["ref_heading"]), 3),
        "recall_runin": round(tot["hit_runin"] / max(1, tot["ref_runin"]), 3),
        "precision": round(tot["detected_matched"] / max(1, tot["detected"]), 3),
        "level_accuracy": round(tot["level_ok"] / max(1, n_hit), 3),
        "titles_right": f"{tot['title_ok']}/{tot['title_seen']}",
        "contracts_without_titles": sum(1 for d in per_doc.values() if d.get("detected", 0) == 0),
        "seconds": round(time.perf_counter() - t0, 1),
        "per_doc": per_doc,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cuad", default=str(ROOT.parent / "shared" / "corpus" / "cuad" / "pdf"))
    ap.add_argument("--reference", default=None, help=f"hashed reference TSV (default {REFERENCE.relative_to(ROOT)}; "
                    "with --make-reference the file to write, required)")
    ap.add_argument("--parser", default="fast")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", action="store_true", help="print misses and extra titles per contract")
    ap.add_argument("--make-reference", metavar="TSV", help="hash a labelled TSV (doc page kind level numbering text)")
    ap.add_argument("--junk", action="store_true", help="count running text and signature lines in titles and summaries")
    a = ap.parse_args(argv)
    if a.make_reference:
        if not a.reference:  # never overwrite the development reference by default
            print("--make-reference needs --reference OUT.tsv (the file to write)", file=sys.stderr)
            return 2
        make_reference(Path(a.make_reference), Path(a.reference))
        return 0
    a.reference = a.reference or str(REFERENCE)
    if not Path(a.cuad).is_dir():
        print(f"no contracts at {a.cuad}", file=sys.stderr)
        return 2
    if a.junk:
        res = count_junk(Path(a.cuad))
        print(json.dumps(res, indent=1))
        return 0
    res = evaluate(Path(a.cuad), load_reference(Path(a.reference)), a.parser, a.show)
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print({k: v for k, v in res.items() if k != "per_doc"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
