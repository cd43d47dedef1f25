"""Test PDFs for layout faults (issue 13), generated with PyMuPDF.

Each ``make_*`` writes one PDF and returns a dict describing what a reader sees on
it, so tests can assert against it. Units: PDF points, US-Letter (612 x 792) unless
said otherwise, origin top-left. Fonts: base-14 (``tiro``, ``tibo``, ``helv``,
``hebo``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

W, H = 612.0, 792.0


def _doc():
    import pymupdf

    return pymupdf.open()


def _put(page, x: float, y: float, text: str, size: float = 10.0, font: str = "tiro") -> None:
    """One line of text with its baseline at ``y``."""
    page.insert_text((x, y), text, fontsize=size, fontname=font)


def _filler(words: int, tag: str, start: int = 0) -> list[str]:
    return [f"{tag}{k}" for k in range(start, start + words)]


def make_columns_pdf(path: str | Path, n_cols: int = 3, gutter: float = 10.0, lines_per_col: int = 14,
                     header: bool = True, below_single: bool = False, below_lines: int = 4) -> dict[str, Any]:
    """A page with ``n_cols`` text columns separated by ``gutter`` points.

    Column ``k`` holds ``lines_per_col`` lines of words tagged with ``COLk`` (e.g.
    "col1w3"), each line of the column one sentence fragment so that the column is
    one paragraph. A full-width title sits above the columns when ``header``; when
    ``below_single`` a full-width paragraph of ``below_lines`` lines follows the
    columns (two or three columns above, one below).

    Returns:
        ``{"tags": ["cola", ...], "title": str|None, "below": str|None}``.
    """
    doc = _doc()
    page = doc.new_page(width=W, height=H)
    left, right = 54.0, W - 54.0
    colw = (right - left - (n_cols - 1) * gutter) / n_cols
    y0 = 72.0
    title = None
    if header:
        title = "Layout Study of Column Reading Order"
        _put(page, left + 40, y0, title, size=16, font="tibo")
        y0 += 30
    tags = ["alpha", "bravo", "charlie", "delta"][:n_cols]
    size = 8.0 if n_cols >= 3 else 9.5
    import pymupdf

    for k, tag in enumerate(tags):
        x = left + k * (colw + gutter)
        for i in range(lines_per_col):
            # fill the column to its right edge (justified look) so the gap between
            # columns is the gutter itself
            words: list[str] = []
            j = 0
            while True:
                nxt = " ".join(words + [f"{tag}{i}x{j}"])
                if pymupdf.get_text_length(nxt, fontname="tiro", fontsize=size) > colw:
                    break
                words.append(f"{tag}{i}x{j}")
                j += 1
            # top up the last word letter by letter: the line ends within a letter
            # of the column edge, so the gap between columns is the gutter itself
            tail = " "
            for ch in "abcdefghijklmnopqrstuvwxyz":
                if pymupdf.get_text_length(" ".join(words) + tail + ch, fontname="tiro", fontsize=size) > colw:
                    break
                tail += ch
            txt = " ".join(words) + (tail if len(tail) > 1 else "")
            if i == lines_per_col - 1:
                txt = f"end of {tag}."
            _put(page, x, y0 + i * (size * 1.25), txt, size=size)
    below = None
    if below_single:
        yb = y0 + lines_per_col * size * 1.25 + 24
        below = []
        for i in range(below_lines):
            txt = " ".join(f"below{i}x{j}" for j in range(11))
            _put(page, left, yb + i * 12.5, txt, size=9.5)
            below.append(txt)
    doc.save(str(path))
    doc.close()
    return {"tags": tags, "title": title, "below": below}


def make_multiline_cell_table_pdf(path: str | Path) -> dict[str, Any]:
    """A captioned borderless table ("Table 1: ...") whose first-column cells wrap
    onto a second line; 3 body rows under a header row.

    Returns:
        ``{"header": [...], "rows": [[cell, ...], ...]}`` with each wrapped cell's two
        lines joined by a space.
    """
    doc = _doc()
    page = doc.new_page(width=W, height=H)
    y = 90.0
    _put(page, 72, y, "An introductory paragraph describes the systems that are compared in the table below,", 10)
    _put(page, 72, y + 13, "and the results show that the cached variant is fastest on every workload we tried.", 10)
    y += 50
    _put(page, 72, y, "Table 1: Throughput of the three systems on the benchmark.", 9)
    y += 22
    xs = [72.0, 260.0, 360.0, 460.0]
    header = ["System", "Latency", "Throughput", "Memory"]
    for x, h in zip(xs, header):
        _put(page, x, y, h, 9, "tibo")
    y += 16
    rows = [
        (["Baseline store with", "write-ahead log"], ["12.1 ms", "850 ops", "1.2 GB"]),
        (["Cached store with", "read replicas"], ["4.3 ms", "2100 ops", "2.8 GB"]),
        (["Sharded store over", "four machines"], ["6.7 ms", "3900 ops", "4.4 GB"]),
    ]
    out_rows = []
    for label, vals in rows:
        _put(page, xs[0], y, label[0], 9)
        for x, v in zip(xs[1:], vals):
            _put(page, x, y, v, 9)
        _put(page, xs[0], y + 11, label[1], 9)
        out_rows.append([" ".join(label)] + vals)
        y += 30
    y += 20
    _put(page, 72, y, "The cached variant wins on latency, while sharding gives the best throughput overall,", 10)
    _put(page, 72, y + 13, "at the cost of memory; the baseline is simplest to operate and to reason about.", 10)
    doc.save(str(path))
    doc.close()
    return {"header": header, "rows": out_rows}


STATEMENT_ROWS = [
    ("Revenue", "1,234", "1,100", True),
    ("Cost of revenue", "(580)", "(530)", False),
    ("Gross profit", "654", "570", True),
    ("Research and development", "(88)", "(80)", False),
    ("Selling, general and administrative", "(364)", "(355)", False),
    ("Operating income", "202", "135", True),
    ("Interest expense", "(12)", "(14)", False),
    ("Income before income taxes", "190", "121", True),
    ("Provision for income taxes", "(40)", "(25)", False),
    ("Net income", "150", "96", True),
]


def make_statement_pdf(path: str | Path, title: str = "Consolidated Statements of Income",
                       rows: list[tuple[str, str, str, bool]] | None = None) -> dict[str, Any]:
    """A page with prose, then an uncaptioned financial statement: a bold title, a
    units line "(in millions)", a year header row and label + two number rows
    (bold labels for subtotal rows), then more prose.

    Returns:
        ``{"title", "years", "rows": [(label, v1, v2, bold)]}``.
    """
    rows = rows or STATEMENT_ROWS
    doc = _doc()
    page = doc.new_page(width=W, height=H)
    y = 80.0
    for t in ("Results of operations improved in the year because revenue grew faster than costs did.",
              "Management believes the trend will continue, although no assurance can be given here."):
        _put(page, 72, y, t, 10)
        y += 13
    y += 26
    _put(page, 72, y, title, 11, "tibo")
    y += 14
    _put(page, 72, y, "(in millions)", 9)
    years = ["2023", "2022"]
    _put(page, 400, y, years[0], 9, "tibo")
    _put(page, 480, y, years[1], 9, "tibo")
    y += 18
    for label, a, b, bold in rows:
        _put(page, 72, y, label, 9, "tibo" if bold else "tiro")
        _put(page, 440 - 4.5 * len(a), y, a, 9)
        _put(page, 520 - 4.5 * len(b), y, b, 9)
        y += 14
    y += 26
    for t in ("See the accompanying notes, which are an integral part of these consolidated statements.",
              "Amounts may not add up because of rounding; per-share data are shown in a later note."):
        _put(page, 72, y, t, 10)
        y += 13
    doc.save(str(path))
    doc.close()
    return {"title": title, "years": years, "rows": rows}


def make_equation_pdf(path: str | Path) -> dict[str, Any]:
    """Prose, a two-line centred display equation numbered "(1)" on its second line,
    then prose; a second, one-line display equation "(2)" further down.

    Returns:
        ``{"eq_lines": [[line, ...], [line]], "before": str, "after": str}``.
    """
    doc = _doc()
    page = doc.new_page(width=W, height=H)
    y = 90.0
    before = "We now define the loss that the model minimises over the training set as follows:"
    _put(page, 72, y, "The objective combines a reconstruction term and a penalty on the weights of all layers", 10)
    _put(page, 72, y + 13, before, 10)
    y += 40
    # the first line alone does not look like math (words, few symbols); the
    # second carries the number
    l1 = "Loss(W, V) = softmax(Q K^T / sqrt(d)) V + decay(W)"
    l2 = "+ b * sum_j KL(q_j | p_j)"
    _put(page, 190, y, l1, 10, "tiit")
    _put(page, 240, y + 14, l2, 10, "tiit")
    _put(page, 520, y + 14, "(1)", 10)
    y += 44
    after = "where a and b weight the two penalties and are chosen on the validation split of the data."
    _put(page, 72, y, after, 10)
    _put(page, 72, y + 13, "The second quantity we report is the average error over all test examples in the set:", 10)
    y += 40
    l3 = "E = (1/N) sum_n |y_n - z_n|"
    _put(page, 240, y, l3, 10, "tiit")
    _put(page, 520, y, "(2)", 10)
    y += 30
    _put(page, 72, y, "which is lower for the proposed model than for every baseline that we have compared it with.", 10)
    doc.save(str(path))
    doc.close()
    return {"eq_lines": [[l1, l2], [l3]], "before": before, "after": after}


def make_relation_pdf(path: str | Path) -> dict[str, Any]:
    """Prose ending in ":", a centred display *relation* in the paragraph's own font and
    line spacing ("broadcastTime < electionTimeout < MTBF", as Raft sets its timing
    requirement), then prose; further down a centred prompt template line
    "Question: <Question Example1>" that is no formula.

    Returns:
        ``{"relation": str, "after": str, "template": str}``.
    """
    doc = _doc()
    page = doc.new_page(width=W, height=H)
    y = 90.0
    for text in ("Leader election is the aspect of the protocol where timing is most critical. The system",
                 "is able to elect and keep a steady leader as long as it satisfies the following timing",
                 "requirement:"):
        _put(page, 72, y, text, 10)
        y += 13
    relation = "broadcastTime < electionTimeout < MTBF"
    _put(page, 200, y, relation, 10)
    y += 13
    after = "In this inequality broadcastTime is the average time it takes a server to send requests"
    _put(page, 72, y, after, 10)
    _put(page, 72, y + 13, "in parallel to every server in the cluster and to receive all of their responses back.", 10)
    y += 60
    _put(page, 72, y, "Each demonstration in the prompt is written in the same form, followed by its answer:", 10)
    template = "Question: <Question Example1>"
    _put(page, 230, y + 16, template, 10)
    _put(page, 72, y + 32, "The model then answers the question of the test example in the same way as shown above.", 10)
    doc.save(str(path))
    doc.close()
    return {"relation": relation, "after": after, "template": template}


def make_redacted_pdf(path: str | Path) -> dict[str, Any]:
    """A contract page with the placeholders SEC filings carry: centred redaction marks
    ("[*****]" rows of a redacted schedule, "$[***]"), a centred "[LOGO]", a signature line
    "By: ____ By:" and a citation-like "[38, 2, 9]."; then one real centred display
    definition "f(x) = max(0, x)" in the body font.

    Returns:
        ``{"placeholders": [str], "equation": str}``.
    """
    doc = _doc()
    page = doc.new_page(width=W, height=H)
    y = 90.0
    _put(page, 270, y, "[LOGO]", 10)
    y += 30
    for text in ("The Supplier shall deliver the Products listed in Schedule A at the following prices, which",
                 "are confidential and have been omitted from this filing:"):
        _put(page, 72, y, text, 10)
        y += 13
    placeholders = ["[*****]", "[*****]", "$[***]"]
    for text in placeholders:
        _put(page, 280, y, text, 10)
        y += 13
    y += 20
    _put(page, 72, y, "The fee is computed as the greater of zero and the net amount, written as:", 10)
    y += 16
    equation = "f(x) = max(0, x)"
    _put(page, 250, y, equation, 10)
    y += 30
    _put(page, 72, y, "IN WITNESS WHEREOF, the parties have executed this Agreement as of the date first written above.", 10)
    y += 30
    signature = "By: ______________________ By:"
    _put(page, 200, y, signature, 10)
    y += 30
    _put(page, 72, y, "as shown in earlier studies of supply agreements, which this clause follows closely", 10)
    cite = "[38, 2, 9]."
    _put(page, 290, y + 16, cite, 10)
    doc.save(str(path))
    doc.close()
    return {"placeholders": ["[LOGO]", *placeholders, signature, cite], "equation": equation}


def make_slides_pdf(path: str | Path, lines: list[str] | None = None) -> dict[str, Any]:
    """A landscape slide deck, one short line per page (page k holds ``lines[k-1]``).

    Returns:
        ``{"lines": [...]}``.
    """
    lines = lines or ["Project Kickoff", "Goals for this quarter", "Team and roles",
                      "The deadline is March 14", "Questions and next steps"]
    doc = _doc()
    for t in lines:
        page = doc.new_page(width=792, height=612)
        _put(page, 100, 300, t, 28, "helv")
    doc.save(str(path))
    doc.close()
    return {"lines": lines}
