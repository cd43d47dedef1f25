"""Contracts set in one font (issue 34): clause headings from numbering, running text
out of the content, the title line as the document title. On a contract the test
writes, and on real filings from ../shared when present."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pymupdf
import pytest

from docmaster_core.model import NodeType
from docmaster_core.parsing import PyMuPDFParser
from docmaster_core.parsing.pdf.clauses import is_signature_line
from docmaster_core.tree.build import build_tree

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CUAD = SHARED / "corpus" / "cuad" / "pdf"
CORPUS = SHARED / "corpus" / "pdf"

BODY = ("The Supplier shall deliver the goods described in the purchase orders placed by the Buyer from time "
        "to time, at the prices listed in the schedule, and the Buyer shall pay each invoice within thirty days.")


def _write_contract(path: Path) -> Path:
    """A 4-page contract in Courier 9 pt, the way filings print them: ARTICLE headings
    with the title on the next line, "Section N.M Title. Text" run-in clauses, "1."
    labels with the title beside them, a redaction note and "-N-" at every page break,
    a signature block."""
    doc = pymupdf.open()
    pages = [
        [("", "SUPPLY AND DISTRIBUTION AGREEMENT"), ("", ""),
         ("", "This Agreement is made between Acme Components Inc. and Borealis Trading Ltd., together the Parties, "
              "who agree as follows:"), ("", ""),
         ("ARTICLE I", ""), ("DEFINITIONS", ""),
         ("Section 1.01 Products. ", BODY), ("Section 1.02 Territory. ", BODY),
         ("ARTICLE II", ""), ("SUPPLY", ""),
         ("Section 2.01 Orders. ", BODY), ("Section 2.02 Delivery. ", BODY)],
        [("ARTICLE III", ""), ("TERM AND TERMINATION", ""),
         ("Section 3.01 Term. ", "The term of this Agreement is five years from the Effective Date, and it shall "
                                  "automatically renew for successive one year periods unless either Party objects."),
         ("Section 3.02 Termination for Convenience. ", "Either Party may terminate this Agreement upon ninety days "
                                                        "written notice to the other Party, without cause."),
         ("ARTICLE IV", ""), ("MISCELLANEOUS", ""),
         ("Section 4.01 Governing Law. ", "This Agreement is governed by the laws of the State of Delaware."),
         ("Section 4.02 Notices. ", BODY)],
        [("SCHEDULE 1", ""), ("PRICES", ""),
         ("1.", "@Standard Products"), ("", BODY), ("2.", "@Custom Products"), ("", BODY)],
        [("3.", "@Spare Parts"), ("", BODY), ("", ""), ("", "IN WITNESS WHEREOF, the Parties have signed this Agreement on the date first written above."),
         ("", ""), ("", "ACME COMPONENTS INC."), ("", "By: /s/ Jane Roe"), ("", "Name: Jane Roe"),
         ("", "Title: President"), ("", ""), ("", "BOREALIS TRADING LTD."), ("", "By: /s/ John Doe"),
         ("", "Name: John Doe"), ("", "Title: Director")],
    ]
    for pno, rows in enumerate(pages):
        page = doc.new_page(width=612, height=792)
        y = 60.0
        for head, text in rows:
            if text.startswith("@"):  # a "1." label at the left, the title at the same height further right
                page.insert_text((72, y), head, fontname="cour", fontsize=9)
                page.insert_text((110, y), text[1:], fontname="cour", fontsize=9)
                y += 20
                continue
            words = (head + text).split(" ")
            line = ""
            lines = []
            for w in words:
                if len(line) + len(w) + 1 > 80:
                    lines.append(line)
                    line = w
                else:
                    line = (line + " " + w).strip()
            lines.append(line)
            for ln in lines:
                if ln:
                    page.insert_text((72, y), ln, fontname="cour", fontsize=9)
                y += 11
            y += 9
        # where the filing's original page broke: a redaction note and the page number
        page.insert_text((72, 700), "***Certain information has been omitted and filed separately with the", fontname="cour", fontsize=9)
        page.insert_text((72, 711), "Securities and Exchange Commission under a request for confidential treatment.",
                         fontname="cour", fontsize=9)
        page.insert_text((290, 730), f"-{pno + 1}-", fontname="cour", fontsize=9)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def contract(tmp_path_factory):
    path = _write_contract(tmp_path_factory.mktemp("contract") / "supply.pdf")
    return PyMuPDFParser().parse(path)


def _titles(parsed) -> list[tuple[int, str]]:
    return [(e.level, e.text) for e in parsed.elements if e.type == NodeType.TITLE]


def test_articles_sections_and_labels_become_titles_at_their_levels(contract):
    titles = _titles(contract)
    assert (1, "ARTICLE I DEFINITIONS") in titles
    assert (1, "ARTICLE III TERM AND TERMINATION") in titles
    assert (2, "Section 3.01 Term") in titles
    assert (2, "Section 3.02 Termination for Convenience") in titles
    assert (2, "Section 4.01 Governing Law") in titles
    assert [t for t in titles if t[1].startswith("ARTICLE")] == [
        (1, "ARTICLE I DEFINITIONS"), (1, "ARTICLE II SUPPLY"), (1, "ARTICLE III TERM AND TERMINATION"),
        (1, "ARTICLE IV MISCELLANEOUS")]
    assert (1, "SCHEDULE 1 PRICES") in titles
    # "1." at the left margin and its title further right on the same line
    assert any(t.startswith("1. Standard Products") for _, t in titles)
    assert any(t.startswith("3. Spare Parts") for _, t in titles)


def test_run_in_clause_keeps_its_text_under_its_heading(contract):
    tree = build_tree(contract, "d")
    term = next(n for n in tree.nodes if n.type == NodeType.TITLE and n.content == "Section 3.01 Term")
    kids = [tree.nodes[c] for c in term.children]
    assert kids and kids[0].content.startswith("The term of this Agreement is five years")
    assert tree.nodes[term.parent].content == "ARTICLE III TERM AND TERMINATION"


def test_title_line_is_the_document_title(contract):
    assert contract.title == "SUPPLY AND DISTRIBUTION AGREEMENT"


def test_redaction_notes_page_numbers_and_signatures_stay_out(contract):
    text = " ".join(e.text for e in contract.elements)
    assert "omitted and filed separately" not in text
    assert "-2-" not in text and "-3-" not in text
    titles = [t for _, t in _titles(contract)]
    assert not any("ACME" in t or "BOREALIS" in t or t.startswith(("By:", "Name:", "Title:")) for t in titles)
    # the signature block itself is kept as text (who signed is content)
    assert "By: /s/ Jane Roe" in text
    assert contract.metadata["header_footer_lines_dropped"] >= 12


@pytest.mark.parametrize("line,expected", [
    ("By: /s/ Jane Roe", True), ("Name: John Doe", True), ("Title: Director", True), ("______________", True),
    ("IN WITNESS WHEREOF, the parties ...", True), ("Section 3.01 Term.", False), ("The title to the goods", False),
])
def test_signature_lines(line, expected):
    assert is_signature_line(line) is expected


def _cuad(prefix: str) -> Path:
    hits = sorted(CUAD.glob(f"{prefix}_*.pdf")) if CUAD.is_dir() else []
    if not hits:
        pytest.skip(f"{prefix} not in ../shared/corpus/cuad")
    return hits[0]


def test_real_filing_with_section_headings_and_page_break_notes():
    parsed = PyMuPDFParser().parse(_cuad("cuad-009"))
    titles = _titles(parsed)
    assert parsed.title == "CO-BRANDING, MARKETING AND DISTRIBUTION AGREEMENT"
    tops = [t for lv, t in titles if lv == 1]
    assert len(tops) == 11 and tops[9] == "Section 10 Term and Termination"
    assert (2, "10.1 Term") in titles and (2, "11.11 Choice of Law") in titles
    text = " ".join(e.text for e in parsed.elements)
    assert "Confidential Information has been omitted" not in text and "-18-" not in text


def test_a_heading_stops_at_its_stop_before_a_sub_clause_label_or_a_sentence():
    """Newcomer 15 read "9. Representations, Warranties, and Covenants. (a)" (cuad-080: the first sub-clause's
    label bold with the title) and cuad-009 has "4.1.2 Phase I. Between the Effective Date and the Launch Date,
    the" (a stop after a roman numeral taken for an initial): each heading ends at its stop, the rest is text."""
    parsed = PyMuPDFParser().parse(_cuad("cuad-080"))
    texts = [t for _, t in _titles(parsed)]
    assert "9. Representations, Warranties, and Covenants" in texts, texts
    assert not [t for t in texts if t.endswith("(a)")], texts
    body = " ".join(e.text for e in parsed.elements if e.type != NodeType.TITLE)
    assert "(a) Each Party represents, warrants and covenants" in body
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-009")))
    assert (3, "4.1.2 Phase I") in titles and (3, "4.1.3 Phase II") in titles, titles
    body = " ".join(e.text for e in PyMuPDFParser().parse(_cuad("cuad-009")).elements if e.type != NodeType.TITLE)
    assert "Between the Effective Date and the Launch Date, the Parties shall perform" in body


def test_real_contract_with_numbers_beside_titles():
    parsed = PyMuPDFParser().parse(_cuad("cuad-137"))
    numbered = [t for lv, t in _titles(parsed) if lv == 1 and t[:1].isdigit()]
    assert len(numbered) == 26 and numbered[0] == "1. Appointment and Acceptance" and numbered[-1] == "26. Counterparts"
    assert parsed.title == "DISTRIBUTORSHIP AGREEMENT"


def test_transformer_paper_sections_and_formulas_with_the_default_parser():
    path = CORPUS / "1706.03762v7_attention-is-all-you-need.pdf"
    if not path.is_file():
        pytest.skip("the Transformer paper is not in ../shared/corpus/pdf")
    parsed = PyMuPDFParser().parse(path)
    numbered = [(lv, t) for lv, t in _titles(parsed) if t[:1].isdigit()]
    assert len(numbered) == 22
    assert (2, "3.1 Encoder and Decoder Stacks") in numbered and (3, "3.2.1 Scaled Dot-Product Attention") in numbered
    eqs = [e.text for e in parsed.elements if e.type == NodeType.EQUATION]
    assert any(t.startswith("FFN(x) = max(0, xW1 + b1)W2 + b2") for t in eqs)
    assert any(t.startswith("MultiHead(Q, K, V ) = Concat(") for t in eqs)


def test_signature_block_is_tagged_and_stays_out_of_summaries(contract):
    from docmaster_core.llm import OfflineLLM, summarize_tree

    sig = [e.text for e in contract.elements if (e.extra or {}).get("role") == "signature"]
    assert any(t.startswith("IN WITNESS WHEREOF") for t in sig)
    assert any("By: /s/ Jane Roe" in t for t in sig) and any("BOREALIS TRADING LTD." in t for t in sig)
    assert contract.metadata["signature_paragraphs"] == len(sig)
    tree = build_tree(contract, "d")
    summarize_tree(tree, OfflineLLM())
    summaries = [n.summary for n in tree.nodes if n.type in (NodeType.TITLE, NodeType.ROOT)]
    assert summaries and not any("By:" in s or "/s/" in s or "omitted" in s for s in summaries)
    assert tree.nodes[0].summary.startswith("This Agreement is made between Acme Components Inc.")


def test_a_title_repeated_as_the_running_header_stays_the_title():
    """PonderNet prints its title as the running header of every page: the header lines go,
    the larger title line on page 1 stays the document's title."""
    path = CORPUS / "2107.05407_pondernet.pdf"
    if not path.is_file():
        pytest.skip("PonderNet is not in ../shared/corpus/pdf")
    parsed = PyMuPDFParser().parse(path)
    assert parsed.title == "PonderNet: Learning to Ponder"
    assert parsed.metadata["header_footer_lines_dropped"] >= parsed.n_pages - 1


def test_bold_labels_ending_in_a_colon_are_clause_headings_but_recurring_form_fields_are_not(tmp_path):
    """A contract whose clauses open with a bold label on its own line ("Terms and
    Termination:", the style of cuad-034): each label is a heading; a form's field labels
    that recur ("Stakeholder(s):" on every page) or lead a short value stay text."""
    doc = pymupdf.open()
    clauses = [("Contribution by Sponsor:", BODY), ("Terms and Termination:", BODY),
               ("Relationship of Parties:", BODY), ("Intellectual Property:", BODY)]
    for pno in range(2):
        page = doc.new_page(width=612, height=792)
        y = 60.0
        if pno == 0:
            page.insert_text((200, y), "SPONSORSHIP AGREEMENT", fontname="hebo", fontsize=12)
            y += 30
        for label, text in clauses[2 * pno:2 * pno + 2]:
            page.insert_text((50, y), label, fontname="hebo", fontsize=8.5)
            y += 12
            for k in range(0, len(text), 110):
                page.insert_text((50, y), text[k:k + 110], fontname="helv", fontsize=8.5)
                y += 11
            y += 8
        for field, value in (("Stakeholder(s):", "Underserved Communities"), ("Program Office:", "Office of Grants")):
            page.insert_text((50, y), field, fontname="hebo", fontsize=8.5)
            page.insert_text((50, y + 12), value, fontname="helv", fontsize=8.5)
            y += 32
        page.insert_text((50, y), BODY[:100], fontname="helv", fontsize=8.5)
    path = tmp_path / "sponsorship.pdf"
    doc.save(path)
    doc.close()
    heads = [t for _, t in _titles(PyMuPDFParser().parse(path))]
    for label, _ in clauses:
        assert label in heads, heads
    assert not any(h.startswith(("Stakeholder", "Program Office")) for h in heads), heads


_GOODS = ("valves", "pumps", "gaskets", "filters", "hoses", "fittings", "meters", "sensors", "cables", "brackets",
          "motors", "belts", "bearings", "seals", "clamps", "nozzles", "gauges", "switches", "relays", "fuses",
          "panels", "frames", "hinges", "latches", "rollers", "springs", "washers")
_PLACES = ("northern", "southern", "eastern", "western", "central", "coastal", "inland", "harbour", "airport",
           "river", "mountain")


def test_a_footer_row_printed_where_the_page_content_ends_stays_out(tmp_path):
    """cuad-010 prints "AZUL–ATR   Page 3/9   Amendment N° 1" right after each page's text,
    at a different height on every page: the page number ("Page N/M") and the short pieces
    on its row that recur on every page are running text, not content."""
    doc = pymupdf.open()
    n = 4
    for pno in range(n):
        page = doc.new_page(width=612, height=792)
        y = 72.0
        if pno == 0:
            page.insert_text((200, y), "AMENDMENT TO THE SERVICES AGREEMENT", fontname="hebo", fontsize=12)
            y += 30
        for k in range(2 + pno * 3):  # a different amount of text on each page, no line repeated
            page.insert_text((72, y), f"The Supplier shall deliver the {_GOODS[(pno * 11 + k) % len(_GOODS)]} "
                             f"to the {_PLACES[k % len(_PLACES)]} warehouse within the agreed time.",
                             fontname="helv", fontsize=9)
            y += 14
        y += 20
        page.insert_text((72, y), "ORION–VEGA", fontname="helv", fontsize=8)
        page.insert_text((280, y), f"Page {pno + 1}/{n}", fontname="helv", fontsize=8)
        page.insert_text((430, y), "Amendment No 2", fontname="helv", fontsize=8)
    path = tmp_path / "amendment.pdf"
    doc.save(path)
    doc.close()
    parsed = PyMuPDFParser().parse(path)
    text = " ".join(e.text for e in parsed.elements)
    assert "ORION" not in text and "Page 2/4" not in text and "Amendment No 2" not in text, text
    assert text.count("The Supplier shall deliver") == 2 + 5 + 8 + 11


def test_lettered_and_roman_sub_clauses_written_a_dot_and_i_dot_are_headings_under_their_clause(tmp_path):
    """An endorsement agreement in the style of cuad-113: numbered clauses "5." with a run-in
    title, lettered sub-clauses "a. Title." (one on its own line) and roman "i. Title." under
    a letter. The letters sit one level below the number, the romans one below the letters;
    a list of short lettered items (no text of their own) stays text. A clause title may be in
    sentence case ("5. Royalties payable by Licensee.", cuad-077)."""
    doc = pymupdf.open()
    rows = [
        ("1.", "Definitions. The following words have the meanings given to them below."),
        ("a.", "Goods means the valves, pumps and gaskets listed in the schedule."),  # a list item: no title
        ("b.", "Territory means the United States."),
        ("2.", "Term. " + BODY + " " + BODY), ("3.", "Grant of License. " + BODY + " " + BODY),
        ("4.", "Appearances."),
        ("a.", "Production Appearances."),
        ("i.", "Contract Year 2011. " + BODY), ("ii.", "Contract Year 2012. " + BODY),
        ("b.", "Additional Appearances. " + BODY), ("c.", "Voice-Over Appearances. " + BODY),
        ("d.", "Scheduling. " + BODY),
        ("5.", "Royalties payable by Licensee. " + BODY + " " + BODY),  # a title in sentence case
        ("6.", "Product sales to TL."), ("", BODY + " " + BODY),  # ... on its own line
        ("7.", "Notices. " + BODY),
    ]
    page = doc.new_page(width=612, height=792)
    y = 60.0
    page.insert_text((200, y), "ENDORSEMENT AGREEMENT", fontname="helv", fontsize=9)
    y += 24
    for label, text in rows:
        if y > 700 or label == "5.":  # the clauses run over two pages, as a contract's do
            page = doc.new_page(width=612, height=792)
            y = 60.0
        x = 72 if label[:1].isdigit() or not label else (90 if label in ("a.", "b.", "c.", "d.") else 110)
        page.insert_text((x, y), label, fontname="helv", fontsize=9)
        line = ""
        for w in text.split(" "):
            if len(line) + len(w) + 1 > 85:
                page.insert_text((x + 18, y), line, fontname="helv", fontsize=9)
                y += 11
                line = w
            else:
                line = (line + " " + w).strip()
        page.insert_text((x + 18, y), line, fontname="helv", fontsize=9)
        y += 20
    path = tmp_path / "endorsement.pdf"
    doc.save(path)
    doc.close()
    titles = _titles(PyMuPDFParser().parse(path))
    assert (1, "4. Appearances") in titles, titles
    assert (2, "a. Production Appearances") in titles, titles
    assert (3, "i. Contract Year 2011") in titles and (3, "ii. Contract Year 2012") in titles, titles
    assert (2, "b. Additional Appearances") in titles and (2, "d. Scheduling") in titles, titles
    assert not any("Goods means" in t or "Territory means" in t for _, t in titles), titles
    assert (1, "5. Royalties payable by Licensee") in titles and (1, "6. Product sales to TL") in titles, titles


def test_underlined_unnumbered_titles_are_headings_and_a_list_of_numbered_items_is_not(tmp_path):
    """A transport agreement in the style of cuad-112: under a bold article heading, clauses
    open with an underlined title in the body font ("Dedication. During the Term, ..."),
    one stands alone on its line. Underlined words inside a sentence are not titles, and an
    underlined reference with digits ("Exchange Act of 1934.") or a company's name ("Hospira,
    Inc.", a 10-K's list of subsidiaries) is not one either. An exhibit
    that lists numbered feature names one per line (cuad-138's specification) is a list: none
    of its items becomes a heading."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((200, 60), "GAS TRANSPORTATION AGREEMENT", fontname="hebo", fontsize=10)
    page.insert_text((72, 90), "Article II. Dedication and Services", fontname="hebo", fontsize=10)
    y = 112.0

    def para(title: str | None, text: str, underline_words: str = "") -> None:
        nonlocal y
        first = f"{title}. {text}" if title else text
        for k, ln in enumerate(textwrap.wrap(first, 90)):
            page.insert_text((72, y), ln, fontname="helv", fontsize=10)
            if k == 0 and title:
                w = pymupdf.get_text_length(title, fontname="helv", fontsize=10)
                page.draw_line((72, y + 1.5), (72 + w, y + 1.5), width=0.6)
            if k == 0 and underline_words and underline_words in ln:
                x = 72 + pymupdf.get_text_length(ln[:ln.index(underline_words)], fontname="helv", fontsize=10)
                w = pymupdf.get_text_length(underline_words, fontname="helv", fontsize=10)
                page.draw_line((x, y + 1.5), (x + w, y + 1.5), width=0.6)
            y += 12
        y += 10

    para("Dedication", BODY + " " + BODY)
    para("Commencement Date Facilities", BODY + " " + BODY)
    para(None, "The parties note that Transporter shall keep the " + BODY, underline_words="Transporter shall")
    para("Exchange Act of 1934", BODY)
    para("Hospira, Inc", "is a subsidiary listed in the exhibit, as " + BODY)  # a company's name, not a title
    para("Nominations", BODY + " " + BODY)
    page.insert_text((72, y), "Imbalances.", fontname="helv", fontsize=10)
    page.draw_line((72, y + 1.5), (72 + pymupdf.get_text_length("Imbalances", fontname="helv", fontsize=10), y + 1.5),
                   width=0.6)
    y += 14
    para(None, BODY + " " + BODY)
    page = doc.new_page(width=612, height=792)
    page.insert_text((250, 60), "EXHIBIT D", fontname="hebo", fontsize=10)
    page.insert_text((72, 84), "The system shall provide the functions listed below, each as described in the user",
                     fontname="helv", fontsize=10)
    page.insert_text((72, 96), "guide delivered with the system, and the Company shall keep them working in every release.",
                     fontname="helv", fontsize=10)
    y = 120.0
    for num, name in [("4.1.", "Organization"), ("4.1.1.", "Opening the Manifest System"), ("4.1.2.", "Main Screen"),
                      ("4.2.", "General Functionality"), ("4.2.1.", "Keyboard Behavior"), ("4.2.2.", "Sortable Lists"),
                      ("4.3.", "Process Menu"), ("4.3.1.", "Process Package"), ("4.3.2.", "Find Package")]:
        page.insert_text((72, y), num, fontname="helv", fontsize=10)
        page.insert_text((120, y), name, fontname="helv", fontsize=10)
        y += 12
    path = tmp_path / "transport.pdf"
    doc.save(path)
    doc.close()
    titles = _titles(PyMuPDFParser().parse(path))
    texts = [t for _, t in titles]
    assert (2, "Dedication") in titles and (2, "Commencement Date Facilities") in titles, titles
    assert (2, "Nominations") in titles and (2, "Imbalances") in titles, titles
    assert not any("Transporter" in t or "Exchange Act" in t or "Hospira" in t for t in texts), titles
    assert not any(t.startswith("4.") or "Package" in t for t in texts), titles


def test_real_contracts_with_underlined_titles_and_hanging_clause_numbers():
    """cuad-112 underlines its unnumbered clause titles under bold articles; cuad-016 sets
    "11." apart from its underlined run-in title, in another text column."""
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-112")))
    for t in ("Dedication", "Nominations", "Governing Law", "Term and Termination"):
        assert (2, t) in titles, (t, titles)
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-016")))
    assert (1, "11. Independent Contractor") in titles and (1, "12. Publicity") in titles, titles
    assert not any(t in ("Independent Contractor", "Publicity") for _, t in titles), titles


def test_sub_clause_titles_in_sentence_case_and_hanging_numbers_near_the_page_top():
    """cuad-010 writes its sub-clauses "4.2 Non application of confidentiality obligations" (one
    line, no stop), "4.3" with "Permitted disclosure of Confidential Information" on the next line,
    and "4.4 Disclosing Party's proprietary rights"; a sentence-case line that goes on below
    ("7.1 Party A represents and warrants that") stays text. cuad-148 hangs "17." to
    "20." left of their titles; "17." stands where other pages print "12." near the top, and
    "18." follows an address line that runs to the margin."""
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-010")))
    for t in ("4.2 Non application of confidentiality obligations", "4.3 Permitted disclosure of Confidential "
              "Information", "4.4 Disclosing Party’s proprietary rights"):
        assert (2, t) in titles, (t, titles)
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-148")))
    for t in ("16. LANGUAGE", "17. NOTICE", "18. ENTIRE AGREEMENT AND AMENDMENTS", "19. EFFECT OF HEADINGS",
              "20. BINDING EFFECT"):
        assert (1, t) in titles, (t, titles)


def test_a_sentence_case_line_that_goes_on_below_is_no_sub_clause_title():
    """cuad-116 breaks "7.1 Party A represents and warrants that" before its list: no title."""
    from docmaster_core.parsing.pdf.clauses import sentence_case_title

    texts = [t for _, t in _titles(PyMuPDFParser().parse(_cuad("cuad-116")))]
    assert not any(t.endswith(("warrants that", "In the event that")) for t in texts), texts
    assert sentence_case_title("Disclosing Party’s proprietary rights", 6)
    assert sentence_case_title("Non-application of the obligations", 6)
    assert not sentence_case_title("- a list item", 6) and not sentence_case_title("The Licensee shall pay", 6)


def test_sentence_case_clause_titles_lone_titled_sub_clauses_and_exhibits_on_their_own_pages():
    """cuad-074 writes "5." beside a bold "Customer's obligations" and "12. Delivery and
    Inspection, Title and shipping" (sentence case after a clause number), and titles one
    sub-clause among untitled siblings ("6.3 Long Lead Items", "13.3.4 Maintain Credit Line.
    ...", "18.4 No Other Liability. ..."): each sits inside its numbered clause. cuad-158 ends
    with five pages that hold only "Exhibit A" ... "Exhibit E" (after the signature block);
    cuad-037 prints "EXHIBIT A" a blank line above its title "PAYMENTS AND EXCLUSIVITY".
    A sentence that starts on a sub-clause number stays text (cuad-094's "9.4 Neoforma hereby
    grants VerticalNet a non-exclusive,", cuad-157's "8.3 Upon termination of the Agreement")."""
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-074")))
    for level, t in ((1, "5. Customer’s obligations"), (1, "12. Delivery and Inspection, Title and shipping"),
                     (2, "6.3 Long Lead Items"), (3, "13.3.4 Maintain Credit Line"), (2, "18.4 No Other Liability")):
        assert (level, t) in titles, (t, titles)
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-158")))
    for letter in "ABCDE":
        assert (1, f"Exhibit {letter}") in titles, titles
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-037")))
    assert (1, "EXHIBIT A PAYMENTS AND EXCLUSIVITY") in titles and (1, "EXHIBIT B TRADEMARKS") in titles, titles
    for prefix, start in (("cuad-094", "9.4 Neoforma"), ("cuad-157", "8.3 Upon termination")):
        texts = [t for _, t in _titles(PyMuPDFParser().parse(_cuad(prefix)))]
        assert not [t for t in texts if t.startswith(start)], texts


def test_capitals_lettered_sub_clauses_a_first_clause_before_styled_ones_and_long_titles_in_capitals():
    """cuad-054 heads its lettered sub-clauses in capitals ("(a) FOX ASSIGNMENT OF AGREEMENT:
    Pursuant to ...") under bold numbered clauses; cuad-158's "1. Term. Unless ..." is in the
    body weight before the styled "2. Sale of Products."; cuad-012's title runs to 14 words
    in capitals with one "and" ("AMENDMENT NO. 1 TO ... LLC and PREMIER ... AGREEMENT"), and
    cuad-156, which starts inside clause 11, has no title rather than "11.7. INTELLECTUAL ..."."""
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-054")))
    assert (2, "(a) FOX ASSIGNMENT OF AGREEMENT") in titles and (2, "(b) LICENSEE CHANGE OF NAME") in titles, titles
    assert (1, "1. Term") in _titles(PyMuPDFParser().parse(_cuad("cuad-158")))
    assert PyMuPDFParser().parse(_cuad("cuad-012")).title.startswith("AMENDMENT NO. 1 TO STREMICK")
    assert not PyMuPDFParser().parse(_cuad("cuad-156")).title.startswith("11.7")


def test_a_clause_whose_number_is_in_the_body_weight_fills_the_gap_between_styled_headings():
    """cuad-015 sets most clause headings in bold ("4. COMPENSATION."), but "2. ",
    "3. " and "5. " in the body weight before a bold run-in title: the style test skips them
    and the plain-number series is refused in a document with styled numbered headings (a
    paper's lists). A number the styled series skips, between its neighbours, is a heading."""
    titles = _titles(PyMuPDFParser().parse(_cuad("cuad-015")))
    for t in ("2. ENDORSEMENT AND GRANT OF RIGHTS", "3. EXCLUSIVITY", "5. PAYMENTS", "4. COMPENSATION."):
        assert (1, t) in titles, (t, titles)


def test_a_title_ending_on_a_connective_goes_on_below_and_a_party_name_is_not_the_title():
    """cuad-128's double-spaced title "ADDENDUM TO" / "ZEBRA® PARTNERCONNECT DISTRIBUTOR
    AGREEMENT" is one title; cuad-010 sets its party's name a little larger than the centred
    "Amendment n° 01" / "to the Global Maintenance Agreement": the line naming a kind of
    document is the title; cuad-039's parenthetical "(WQHT HD2)" is not one."""
    assert PyMuPDFParser().parse(_cuad("cuad-128")).title == "ADDENDUM TO ZEBRA® PARTNERCONNECT DISTRIBUTOR AGREEMENT"
    assert PyMuPDFParser().parse(_cuad("cuad-010")).title == "Amendment n° 01 to the Global Maintenance Agreement"
    assert PyMuPDFParser().parse(_cuad("cuad-039")).title == "LOCAL PROGRAMMING AND MARKETING AGREEMENT"


def test_a_cover_pages_connecting_words_are_no_sections():
    """cuad-010 and cuad-128 set their cover pages as "AGREEMENT" / "BETWEEN" / a party /
    "AND" / a party, each on its own bold centred line: a newcomer found "BETWEEN" and "AND"
    as top-level sections, the table of contents inside "AND" and cited by the chat."""
    from docmaster_core.parsing.pdf.headings import _CONNECTIVES_ONLY

    for prefix in ("cuad-010", "cuad-128"):
        doc = PyMuPDFParser().parse(_cuad(prefix))
        titles = [e.text.strip() for e in doc.elements if e.type == NodeType.TITLE]
        assert titles and not [t for t in titles if _CONNECTIVES_ONLY.match(t)], (prefix, titles)
        # ... nor is a party's name: cuad-010's "AZUL LINHAS AÉREAS BRASILEIRAS S/A" held the table of contents
        # and the preamble; its clauses stay sections
        assert not [t for t in titles if t.startswith("AZUL LINHAS")], titles
        if prefix == "cuad-010":
            assert "1. DEFINITIONS" in titles and "RECITALS:" in titles


def test_a_party_name_heads_no_section_an_article_naming_a_party_does():
    from docmaster_core.parsing.pdf.headings import _PARTY_NAME

    for name in ("AZUL LINHAS AÉREAS BRASILEIRAS S/A", "PreCheck Health Services, Inc.", "GOLFERS INCORPORATED",
                 "Phoenix Satellite Television Company Limited", "Party B (Carrier): Tonglu Tongze Logistics Ltd."):
        assert _PARTY_NAME.search(name), name
    for heading in ("Article C – Transfers From/To PepsiCo, Inc.", "Limited Warranty", "4. Term", "The Company",
                    "EXHIBIT A", "Relationship of the Parties"):
        assert not _PARTY_NAME.search(heading), heading


def _one_page(path: Path, head: list[tuple[str, float, str]], body_lines: int = 30) -> Path:
    """One page: ``head`` lines ``(text, font size, "centre"|"left")`` from the top, then a
    preamble and ``body_lines`` lines of 9 pt prose."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 60.0
    for text, size, where in head:
        width = pymupdf.get_text_length(text, fontname="cour", fontsize=size)
        page.insert_text((306 - width / 2 if where == "centre" else 72, y + size), text, fontname="cour", fontsize=size)
        y += size * 1.25
    for line in textwrap.wrap(BODY * 8, 86)[:body_lines]:
        page.insert_text((72, y + 9), line, fontname="cour", fontsize=9)
        y += 11.5
    doc.save(path)
    return path


def test_document_titles_after_a_legend_above_parties_under_a_larger_word_and_the_one_the_preamble_repeats(tmp_path):
    """Four title styles of filed contracts: a confidentiality legend in capitals ends with
    its sentence and the title under it is the title (cuad-079); "BETWEEN" and the parties
    under a title are not part of it (cuad-149); a title set in two sizes ("SOFTWARE /
    DEVELOPMENT" and, a size smaller, "AGREEMENT") is one title (cuad-110); and of the
    exhibit titles a filing prints before the contract, the title is the one the preamble
    repeats (cuad-095)."""
    parse = lambda p: PyMuPDFParser().parse(p).title  # noqa: E731
    legend = _one_page(tmp_path / "legend.pdf", [
        ("THE SYMBOL \"****\" DENOTES PLACES WHERE PORTIONS OF THIS DOCUMENT HAVE BEEN", 9, "centre"),
        ("OMITTED PURSUANT TO A REQUEST FOR CONFIDENTIAL TREATMENT WITH THE", 9, "centre"),
        ("SECURITIES AND EXCHANGE COMMISSION.", 9, "centre"),
        ("PRODUCT MANUFACTURING AGREEMENT", 9, "centre")])
    assert parse(legend) == "PRODUCT MANUFACTURING AGREEMENT"
    # a legend with "(i)" in it and no full stop, the title flush left under it: the legend stays text
    legend2 = _one_page(tmp_path / "legend2.pdf", [
        ("THE SYMBOL \"[****]\" DENOTES PLACES WHERE CERTAIN IDENTIFIED", 9, "centre"),
        ("INFORMATION HAS BEEN EXCLUDED FROM THE EXHIBIT BECAUSE IT IS BOTH (i)", 9, "centre"),
        ("NOT MATERIAL, AND (ii) WOULD LIKELY CAUSE COMPETITIVE HARM TO THE", 9, "centre"),
        ("COMPANY IF PUBLICLY DISCLOSED", 9, "centre"),
        ("JOINT SUPPLY AND MARKETING AGREEMENT", 9, "left")])
    parsed = PyMuPDFParser().parse(legend2)
    assert parsed.title == "JOINT SUPPLY AND MARKETING AGREEMENT"
    assert not [e.text for e in parsed.elements if e.type == NodeType.TITLE and "DISCLOSED" in e.text]
    assert any("PUBLICLY DISCLOSED" in e.text for e in parsed.elements if e.type == NodeType.TEXT)
    parties = _one_page(tmp_path / "parties.pdf", [
        ("NON-EXCLUSIVE LICENSE AGREEMENT", 9, "centre"), ("BETWEEN", 9, "centre"),
        ("THE ACME UNIVERSITY", 9, "centre"), ("&", 9, "centre"), ("WIDGET SURGICAL, INC.", 9, "centre")])
    assert parse(parties) == "NON-EXCLUSIVE LICENSE AGREEMENT"
    sizes = _one_page(tmp_path / "sizes.pdf", [
        ("SOFTWARE", 36, "left"), ("DEVELOPMENT", 36, "left"), ("AGREEMENT", 30, "left"), ("PHASE 1", 13, "left")])
    assert parse(sizes) == "SOFTWARE DEVELOPMENT AGREEMENT"
    echoed = _one_page(tmp_path / "echoed.pdf", [
        ("EXHIBIT D", 9, "left"), ("FORM OF AGREEMENT FOR TRIAL", 9, "left"), ("[Form follows.]", 9, "left"),
        ("FIRST AMENDMENT TO", 9, "left"), ("DISTRIBUTOR AGREEMENT", 9, "left"),
        ("THIS FIRST AMENDMENT TO DISTRIBUTOR AGREEMENT (this \"Amendment\") is made", 9, "left")])
    assert parse(echoed) == "FIRST AMENDMENT TO DISTRIBUTOR AGREEMENT"


def test_a_forms_fields_are_not_the_title(tmp_path):
    """cuad-021 opens with a form: "Agreement Number: CW251207" and "Addendum Effective Date
    March 3, 2011", centred, name a kind of document but are a field and its value, not the
    title; the title line below them is the title, and with none the document has no title. A
    bold field label ("Supplier Telephone:") is no heading either."""
    parse = lambda p: PyMuPDFParser().parse(p).title  # noqa: E731
    fields = [("Agreement Number: CW251207", 9, "centre"), ("Addendum Effective Date March 3, 2011", 9, "centre")]
    assert parse(_one_page(tmp_path / "form.pdf", fields)) == ""
    titled = _one_page(tmp_path / "titled.pdf", fields + [("Maintenance Agreement", 9, "centre")])
    assert parse(titled) == "Maintenance Agreement"
    # cuad-021's title: two bold lines set off-centre above the form, the first ending on a comma
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((150, 60), "SCHEDULE TO Software License,", fontname="cobo", fontsize=9)
    page.insert_text((130, 71), "Customization and Maintenance Agreement", fontname="cobo", fontsize=9)
    page.insert_text((72, 95), "Supplier Telephone:", fontname="cobo", fontsize=9)
    page.insert_text((300, 95), "Agreement Number: CW251207", fontname="cour", fontsize=9)
    y = 120.0
    for line in textwrap.wrap(BODY * 8, 86)[:30]:
        page.insert_text((72, y), line, fontname="cour", fontsize=9)
        y += 11.5
    doc.save(tmp_path / "schedule.pdf")
    parsed = PyMuPDFParser().parse(tmp_path / "schedule.pdf")
    assert parsed.title == "SCHEDULE TO Software License, Customization and Maintenance Agreement"
    assert not [e.text for e in parsed.elements if e.type == NodeType.TITLE and "Telephone" in e.text]


def test_a_contract_title_printed_again_on_every_page_is_the_title(tmp_path):
    """cuad-039 prints its title at the top of every page: the lines are running headers,
    but on page 1 it is the title (the parenthetical under it is not part of it)."""
    doc = pymupdf.open()
    lines = textwrap.wrap(BODY * 12, 86)
    for n in range(3):
        page = doc.new_page(width=612, height=792)
        head = "LOCAL PROGRAMMING AND MARKETING AGREEMENT"
        page.insert_text((306 - pymupdf.get_text_length(head, fontname="cour", fontsize=9) / 2, 66), head,
                         fontname="cour", fontsize=9)
        y = 80.0
        if n == 0:
            page.insert_text((270, y), "(WQHT HD2)", fontname="cour", fontsize=9)
            y += 20
        for line in lines[:40]:
            page.insert_text((72, y + 9), line, fontname="cour", fontsize=9)
            y += 11.5
    doc.save(tmp_path / "headers.pdf")
    assert PyMuPDFParser().parse(tmp_path / "headers.pdf").title == "LOCAL PROGRAMMING AND MARKETING AGREEMENT"


def test_run_in_clauses_between_headings_another_stage_found_are_headings():
    """cuad-001 (a newcomer's tree): own-line "8. TERM AND TERMINATION." and "12. GENERAL
    PROVISIONS." were headings, the run-in "9. INDEMNITY. Each party ...", "10." and "11." between
    them were not (their run did not start at 1-3), so indemnity sat under "8.5 EFFECTS OF
    TERMINATION"."""
    parsed = PyMuPDFParser().parse(_cuad("cuad-001"))
    top = [e.text.split(".")[0] for e in parsed.elements if e.type == NodeType.TITLE and e.level == 1]
    assert [n for n in top if n.isdigit()] == ["1", "2", "3", "5", "6", "7", "8", "9", "10", "11", "12"]


def test_a_title_word_broken_at_a_line_end_hyphen_is_joined_when_the_document_uses_it(tmp_path):
    """A paper's title set over two lines, "VIA AB-" / "STRACTION": the document's title reads
    "ABSTRACTION", a word its text uses; a compound ("TREC-" / "COVID") keeps its hyphen
    without the space (a newcomer read "AB- STRACTION" in the collection table)."""
    from docmaster_core.parsing.base import join_lines

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 80), "TAKE A STEP BACK: EVOKING REASONING VIA AB-", fontname="hebo", fontsize=16)
    page.insert_text((72, 100), "STRACTION IN LARGE LANGUAGE MODELS", fontname="hebo", fontsize=16)
    y = 150
    for k in range(12):
        page.insert_text((72, y), "We show that abstraction helps large language models reason over hard questions.",
                         fontname="helv", fontsize=10)
        y += 14
    path = tmp_path / "stepback.pdf"
    doc.save(path)
    assert PyMuPDFParser().parse(path).title == "TAKE A STEP BACK: EVOKING REASONING VIA ABSTRACTION IN LARGE LANGUAGE MODELS"
    words = {"abstraction"}
    assert join_lines(["RESULTS ON TREC-", "COVID"], lambda: words) == "RESULTS ON TREC-COVID"
    assert join_lines(["pre-", "and post-training"], lambda: words) == "pre- and post-training"
    assert join_lines(["VIA AB-", "STRACTION"]) == "VIA AB-STRACTION"  # no vocabulary: the hyphen stays
    assert join_lines(["the plain ResNet-", "34 and CIFAR-", "10 results"]) == "the plain ResNet-34 and CIFAR-10 results"


def test_a_one_page_documents_footer_far_below_its_text_stays_out_of_the_content(tmp_path):
    """A one-page amendment (cuad-012, cuad-056) has no second page to repeat its filing
    footer ("Source: GLU MOBILE INC, S-1/A, 3/19/2007"): the last line, alone in the bottom
    band far below the text, is running text; a page whose prose runs to the bottom keeps
    its last line."""
    short = _one_page(tmp_path / "short.pdf", [("AMENDMENT NO. 3", 12, "centre")], body_lines=12)
    doc = pymupdf.open(short)
    doc[0].insert_text((72, 760), "Source: EXAMPLE HOLDINGS INC, S-1/A, 3/19/2007", fontname="cour", fontsize=9)
    doc.saveIncr()
    texts = " ".join(e.text for e in PyMuPDFParser().parse(short).elements)
    assert "Source: EXAMPLE" not in texts and "AMENDMENT NO. 3" in (PyMuPDFParser().parse(short).title or "")
    full = pymupdf.open()
    page = full.new_page(width=612, height=792)
    y = 72.0
    while y < 700:  # prose down to the bottom band, then its closing line there
        for line in textwrap.wrap(BODY * 8, 86):
            if y >= 700:
                break
            page.insert_text((72, y), line, fontname="cour", fontsize=9)
            y += 11.5
    page.insert_text((72, 712), "IN WITNESS WHEREOF the parties sign this amendment on the Effective Date.",
                     fontname="cour", fontsize=9)
    full.save(tmp_path / "full.pdf")
    assert "IN WITNESS WHEREOF" in " ".join(e.text for e in PyMuPDFParser().parse(tmp_path / "full.pdf").elements)
    hits = sorted(CUAD.glob("cuad-056_*.pdf")) if CUAD.is_dir() else []
    for p in hits:  # the real one, where ../shared is here
        assert "Source:" not in " ".join(e.text for e in PyMuPDFParser().parse(p).elements)


def test_a_filings_exhibit_number_is_neither_a_figure_nor_a_section():
    """A newcomer saw "▨ #1 Exhibit 10.1" typed IMAGE at the top of most contracts: the filing's
    exhibit number ("Exhibit 10.1" alone) was read as a chart's caption; "Exhibit 8" opening
    cuad-118's first page is its filing label, not an exhibit heading. A financial report's
    "Exhibit 3: Revenue by segment" stays a caption."""
    from docmaster_core.parsing.base import is_caption

    assert is_caption("Exhibit 10.1") is None and is_caption("Exhibit 3: Revenue by segment") == "figure"
    parsed = PyMuPDFParser().parse(_cuad("cuad-147"))
    assert not [e for e in parsed.elements if e.type == NodeType.IMAGE], "a text line typed IMAGE"
    parsed = PyMuPDFParser().parse(_cuad("cuad-118"))
    assert (1, "Exhibit 8") not in _titles(parsed) and parsed.title == "SUPPLIER/SUBCONTRACTOR CONTRACT"


def _amendment(path: Path) -> Path:
    """A one-page amendment set in one font without blank lines, as filed (cuad-043 / 045's
    layout): a centred title, a preamble, "RECITALS" centred alone, WHEREAS clauses, two numbered
    clauses with titles run in ("1. Amendment to the Service List. ...", "2. Miscellaneous. ..."), a
    table's two column headers in capitals on one row, and a signature block."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = [50.0]

    def put(text: str, x: float = 72.0, centre: bool = False) -> None:
        if centre:
            x = 306 - pymupdf.get_text_length(text, fontname="tiro", fontsize=9) / 2
        page.insert_text((x, y[0] + 9), text, fontname="tiro", fontsize=9)
        y[0] += 11.0

    def para(text: str, lead: str = "") -> None:
        for k, line in enumerate(textwrap.wrap(lead + text, 100)):
            put(line, 86.0 if k == 0 else 72.0)

    put("AMENDMENT TO SERVICES AGREEMENT", centre=True)
    para("This Amendment to Services Agreement is made as of March 1, 2016 between Acme Advisers LLC and Borealis "
         "Services Company. Terms used but not defined here have the meanings given to them in the Agreement.")
    put("RECITALS", centre=True)
    para("WHEREAS, the parties have entered into a Services Agreement under which Borealis provides certain "
         "analysis services to Acme in connection with its accounts, as listed in Exhibit A to that agreement.")
    para("NOW, THEREFORE, the parties, intending to be legally bound, agree as follows:")
    para("Exhibit A to the Services Agreement is hereby deleted in its entirety and replaced with the following "
         "list of services, which the parties have reviewed and approved.", lead="1. Amendment to the Service List. ")
    page.insert_text((100, y[0] + 9), "SERVICES", fontname="tiro", fontsize=9)
    page.insert_text((330, y[0] + 9), "FEES", fontname="tiro", fontsize=9)
    y[0] += 11.0
    para("This Amendment is effective as of the date first above written. The Services Agreement, as amended, "
         "remains in full force and effect and is governed by the laws of the Commonwealth of Pennsylvania.",
         lead="2. Miscellaneous. ")
    para("IN WITNESS WHEREOF, the parties have executed this Amendment as of the date first above written.")
    put("ACME ADVISERS LLC", centre=True)
    put("By: /s/ Jane Roe")
    doc.save(path)
    return path


def test_a_one_page_amendments_recitals_and_its_two_titled_clauses_are_sections(tmp_path):
    """Held-out contracts (cuad-043, cuad-045) had no section: "RECITALS" is set in the body's font,
    centred alone, and the amendment's two clauses carry titles run in. Two numbered run-ins with titles
    make a series (three plain numbers are needed otherwise); a centred word in capitals between
    paragraphs is a heading, two column headers on one row and a party's name in the signature block
    are not."""
    parsed = PyMuPDFParser().parse(_amendment(tmp_path / "amendment.pdf"))
    titles = [t for _lv, t in _titles(parsed)]
    assert parsed.title == "AMENDMENT TO SERVICES AGREEMENT"
    assert "RECITALS" in titles and "1. Amendment to the Service List" in titles and "2. Miscellaneous" in titles, titles
    assert not {"SERVICES", "FEES", "ACME ADVISERS LLC"} & set(titles), titles


def test_real_one_page_amendments_with_recitals_and_titled_clauses():
    for prefix in ("cuad-043", "cuad-045"):
        titles = [t for _lv, t in _titles(PyMuPDFParser().parse(_cuad(prefix)))]
        assert "RECITALS" in titles and "2. Miscellaneous" in titles, (prefix, titles)


def test_a_papers_theorem_labels_and_formula_fragments_are_no_sections():
    """A newcomer found DBSCAN's two bold "Lemma" lines and "Ci)." (a piece of a formula in the heading's bold
    italic) among its sections: a theorem-like label opens a paragraph of its section, a fragment with a
    closing bracket that opens nowhere is no heading."""
    from docmaster_core.parsing.pdf.headings import _ENVIRONMENT_LABEL, _fragment

    for label in ("Lemma", "Lemma 2:", "Definition 3.", "Proof.", "THEOREM 1", "Corollary 2.1"):
        assert _ENVIRONMENT_LABEL.match(label), label
    for heading in ("Lemmas on Density", "Definitions", "4.1 Proof of Theorem 2", "Example Applications"):
        assert not _ENVIRONMENT_LABEL.match(heading), heading
    assert _fragment("Ci).") and _fragment("x]") and not _fragment("Results (Table 2)")
    pdf = CORPUS / "dbscan-kdd1996.pdf"
    if not pdf.exists():
        pytest.skip("dbscan-kdd1996.pdf not in ../shared/corpus/pdf")
    titles = [t for _lv, t in _titles(PyMuPDFParser().parse(pdf))]
    assert "Lemma" not in titles and "Ci)." not in titles and "4.1 The Algorithm" in titles, titles


def _two_page_form(path: Path) -> Path:
    """A two-page form as filed (cuad-127 / 133's layouts, made here): page 1 opens with an attachment's label
    that goes on below ("Attachment B to" / "Master Supply Agreement", centred), then the document's title in
    capitals and a preamble that names the agreement again; page 2 holds the terms: four clauses numbered in
    a column of their own (bold "1.") with titles run in ("Resale Rights. ..."), all on that one page."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = [60.0]

    def put(p, text: str, x: float = 72.0, centre: bool = False, font: str = "tiro") -> None:
        if centre:
            x = 306 - pymupdf.get_text_length(text, fontname=font, fontsize=10) / 2
        p.insert_text((x, y[0] + 10), text, fontname=font, fontsize=10)
        y[0] += 12.5

    put(page, "Attachment B to", centre=True, font="tibo")
    put(page, "Master Supply Agreement", centre=True, font="tibo")
    y[0] += 12
    put(page, "GUARANTEE OF MASTER SUPPLY AGREEMENT", centre=True, font="tibo")
    y[0] += 12
    for line in textwrap.wrap("As an inducement to Borealis Foods, Inc. to enter into a Master Supply Agreement "
                              "with the Supplier named below, the undersigned guarantors jointly and severally "
                              "agree as follows, for the whole term of the Master Supply Agreement and after it.", 95):
        put(page, line)
    for k in range(12):
        put(page, f"The guarantors waive notice of acceptance and of every default in the payment of sum {k + 1}, "
                  "as the Supplier may require.")
    put(page, "By: /s/ Jane Roe")
    page = doc.new_page(width=612, height=792)
    y[0] = 60.0
    put(page, "Supply Agreement Terms and Conditions", centre=True, font="tibo")
    y[0] += 10
    clauses = [("Resale Rights.", 5), ("Effect of the Attachment.", 1), ("Entire Agreement.", 3), ("Counterparts.", 2)]
    for n, (title, lines) in enumerate(clauses, 1):
        page.insert_text((52, y[0] + 10), f"{n}.", fontname="tibo", fontsize=10)
        body = f"{title} " + " ".join(["The Supplier may resell the products to its customers in the territory "
                                       "under the terms of the Master Supply Agreement and this attachment."] * lines)
        for line in textwrap.wrap(body, 92)[:lines]:
            put(page, line, x=80.0)
        y[0] += 8
    doc.save(path)
    return path


def test_an_attachments_label_is_not_the_title_and_titled_clauses_on_one_page_are_sections(tmp_path):
    """A held-out labeller's two-page forms: "Attachment B to" / "Master Franchise Agreement" was taken for the
    title (the preamble repeats it) and the title in capitals for a section; four titled clauses with
    hanging numbers, all on page 2 of 2, were no sections (a series had to cover two pages)."""
    parsed = PyMuPDFParser().parse(_two_page_form(tmp_path / "form.pdf"))
    titles = [t for _lv, t in _titles(parsed)]
    assert parsed.title == "GUARANTEE OF MASTER SUPPLY AGREEMENT", parsed.title
    for want in ("1. Resale Rights", "2. Effect of the Attachment", "3. Entire Agreement", "4. Counterparts"):
        assert want in titles, titles
    assert "GUARANTEE OF MASTER SUPPLY AGREEMENT" not in titles and "Master Supply Agreement" not in titles, titles
