"""Stage "headings" (fonts): heading lines from numbering and font size/weight,
heading levels, table-of-contents pages."""
from __future__ import annotations

import re
from collections import Counter, defaultdict

from ..base import SENTENCE_END_RE, clean_text, heading_numbering, normalize_heading, numbering_level
from .common import BULLET_RE, FORM_FIELD_RE, FRONT_BACK_MATTER, Line, overlap_x, PageInfo
from .figures import graphics_clusters
from .marks import heading_features


def _is_toc_page(p: PageInfo) -> bool:
    """A table-of-contents page: many lines ending in a page number (dot leaders)."""
    n = sum(1 for l in p.lines if l.role == "" and re.search(r"(?:\.\s*){3,}\s*\d{1,4}$|\s\d{1,4}$", l.text)
            and sum(ch.isalpha() for ch in l.text) >= 3)
    return n >= 6 and n >= 0.3 * max(1, sum(1 for l in p.lines if l.role == ""))

# a cover page's connecting words set on lines of their own ("BETWEEN", "AND", "BY AND AMONG"): no heading
_CONNECTIVES_ONLY = re.compile(r"^\W*(?:(?:and|between|among|by|of|to|with|for|from|the|or|&)\W*)+$", re.I)
# ... and its parties' names, as on a signature block: a line that ends in a company's legal form ("AZUL LINHAS
# AÉREAS BRASILEIRAS S/A", "ACME HOLDINGS, INC.") names a party, it heads no section ("Article C - Transfers
# to PepsiCo, Inc." does)
_PARTY_NAME = re.compile(r"^(?!\W*(?:article|section|exhibit|schedule|annex|appendix|part|item|chapter|clause)\b)"
                         r".*[\w\)],?\s+(?:inc|incorporated|corp|corporation|llc|l\.l\.c|ltd|limited|plc|gmbh|ag|s\.?a|s/a|"
                         r"s\.a\.s|s\.p\.a|n\.v|b\.v|g\.i\.e|l\.p|lp|llp|co)\.?\s*$", re.I)

# a paper's theorem-like label set in bold on its own line ("Lemma", "Definition 2:", "Proof."): the statement it
# opens is a paragraph of its section, not a section (DBSCAN's two "Lemma" lines were sections)
_ENVIRONMENT_LABEL = re.compile(r"^\W*(?:lemma|theorem|definition|corollary|proposition|proof|remark|example|claim|"
                                r"conjecture|observation|assumption|axiom|notation|property)\s*(?:\d+(?:\.\d+)*)?\s*[:.]?\s*$",
                                re.I)


def _fragment(t: str) -> bool:
    """A piece of a formula or a cut word, not a heading: a closing bracket that opens nowhere ("Ci).",
    DBSCAN's "C_i)." set in the heading's bold italic), or fewer than three letters."""
    return t.count(")") > t.count("(") or t.count("]") > t.count("[") or sum(ch.isalpha() for ch in t) < 3


def _title_like(t: str) -> bool:
    """Every word of ``t`` longer than three letters starts with a capital ("Terms and
    Termination", "Relationship of Parties"): a label, not a sentence's lead-in ("as follows")."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", t) if len(w) > 3]
    return bool(words) and all(w[:1].isupper() for w in words)


# a sub-clause label after a heading's stop, at the end of a styled run-in prefix: ". (a)", ": (i)", ". 1."
_SUBCLAUSE_TAIL = re.compile(r"[.:]\s+(?:\((?:[a-z]{1,2}|[ivx]{1,4}|\d{1,2})\)|[a-z]\.|\d{1,2}\.)$")


def detect_headings(pages: list[PageInfo], body: float, doc=None) -> None:
    """Decide heading lines from numbering and font size/weight (SPEC F1).

    Numbered lines ("3.2 Method", "A.1", "II.") in a style that differs from the
    body (larger, bold, italic, capitals) that stand alone are headings. Unnumbered
    lines need a rare, larger or bold style, a capital start and no tabular gaps;
    in documents whose headings are mostly numbered, unnumbered ones must share a
    numbered heading's style (or be front/back matter, or be larger). Lines on
    table-of-contents pages, bullets, and text inside graphics are never headings.
    """
    cands: list[Line] = []
    style_chars: Counter = Counter()
    for p in pages:
        for l in p.lines:
            if l.role in ("", "heading?"):
                style_chars[(round(l.size * 2) / 2, l.bold >= 0.8)] += l.nchars
    total = sum(style_chars.values()) or 1
    # a label ending in ":" that recurs ("Stakeholder(s):", "Phone:") is a form's field, not a heading
    colon_labels = Counter(normalize_heading(l.text) for p in pages for l in p.lines if l.text.rstrip().endswith(":"))
    feats: dict[int, dict] = {}
    for pno, p in enumerate(pages):
        toc = _is_toc_page(p)
        lines = p.lines
        order = sorted(range(len(lines)), key=lambda i: (lines[i].col if lines[i].col >= 0 else -1, lines[i].y0))
        for idx, i in enumerate(order):
            l = lines[i]
            if l.role not in ("", "heading?"):
                continue
            if l.role == "heading?":
                l.role = ""
            f = heading_features(l, body)
            if f is None:
                continue
            t = l.text.strip()
            if toc and normalize_heading(t) not in ("contents", "tableofcontents"):
                continue
            if t[:1] in "•>›»▪■●◦–—*-" or (f["num"] is None and BULLET_RE.match(t)):
                continue
            nxt = prv = None
            for j in order[idx + 1:]:
                q = lines[j]
                if q.col == l.col and q.role not in ("header", "pagenum"):
                    nxt = q
                    break
            for j in reversed(order[:idx]):
                q = lines[j]
                if q.col == l.col and q.role not in ("header", "pagenum"):
                    prv = q
                    break
            # continuation lines of a wrapped heading (same style, directly below)
            cont: list[Line] = []
            last = l
            for j in order[idx + 1:idx + 4]:
                q = lines[j]
                if q.col != l.col or q.role in ("header", "pagenum"):
                    continue
                if q.role == "" and len(cont) < 2 and abs(q.size - l.size) <= 0.3 and (q.bold >= 0.8) == (l.bold >= 0.8) \
                        and abs(q.italic - l.italic) < 0.3 and -0.3 * l.size <= q.y0 - last.y1 < 0.5 * l.size \
                        and heading_numbering(q.text) is None and not SENTENCE_END_RE.search(last.text.rstrip("?")) \
                        and len(t.split()) + len(q.text.split()) + sum(len(c.text.split()) for c in cont) <= 24:
                    cont.append(q)
                    last = q
                    continue
                break
            if cont:
                after = None
                for j in order[idx + 1:]:
                    q = lines[j]
                    if q.col == l.col and q.role not in ("header", "pagenum") and q not in cont and q.y0 >= last.y0:
                        after = q
                        break
                cont_ok = after is None or after.block != last.block or abs(after.size - l.size) > 0.6 \
                    or (after.bold >= 0.8) != (l.bold >= 0.8) or after.y0 - last.y1 > 0.45 * l.size
                if cont_ok:
                    nxt = after
                else:
                    cont = []
            if f["num"] is None and not cont and (_CONNECTIVES_ONLY.match(t) or _PARTY_NAME.search(t)):
                continue  # "BETWEEN" / "AND" / a party's name on a cover page (a wrapped title may start "AND ...")
            if f["num"] is None and (_ENVIRONMENT_LABEL.match(t) or _fragment(t)):
                continue  # "Lemma" above its statement; "Ci)." cut from a formula
            styled_size = f["ratio"] >= 1.12
            styled_bold = l.bold >= 0.95 and f["ratio"] >= 0.9
            styled_caps = f["caps"] and f["ratio"] >= 0.95 and f["words"] <= 8
            same_style = lambda q: abs(q.size - l.size) <= 0.6 and (q.bold >= 0.8) == (l.bold >= 0.8)
            standalone = nxt is None or nxt.block != l.block or not same_style(nxt) or nxt.y0 - l.y1 > 0.45 * l.size \
                or (nxt.role == "" and heading_numbering(nxt.text) is not None)
            starts = prv is None or prv.block != l.block or l.y0 - prv.y1 > 0.45 * l.size or not same_style(prv) \
                or bool(SENTENCE_END_RE.search(prv.text))
            if cont:
                t = t + " " + " ".join(c.text.strip() for c in cont)
                f = dict(f, words=len(t.split()))
            bad_end = t.endswith((",", ";", "-")) or (t.endswith(".") and f["words"] > 12)
            tabular = l.max_gap > 2.0 * max(l.size, 4.0)
            key = (round(l.size * 2) / 2, l.bold >= 0.8)
            rare = style_chars[key] <= 0.15 * total
            styled_num = styled_size or styled_bold or (f["caps"] and f["ratio"] >= 0.75) or \
                (f["italic"] and f["ratio"] >= 0.9 and f["words"] <= 12)
            accepted = None
            runin = None
            if tabular or not standalone and f["num"] is None:
                pass
            elif f["num"] is not None and styled_num and standalone and starts and not bad_end and f["words"] <= 20:
                accepted = "numbering"
            elif f["num"] is None and rare and (styled_size or styled_bold or (styled_caps and l.bold >= 0.5)) \
                    and standalone and starts and not bad_end and f["words"] <= 14 \
                    and (not t.endswith(":") or (styled_bold and f["words"] <= 6 and _title_like(t[:-1])
                                                 and not FORM_FIELD_RE.match(t)
                                                 and colon_labels[normalize_heading(l.text)] == 1
                                                 and nxt is not None and len(nxt.text.split()) >= 6)) \
                    and (t[:1].isupper() or t[:1].isdigit() or f["ratio"] >= 1.3):
                accepted = "font"
            if accepted is None and f["num"] is not None and (l.bold_prefix or l.italic_prefix) and starts and not tabular:
                # run-in numbered heading: "4.8.1 Ring Membership. The ..." in bold,
                # "1) Data Structure: ..." in italics
                for bp, need_punct in ((l.bold_prefix.strip(), False), (l.italic_prefix.strip(), True)):
                    if not bp:
                        continue
                    hn = heading_numbering(bp)
                    if need_punct and not bp.endswith((":", ".")):
                        continue
                    # "9. Representations, Warranties, and Covenants. (a)": the first sub-clause's label, set in
                    # bold with the title, opens the body, not the heading
                    sub = _SUBCLAUSE_TAIL.search(bp)
                    if sub:
                        bp = bp[:sub.start() + 1]
                    if hn is not None and 2 <= len(hn[1]) <= 100 and len(bp) < len(l.text.strip()) and len(bp.split()) <= 14:
                        runin = bp
                        break
            if accepted:
                l.role = "heading"
                l.heading_text = clean_text(t)
                l.heading_source = accepted
                cands.append(l)
                feats[id(l)] = f
                for c in cont:
                    c.role = "merged"
                    l.y1 = max(l.y1, c.y1)
                    l.x1 = max(l.x1, c.x1)
            elif runin:
                l.role = "heading-runin"
                l.heading_text = clean_text(runin).rstrip(".:")
                l.heading_source = "numbering"
                cands.append(l)
                feats[id(l)] = f
    # multi-line headings: a heading followed by a same-style line (not numbered)
    for p in pages:
        ls = sorted(p.lines, key=lambda l: (l.col, l.y0))
        for i, h in enumerate(ls):
            if h.role != "heading":
                continue
            for q in ls[i + 1:i + 3]:
                if q.role not in ("", "heading") or q.col != h.col:
                    continue
                if -0.3 * h.size <= q.y0 - h.y1 < 0.6 * h.size and abs(q.size - h.size) < 0.3 \
                        and (q.bold >= 0.8) == (h.bold >= 0.8) and heading_numbering(q.text) is None \
                        and q.nwords <= 10 and overlap_x(q.x0, q.x1, h.x0 - 5, h.x1 + 200) > 0 \
                        and len(h.heading_text) + len(q.text) < 160 and not SENTENCE_END_RE.search(h.heading_text) \
                        and not BULLET_RE.match(q.text):
                    h.heading_text = clean_text(h.heading_text + " " + q.text)
                    h.y1 = max(h.y1, q.y1)
                    h.x1 = max(h.x1, q.x1)
                    if q.role == "heading":
                        cands = [c for c in cands if c is not q]
                    q.role = "merged"
                break
    cands = [c for c in cands if c.role in ("heading", "heading-runin")]
    # page 1: unnumbered lines above the abstract / first numbered heading are the
    # title block (authors, affiliations), not section headings
    if pages:
        p1 = [l for l in cands if l.page == 0]
        anchors = [l for l in p1 if normalize_heading(l.heading_text) in ("abstract", "introduction")
                   or heading_numbering(l.heading_text) is not None]
        if not anchors:
            anchors = [l for l in pages[0].lines if l.role == "" and re.match(r"^\s*abstract\b", l.text, re.I)]
        if anchors:
            ytop = min(a.y0 for a in anchors)
            for l in p1:
                if l.heading_source == "font" and l.y1 <= ytop + 1 and l not in anchors:
                    l.role = ""
    cands = [c for c in cands if c.role in ("heading", "heading-runin")]
    # documents with numbered sections: unnumbered headings must look like them
    numbered = [c for c in cands if c.heading_source == "numbering"]
    if len(numbered) >= 4 and len(numbered) >= 0.5 * len(cands):
        num_styles = {(round(c.size * 2) / 2, c.bold >= 0.8) for c in numbered}
        max_ratio = max(feats[id(c)]["ratio"] for c in numbered)
        for c in cands:
            if c.heading_source != "font":
                continue
            keyc = (round(c.size * 2) / 2, c.bold >= 0.8)
            if normalize_heading(c.heading_text) in FRONT_BACK_MATTER or keyc in num_styles \
                    or feats[id(c)]["ratio"] > max_ratio + 0.05:
                continue
            c.role = ""
    cands = [c for c in cands if c.role in ("heading", "heading-runin")]
    # drop font-only candidates whose style is too frequent (labels, table headers)
    by_style: dict[tuple, list[Line]] = defaultdict(list)
    for l in cands:
        by_style[(round(l.size * 2) / 2, l.bold >= 0.8)].append(l)
    n_pages = max(1, len(pages))
    for key, ls in by_style.items():
        font_only = [l for l in ls if l.heading_source == "font"]
        if not font_only:
            continue
        per_page = Counter(l.page for l in font_only)
        if len(font_only) > 3 * n_pages + 6:
            for l in font_only:
                l.role = ""
            continue
        for l in font_only:
            if per_page[l.page] > 8:  # many on one page: labels or table cells
                l.role = ""
    # a font-only "heading" text repeated many times is a label ("Caution", "Note")
    reps = Counter(normalize_heading(l.heading_text) for l in cands if l.heading_source == "font" and l.role == "heading")
    for l in cands:
        if l.heading_source == "font" and reps[normalize_heading(l.heading_text)] >= 4:
            l.role = ""
    # font-only headings inside vector graphics/images are figure labels
    if doc is not None:
        for pno in sorted({c.page for c in cands if c.role == "heading" and c.heading_source == "font"}):
            gs = _page_graphics(doc, pno, pages[pno])
            for c in cands:
                if c.page == pno and c.heading_source == "font" and any(
                    c.x0 >= g[0] - 2 and c.x1 <= g[2] + 2 and c.y0 >= g[1] - 2 and c.y1 <= g[3] + 2
                    and (g[2] - g[0]) * (g[3] - g[1]) > 4 * (c.x1 - c.x0) * max(c.y1 - c.y0, 1.0) for g in gs
                ):
                    c.role = ""
    assign_levels([l for p in pages for l in p.lines if l.role in ("heading", "heading-runin")])

def _page_graphics(doc, pno: int, p: PageInfo) -> list[tuple]:
    """Clusters of vector graphics and images on a page (boxes in points)."""
    try:
        page = doc[pno]
        rects = []
        for d in page.get_cdrawings()[:5000]:
            r = d.get("rect")
            if r is None:
                continue
            x0, y0, x1, y1 = (float(v) for v in r)
            if (x1 - x0) >= 0.8 * p.width or (y1 - y0) >= 0.8 * p.height:
                continue  # page frames, borders, backgrounds
            if (x1 - x0) > 0.5 or (y1 - y0) > 0.5:
                rects.append((x0, y0, x1, y1))
        rects.extend(p.images)
    except Exception:
        return []
    gs = graphics_clusters(rects, p.width, p.height)
    area = p.width * p.height
    return [g for g in gs if (g[2] - g[0]) >= 20 and (g[3] - g[1]) >= 12 and (g[2] - g[0]) * (g[3] - g[1]) < 0.6 * area]

def assign_levels(heads: list[Line]) -> None:
    """Levels: numbering depth for numbered headings; for unnumbered ones the level
    of numbered headings with the same style (size, weight, capitals), else the
    rank of their style among the heading styles. Front/back matter (Abstract,
    References, ...) sits at the top numbered level."""

    def caps(h: Line) -> bool:
        t = re.sub(r"^[\dIVXA-Z.\s]*\s", "", h.heading_text) or h.heading_text
        return t.upper() == t and sum(ch.isalpha() for ch in t) >= 3

    def style(h: Line) -> tuple:
        return (round(h.size * 2) / 2, h.bold >= 0.8, caps(h))

    known: dict[tuple, Counter] = defaultdict(Counter)
    for h in heads:
        hn = heading_numbering(h.heading_text)
        if hn is not None:
            h.heading_level = min(6, numbering_level(hn[0]))
            known[style(h)][h.heading_level] += 1
    styles = sorted({style(h) for h in heads}, key=lambda s: (-s[0], -int(s[1]), -int(s[2])))
    kl = {s: c.most_common(1)[0][0] for s, c in known.items()}
    top = min(kl.values()) if kl else 1
    for h in heads:
        if h.heading_level is not None:
            continue
        s = style(h)
        if kl and normalize_heading(h.heading_text) in FRONT_BACK_MATTER - {"introduction", "summary", "notes"}:
            h.heading_level = top
            continue
        if s in kl:
            h.heading_level = kl[s]
            continue
        # same size as a known style (weight or case differs) -> that level
        same = [kl[k] for k in kl if k[0] == s[0] and k[1] == s[1]] or [kl[k] for k in kl if k[0] == s[0]]
        if same:
            h.heading_level = min(same)
            continue
        bigger = [kl[k] for k in kl if (k[0], int(k[1])) > (s[0], int(s[1]))]
        if kl:
            h.heading_level = (max(bigger) + 1) if bigger else 1
        else:
            h.heading_level = sorted({k[:2] for k in styles}, key=lambda k: (-k[0], -int(k[1]))).index(s[:2]) + 1
        h.heading_level = min(h.heading_level, 6)

