"""An example collection the project makes itself: three small PDFs generated with
PyMuPDF at run time, so that a newcomer without PDFs at hand sees something on every
page of the app within a minute.

The three documents are a paper-like one (abstract, method with a display equation,
results table, bar-chart figure, references), a manual-like one (safety, installation,
an operating-modes table, a maintenance diagram, troubleshooting) and a report-like one
(executive summary, a generation-mix table, a price chart, a growth equation, outlook).
Each has numbered multi-level sections, ruled tables with captions and a raster figure
with a caption; the paper and the report have a display equation. Two A4 pages each.

Use :func:`write_examples` to write them into a folder; ingest them like any upload.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

__all__ = ["EXAMPLE_FILES", "EXAMPLE_CONDITION", "EXAMPLE_QUESTION", "write_examples"]

#: The example files, in the order they are written.
EXAMPLE_FILES = ("example_paper_sparse_attention.pdf", "example_manual_water_filter.pdf",
                 "example_report_regional_energy.pdf")
#: A filter condition that keeps one example (the paper) and not the others.
EXAMPLE_CONDITION = "The document evaluates a retrieval model on a public benchmark dataset."
#: A question the examples answer with a citation.
EXAMPLE_QUESTION = "How often should the filter cartridge be replaced?"

_W, _H, _MARGIN = 595.0, 842.0, 64.0

# (heading level, heading, [blocks]); a block is a paragraph string or ("table", caption, rows),
# ("figure", caption, bar values) or ("equation", text)
_Spec = list[tuple[int, str, list]]

_PAPER: tuple[str, str, _Spec] = (
    "Sparse Attention for Long Document Retrieval",
    "A. Example, B. Sample · Example Institute of Technology",
    [
        (1, "Abstract", [
            "Long documents are hard to retrieve from because dense encoders truncate their input. We propose a sparse "
            "attention encoder that reads documents of up to 16,000 tokens and evaluate it on two public benchmark "
            "datasets, where it improves recall at 10 by 6.1 points over a truncating baseline.",
        ]),
        (1, "1 Introduction", [
            "Retrieval over long documents such as reports, manuals and scientific papers needs an encoder that sees "
            "the whole text. Standard transformer encoders attend over all token pairs, so their cost grows with the "
            "square of the input length and inputs are cut at 512 tokens.",
            "Our contributions are a block-sparse attention pattern that keeps the cost linear in the length, a "
            "training recipe with hard negatives mined from the same document, and an evaluation on the LongDocQA "
            "and ReportSearch benchmark datasets.",
        ]),
        (1, "2 Method", []),
        (2, "2.1 Block-sparse attention", [
            "Each token attends to the tokens of its own block of 128 tokens, to one global summary token per block "
            "and to a random set of 8 other blocks. The attention weights of a query q over the keys K of these "
            "positions are computed with the scaled softmax of Equation 1.",
            ("equation", "Attention(q, K, V) = softmax( q K^T / sqrt(d) ) V        (1)"),
        ]),
        (2, "2.2 Training", [
            "We train with a contrastive loss over one positive passage and 31 negatives, 16 of which are hard "
            "negatives taken from other sections of the same document. Training takes 40 hours on 8 GPUs.",
        ]),
        (1, "3 Experiments", [
            "We compare against BM25, a dense encoder that truncates documents at 512 tokens and a dense encoder "
            "that splits documents into passages and keeps the best passage score. Table 1 reports recall at 10 and "
            "the mean latency per query.",
            ("table", "Table 1: Recall at 10 and latency on the two benchmark datasets.",
             [["System", "LongDocQA R@10", "ReportSearch R@10", "Latency"],
              ["BM25", "48.2", "51.0", "9 ms"],
              ["Dense, truncated", "55.7", "53.9", "14 ms"],
              ["Dense, passages", "58.3", "57.2", "31 ms"],
              ["Sparse attention (ours)", "64.4", "62.0", "22 ms"]]),
        ]),
        (1, "4 Results", [
            "The sparse attention encoder is best on both datasets. The gain is largest on documents longer than "
            "8,000 tokens, where the truncating encoder never sees the answer passage. Figure 1 shows recall at 10 "
            "by document length.",
            ("figure", "Figure 1: Recall at 10 by document length (short, medium, long, very long).",
             [0.62, 0.64, 0.61, 0.58]),
        ]),
        (1, "5 Conclusion", [
            "Block-sparse attention lets a dense retriever read whole long documents at a moderate cost. Future work "
            "will study learned block boundaries that follow the sections of the document.",
        ]),
        (1, "References", [
            "[1] A. Vaswani et al. Attention is all you need. NeurIPS 2017.  [2] V. Karpukhin et al. Dense passage "
            "retrieval for open-domain question answering. EMNLP 2020.",
        ]),
    ],
)

_MANUAL: tuple[str, str, _Spec] = (
    "AquaPure 300 Water Filter: User Manual",
    "Model AP-300 · Edition 2 · Read this manual before installing the filter",
    [
        (1, "1 Safety instructions", [
            "Connect the AquaPure 300 to the cold drinking-water supply only. Water above 40 degrees Celsius damages "
            "the filter membrane. Close the supply valve before any maintenance and never open the housing while it "
            "is under pressure.",
            "Keep children away from the packaging material. Do not use the filter with water of unknown "
            "microbiological quality without a suitable disinfection stage upstream.",
        ]),
        (1, "2 Installation", []),
        (2, "2.1 Mounting the housing", [
            "Fix the wall bracket at least 30 cm above the floor with the two screws supplied. Hang the housing on "
            "the bracket so that the arrow on the head points in the direction of flow.",
        ]),
        (2, "2.2 Connecting the water supply", [
            "Connect the inlet hose to the angle valve and the outlet hose to the faucet. Open the valve slowly and "
            "check every joint for leaks. Flush the new cartridge for five minutes before drinking the water.",
        ]),
        (1, "3 Operation", [
            "The control knob on the head selects the operating mode. Table 1 lists the modes, the flow rate and when "
            "to use each of them.",
            ("table", "Table 1: Operating modes of the AquaPure 300.",
             [["Mode", "Flow rate", "Use"],
              ["Filter", "2.0 l/min", "Drinking and cooking water"],
              ["Bypass", "6.0 l/min", "Cleaning, watering plants"],
              ["Flush", "4.0 l/min", "After a cartridge change"]]),
            "The indicator on the head turns from green to red when 90 percent of the cartridge capacity is used.",
        ]),
        (1, "4 Maintenance", [
            "Replace the filter cartridge every six months or after 1,500 litres, whichever comes first. A blocked "
            "cartridge lowers the flow rate below 1 l/min. Figure 1 shows the parts of the filter head.",
            ("figure", "Figure 1: Filter head with inlet, outlet, control knob and cartridge.", [0.5, 0.9, 0.7, 0.3]),
            "To replace the cartridge, close the supply valve, turn the cartridge a quarter turn to the left, pull "
            "it out, insert the new one and turn it to the right until it clicks. Flush for five minutes.",
        ]),
        (1, "5 Troubleshooting", [
            ("table", "Table 2: Faults and remedies.",
             [["Fault", "Cause", "Remedy"],
              ["No water", "Supply valve closed", "Open the valve"],
              ["Low flow", "Cartridge blocked", "Replace the cartridge"],
              ["Leak at head", "Seal not seated", "Refit the seal"]]),
            "If the fault persists, contact the customer service with the model number printed on the housing.",
        ]),
    ],
)

_REPORT: tuple[str, str, _Spec] = (
    "Regional Energy Report 2025",
    "Prepared by the Example Regional Energy Office · March 2026",
    [
        (1, "Executive summary", [
            "Electricity demand in the region grew by 2.4 percent in 2025, driven by heat pumps and electric "
            "vehicles. Wind and solar together supplied 46 percent of the electricity, up from 39 percent in 2024, "
            "and the average wholesale price fell by 11 percent.",
        ]),
        (1, "1 Demand", [
            "Total consumption reached 18.6 TWh. Households used 34 percent, industry 41 percent and services 25 "
            "percent. Peak demand of 3.1 GW occurred on a cold evening in January.",
        ]),
        (1, "2 Generation mix", [
            "Table 1 shows the generation by source. Gas remains the main dispatchable source; coal generation "
            "ended in October when the last unit was closed.",
            ("table", "Table 1: Electricity generation by source in TWh.",
             [["Source", "2024", "2025", "Change"],
              ["Wind", "4.9", "5.8", "+18 %"],
              ["Solar", "2.3", "2.8", "+22 %"],
              ["Gas", "6.1", "5.6", "-8 %"],
              ["Coal", "1.2", "0.4", "-67 %"],
              ["Hydro and other", "1.9", "2.0", "+5 %"]]),
        ]),
        (1, "3 Prices", [
            "The average wholesale price was 71 EUR per MWh. Prices were lowest at midday in summer, when solar "
            "output is high, and highest on winter evenings. Figure 1 shows the average price by quarter.",
            ("figure", "Figure 1: Average wholesale price by quarter of 2025 (EUR per MWh).", [0.9, 0.6, 0.45, 0.75]),
            "The growth of renewable output over n years is summarised by the compound annual growth rate of "
            "Equation 1.",
            ("equation", "CAGR = ( E_end / E_start )^(1/n) - 1        (1)"),
        ]),
        (1, "4 Outlook", [
            "Two offshore wind farms with 900 MW in total will start operating in 2027. Storage capacity is planned "
            "to triple to 600 MW, which will reduce the evening price peaks.",
        ]),
    ],
)


class _Writer:
    """Lays out headings, paragraphs, tables, figures and equations top to bottom,
    starting a new page when the next block does not fit."""

    def __init__(self, doc, title: str, byline: str):
        self.doc = doc
        self.page = doc.new_page(width=_W, height=_H)
        self.y = 90.0
        self.page.insert_textbox(_rect(self.y - 22, self.y + 40), title, fontsize=20, fontname="hebo")
        self.y += 46
        self.page.insert_text((_MARGIN, self.y), byline, fontsize=9, fontname="helv", color=(0.3, 0.3, 0.3))
        self.y += 30

    def need(self, h: float) -> None:
        if self.y + h > _H - 60:
            self.page = self.doc.new_page(width=_W, height=_H)
            self.y = 72.0

    def heading(self, level: int, text: str) -> None:
        size = 14 if level == 1 else 11.5
        self.need(size + 40)
        self.y += 8
        self.page.insert_text((_MARGIN, self.y + size), text, fontsize=size, fontname="hebo")
        self.y += size + 12

    def paragraph(self, text: str) -> None:
        import pymupdf

        chars_per_line = 95
        lines = max(1, -(-len(text) // chars_per_line)) + 1
        h = lines * 13.0 + 4
        self.need(h)
        rect = _rect(self.y, self.y + h)
        while self.page.insert_textbox(rect, text, fontsize=10, fontname="helv", align=pymupdf.TEXT_ALIGN_LEFT) < 0:
            rect.y1 += 13  # the estimate was short: grow the box and write again on a clean area
            h += 13
        self.y += h + 8

    def table(self, caption: str, rows: Sequence[Sequence[str]]) -> None:
        import pymupdf

        rh = 20.0
        self.need(rh * len(rows) + 40)
        self.page.insert_text((_MARGIN, self.y + 10), caption, fontsize=9, fontname="helv")
        y0 = self.y + 18
        cw = (_W - 2 * _MARGIN) / len(rows[0])
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                rect = pymupdf.Rect(_MARGIN + c * cw, y0 + r * rh, _MARGIN + (c + 1) * cw, y0 + (r + 1) * rh)
                self.page.draw_rect(rect, color=(0, 0, 0), width=0.7)
                self.page.insert_text((rect.x0 + 4, rect.y1 - 6), str(cell), fontsize=9,
                                      fontname="hebo" if r == 0 else "helv")
        self.y = y0 + rh * len(rows) + 16

    def figure(self, caption: str, values: Sequence[float]) -> None:
        import pymupdf

        w, h = 300, 150
        self.need(h + 40)
        pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, w, h), False)
        pix.set_rect(pix.irect, (255, 255, 255))
        colours = [(37, 99, 235), (220, 38, 38), (22, 163, 74), (217, 119, 6)]
        bw = w // (2 * len(values) + 1)
        for i, v in enumerate(values):
            x0 = bw * (2 * i + 1)
            pix.set_rect(pymupdf.IRect(x0, int(h * (1 - v)), x0 + bw, h - 2), colours[i % len(colours)])
        pix.set_rect(pymupdf.IRect(0, h - 2, w, h), (0, 0, 0))
        x0 = (_W - w) / 2
        self.page.insert_image(pymupdf.Rect(x0, self.y, x0 + w, self.y + h), pixmap=pix)
        self.page.insert_text((_MARGIN, self.y + h + 16), caption, fontsize=9, fontname="helv")
        self.y += h + 30

    def equation(self, text: str) -> None:
        self.need(30)
        self.page.insert_text((_MARGIN + 60, self.y + 12), text, fontsize=10.5, fontname="tiro")
        self.y += 28


def _rect(y0: float, y1: float):
    import pymupdf

    return pymupdf.Rect(_MARGIN, y0, _W - _MARGIN, y1)


def _write(path: Path, spec: tuple[str, str, _Spec]) -> Path:
    import pymupdf

    title, byline, sections = spec
    doc = pymupdf.open()
    w = _Writer(doc, title, byline)
    for level, heading, blocks in sections:
        w.heading(level, heading)
        for b in blocks:
            if isinstance(b, str):
                w.paragraph(b)
            elif b[0] == "table":
                w.table(b[1], b[2])
            elif b[0] == "figure":
                w.figure(b[1], b[2])
            elif b[0] == "equation":
                w.equation(b[1])
    doc.set_metadata({"title": title, "author": "DocMaster examples", "creator": "docmaster_core.examples"})
    tmp = path.with_suffix(".tmp")
    doc.save(tmp, garbage=3, deflate=True)
    doc.close()
    tmp.replace(path)
    return path


def write_examples(folder: str | Path) -> list[Path]:
    """Write the three example PDFs into ``folder`` (created when missing).

    Files already there with these names are overwritten with identical content (the
    generator is deterministic apart from PDF timestamps), so ingesting them again is
    recognised as a re-upload of the same documents when their bytes match.

    Args:
        folder: Target folder.

    Returns:
        The paths of :data:`EXAMPLE_FILES` in ``folder``, about 10-30 KB each.

    Raises:
        OSError: the folder cannot be created or written.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, spec in zip(EXAMPLE_FILES, (_PAPER, _MANUAL, _REPORT)):
        target = out / name
        if not target.is_file():
            _write(target, spec)
        paths.append(target)
    return paths
