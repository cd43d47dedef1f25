"""Chat that answers from the document a question names, in whole sentences (issue 35), on a
collection of contracts the test builds (real all-MiniLM-L6-v2 embeddings, offline answerer)."""
from __future__ import annotations

import json

import pytest

from docmaster_core.pipeline import DocMaster
from docmaster_core.qa.names import route_by_names
from docmaster_core.text.words import answer_sentences, is_toc_entry, is_whole_sentence
from docmaster_core.evaluation.qa import whole_sentences
from support.toy import build_toy_workspace, file_names as _files


def _contract(file: str, a: str, b: str, state: str, months: int) -> tuple:
    return (file, f"Distribution Agreement between {a} and {b}", [
        (None, [f"This Distribution Agreement is made on March 1, 2019 by and between {a}, a Delaware corporation "
                f"with offices in Dover (\"Supplier\"), and {b}, a company organised in Ontario (\"Distributor\")."]),
        ("1. Appointment", ["Supplier appoints Distributor as its non-exclusive distributor of the Products in the "
                            "Territory, and Distributor accepts the appointment."]),
        ("2. Term", [f"This Agreement starts on the Effective Date and continues for {months} months, unless "
                     "terminated earlier under Section 3."]),
        ("3. Termination", ["Either party may terminate this Agreement upon thirty days written notice, without "
                            "cause, to the other party."]),
        ("4. Governing Law", [f"This Agreement shall be governed by and construed in accordance with the laws of the "
                              f"State of {state}, without regard to its conflict of laws rules."]),
        (None, [f"IN WITNESS WHEREOF the parties have signed this Agreement. {a} By: ______ {b} By: ______"]),
    ])


CONTRACTS = [
    _contract("dist-alpha.pdf", "Quillfeather Instruments Inc.", "Marrowgate Supply Ltd.", "Tennessee", 24),
    _contract("dist-bravo.pdf", "Ostrander Robotics Corp.", "Pelliton Trading Ltd.", "Oregon", 36),
    _contract("dist-charlie.pdf", "Vantorian Foods LLC", "Kestrelby Wholesale Ltd.", "Vermont", 12),
    _contract("dist-delta.pdf", "Halloway Paper Co.", "Brindlemoor Retail Ltd.", "Nevada", 48),
]
# a collection large enough for a word in one document to be rare (lower-case names count then)
_SUPPLIERS = ["Arbelo", "Corvane", "Dunmore", "Elsworth", "Fenwick", "Garrow", "Hexley", "Iverton", "Jessamy",
              "Korrin", "Lomax", "Morven", "Norcott", "Oakhurst", "Penrith", "Quarles", "Rendle", "Sutcliffe",
              "Thornbury", "Upfield", "Verity", "Wexcombe"]
_STATES = ["Ohio", "Iowa", "Utah", "Idaho", "Maine", "Texas", "Kansas", "Alaska"]
CONTRACTS += [_contract(f"dist-{n.lower()}.pdf", f"{n} Components Inc.", f"{n}wood Distribution Ltd.",
                        _STATES[i % len(_STATES)], 6 * (i % 5 + 1)) for i, n in enumerate(_SUPPLIERS)]
# a contract whose law clause never says "govern" nor "jurisdiction" (cuad-039 and cuad-009 say it so)
CONTRACTS.append(("dist-echo.pdf", "Marketing Agreement between Tolliver Data Systems and Network 1 Financial", [
    (None, ["This Marketing Agreement is made on May 2, 2018 by and between Tolliver Data Systems, Inc., an Indiana "
            "corporation (\"Licensee\"), and NETWORK 1 FINANCIAL, INC., a Virginia corporation (\"Programmer\")."]),
    ("1. Services", ["Programmer shall provide the programming described in Schedule A to Licensee during the term."]),
    ("2. Fees", ["Licensee shall pay Programmer a monthly fee of $4,000 within fifteen days of each invoice."]),
    ("16. Construction", ["This Agreement will be construed in accordance with the laws of the State of Indiana "
                          "without regard to principles of conflicts of laws."]),
    ("17. Counterparts", ["This Agreement may be signed in counterparts, each of which is an original."]),
]))


# numbered paragraphs without headings under one title (cuad-119): clause 17 is no title node
CONTRACTS.append(("dist-foxtrot.pdf", "Distributor Agreement between Foxglove Optics and Wrenford Trading", [
    (None, ["Distributor Agreement made this 19th day of March, 2020 between Foxglove Optics Inc. (the Principal) "
            "and Wrenford Trading Ltd. (the Distributor)."]),
    ("DESCRIPTION OF DISTRIBUTOR", ["1. The Distributor is a wholesaler of optical instruments in the Territory.",
                                    "16. Neither party may assign this Agreement without the other party's consent.",
                                    "17. This Agreement shall be construed in accordance with and governed by the laws "
                                    "of the State of Utah."]),
]))


# a license and its amendment between the same two parties, and another license of one of them
def _license(file: str, title: str, a: str, b: str, body: list) -> tuple:
    return (file, title, [
        (None, [f"This {title} is made on June 1, 2017 by and between {a} (\"Licensor\") and {b} (\"Licensee\")."]),
        *body,
    ])


CONTRACTS += [
    _license("lic-sable.pdf", "Content License Agreement", "Sablewick Audio Inc.", "Tremayne Media LLC", [
        ("1. License", ["Licensor grants Licensee a non-exclusive license to stream the Titles in the Territory."]),
        ("2. Fees", ["Licensee shall pay Licensor a fee of $2,500 for each Title within thirty days of delivery."]),
    ]),
    _license("lic-sable-amendment.pdf", "Amendment No. 1 to the Content License Agreement", "Sablewick Audio Inc.",
             "Tremayne Media LLC", [
        ("1. Term", ["The Term of the License Agreement is extended and shall expire on December 31, 2021."]),
    ]),
    _license("lic-sable-ulverston.pdf", "Content License Agreement", "Sablewick Audio Inc.", "Ulverston Retail plc", [
        ("1. Fees", ["Licensee shall pay Licensor a fee of $900 for each Title within sixty days of delivery."]),
    ]),
]

# the parties of an endorsement named away from the word "agreement", and a word beside it that only
# another contract's file name holds (cuad-113 and cuad-156)
CONTRACTS += [
    _license("endorse-ashby.pdf", "Endorsement Agreement", "Pinecrest Golfers Incorporated", "Rowan Ashby", [
        ("6. Compensation", ["Pinecrest shall pay Ashby a royalty of two percent (2%) on all Gross Revenue of the "
                             "Endorsed Products."]),
    ]),
    _license("golfwear-unlimited-use-agreement.pdf", "Use Agreement", "Tamsin Hollis", "Larchmont Apparel Inc.", [
        ("1. Use", ["Hollis grants Larchmont the right to use her name on its products in the Territory."]),
    ]),
]


# a filer's name that only the file name holds, written without spaces and with its legal form
# (cuad-138_stampscominc-...: "Stamps.com" is in the PDF's running footers only, which are left out)
CONTRACTS.append(("ex10_harbourlinecominc-20001114_hosting-agreement.pdf", "Hosting Agreement", [
    (None, ["This Hosting Agreement is made on May 5, 2000 by and between Tidewell Postal Centers Inc. (\"TPC\") "
            "and the Company."]),
    ("1. Hosting", ["The Company shall host the TPC storefront on its servers."]),
    ("2. Term", ["This Agreement continues for five years from the Effective Date."]),
    ("3. Termination", ["Either party may terminate this Agreement upon ninety days written notice to the other."]),
    ("4. Governing Law", ["This Agreement is governed by the laws of the State of Delaware."]),
]))


# a party whose name starts with a number (cuad-001: "2TheMart.com")
CONTRACTS.append(("cobrand-larkspur.pdf", "Co-Branding Agreement", [
    (None, ["This Co-Branding Agreement is made on March 1, 1999 by and between 4Sight Media, Inc. (\"4Sight\") and "
            "Larkspur Escrow Inc. (\"Larkspur\")."]),
    ("1. Co-Branding", ["4Sight shall display the Larkspur escrow service on its auction pages."]),
    ("2. Term", ["This Agreement continues for two years from the Effective Date."]),
]))


@pytest.fixture(scope="module")
def dm(tmp_path_factory, embedder):
    ws = build_toy_workspace(tmp_path_factory.mktemp("named"), embedder, CONTRACTS)
    return DocMaster(ws, embedder=embedder)


def test_the_names_pick_the_document_and_the_need_is_left(dm):
    view = dm.retriever().view
    r = route_by_names("Which state's law governs the agreement between Ostrander Robotics Corp. and Pelliton "
                       "Trading Ltd.?", view)
    assert r is not None and _files(dm, r.doc_ids) == ["dist-bravo.pdf"]
    assert {"Ostrander", "Pelliton"} <= set(r.names)
    assert r.need == "Which state's law governs the agreement?"
    r = route_by_names("what is the term of the agreement with kestrelby?", view)  # lower case, one rare name
    assert r is not None and _files(dm, r.doc_ids) == ["dist-charlie.pdf"]
    r = route_by_names("Which law governs dist-bravo?", view)  # a file name
    assert r is not None and _files(dm, r.doc_ids) == ["dist-bravo.pdf"]
    assert route_by_names("What top-1 accuracy does the model reach?", view) is None  # a metric, not a name
    # a question that names nothing keeps its scope
    assert route_by_names("Which contracts can be terminated without cause?", view) is None
    assert route_by_names("What is the governing law?", view) is None


def test_two_parties_named_without_the_word_agreement_route_to_their_contract(dm):
    view = dm.retriever().view
    r = route_by_names("How many days of notice must Quillfeather give Marrowgate before it terminates?", view)
    assert r is not None and _files(dm, r.doc_ids) == ["dist-alpha.pdf"]
    assert {"Quillfeather", "Marrowgate"} <= set(r.names)
    # one name alone, not referring to a document, still routes nowhere (it could be a product or a method)
    assert route_by_names("How many days of notice must Quillfeather give before it terminates?", view) is None
    # two names that no one document holds together route nowhere
    assert route_by_names("Does Quillfeather compete with Pelliton in the Territory?", view) is None


def test_two_parties_name_their_contract_and_its_amendment_but_not_another_contract_of_one(dm):
    view = dm.retriever().view
    r = route_by_names("On what date does the Term for Sablewick Audio and Tremayne Media expire?", view)
    assert r is not None and sorted(_files(dm, r.doc_ids)) == ["lic-sable-amendment.pdf", "lic-sable.pdf"]
    assert {"Sablewick", "Tremayne"} <= set(r.names) and "Sablewick" not in r.need
    r = route_by_names("How much must Ulverston Retail pay Sablewick Audio for each title?", view)
    assert r is not None and _files(dm, r.doc_ids) == ["lic-sable-ulverston.pdf"]
    res = dm.ask("On what date does the Term for Sablewick Audio and Tremayne Media expire?", all_docs=True,
                 save=False)
    assert res.doc_source == "named" and "December 31, 2021" in res.answer.citations[0].quote


def test_ask_answers_from_the_named_contract_with_its_clause_not_its_preamble(dm):
    res = dm.ask("Which state's law governs the agreement between Quillfeather Instruments Inc. and Marrowgate "
                 "Supply Ltd.?", all_docs=True, save=False)
    d = res.to_dict()
    assert res.doc_source == "named" and d["scope"] == "dist-alpha.pdf (named in the question)"
    cites = res.answer.citations
    assert cites and {c.file for c in cites} == {"dist-alpha.pdf"}
    assert any("Tennessee" in c.quote and "governed" in c.quote for c in cites)  # the clause, not the preamble
    assert "Dover" not in res.answer.text
    assert whole_sentences(res.answer.text)
    # the same question without names is asked over every document, as before
    plain = dm.ask("Which state's law governs the agreement?", all_docs=True, save=False)
    assert plain.doc_source == "all"


def test_a_law_clause_in_other_words_answers_a_named_place_question(dm):
    """The clause says "construed in accordance with the laws of the State of Indiana": no
    "governs", no "jurisdiction". A place question is answered by a sentence naming a place
    (the class noun "jurisdiction" is what a place answers), and the party names, a digit
    among them, are left out of the need."""
    q = "Which jurisdiction's law governs the agreement between Tolliver Data Systems, Inc and NETWORK 1 FINANCIAL, INC?"
    view = dm.retriever().view
    r = route_by_names(q, view)
    assert r is not None and _files(dm, r.doc_ids) == ["dist-echo.pdf"]
    assert r.need == "Which jurisdiction's law governs the agreement?"
    res = dm.ask(q, all_docs=True, save=False)
    assert res.answer.outcome != "not_found", res.answer.text
    assert any("State of Indiana" in c.quote for c in res.answer.citations)
    # the same clause does not answer what the contract never speaks of
    res = dm.ask("What is the liability cap in the agreement between Tolliver Data Systems and NETWORK 1 FINANCIAL?",
                 all_docs=True, save=False)
    assert res.answer.outcome == "not_found"


def test_place_questions_and_place_answers():
    from docmaster_core.text.answer_units import names_place, profile_question

    p = profile_question("Which jurisdiction's law governs the agreement?")
    assert p.answer_type == "place" and p.class_terms == ["jurisdiction"]
    assert profile_question("In which country was the study conducted?").answer_type == "place"
    assert profile_question("What is the notice period for termination?").answer_type != "place"
    assert names_place("construed in accordance with the laws of the State of Indiana without regard")
    assert names_place("resolved by arbitration in McLean, Virginia, pursuant to the rules")
    assert names_place("governed by Delaware law.")
    assert not names_place("governed by the laws of such state")
    # a place the clause describes (a held-out guarantee: "the state in which Franchisor has its principal place
    # of business") answers "which state's law", where "the state in which the goods are shipped" is no law clause
    assert names_place("governed by the laws of the state in which Franchisor has its principal place of business")
    assert names_place("submitted to the courts of the country where the Licensee is incorporated")
    assert not names_place("delivered to the state in which the goods are shipped")
    assert not names_place("13. Governing Law. This Agreement shall be governed by applicable Law.")


def test_cli_ask_says_which_document_was_named(dm, monkeypatch, capsys):
    from docmaster_core import cli

    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", dm.embedder.name)
    rc = cli.main(["ask", "What is the term of the Vantorian Foods agreement?", "--workspace", str(dm.path), "--all",
                   "--no-save", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    d = json.loads(out.out)
    assert d["doc_source"] == "named" and d["scope"].startswith("dist-charlie.pdf")
    assert any("12 months" in c["quote"] for c in d["answer"]["citations"])


def test_answer_sentences_are_whole():
    text = ("(a) Governing Law. This Agreement is governed by the laws of Texas. The parties agree to the following: "
            + "; ".join(f"item {i} applies to the goods delivered under the order in full" for i in range(12)) + ".")
    units = answer_sentences(text)
    assert units[0] == "(a) Governing Law. This Agreement is governed by the laws of Texas."  # heading kept with it
    assert all(u.endswith((".", ";", ":")) for u in units) and len(units) > 3  # a long list split at ';' only
    assert is_whole_sentence("8.05 GOVERNING LAW.") and is_whole_sentence("(iv) The term is one year;")
    assert not is_whole_sentence("contemplated hereby or the Company relationship.")
    assert not is_whole_sentence("This Agreement shall be governed by and")
    assert whole_sentences("It is Texas. [E1] The term is one year. [E2]")
    assert not whole_sentences("It is Texas. [E1] and the term of this agreement is one year from the [E2]")
    assert whole_sentences("Location: White Plains, AL Aircraft: Fisher Aero Celebrity [E1]")  # a form, not prose
    # an answer about several documents names each on the line above its sentences
    assert whole_sentences("HOSTING AGREEMENT (cuad-150.pdf):  \nIt is Texas. [E1]\n\ncuad-001.pdf:  \nThe term is "
                           "one year. [E2]")
    assert not whole_sentences("cuad-001.pdf:  \nand the term of this agreement is one year from the [E2]")
    assert is_toc_entry("16. Governing Law And Arbitration.................. 7") and not is_toc_entry("See p. 7.")


def test_an_item_of_a_clause_list_is_whole_and_a_pdfs_greek_question_mark_ends_a_clause():
    """Contracts enumerate: "(i) on the date hereof ... the U.S. Affiliate is: (A) ...; and (B) a member
    of ... FINRA;" (cuad-102), and some PDFs write the ';' as U+037E."""
    assert is_whole_sentence("(ii) all offers of Securities by us have been effected by the U.S. Affiliate;")
    assert is_whole_sentence("and (B) a member of and in good standing with the Financial Industry Regulatory "
                             "Authority, Inc.\u037e")
    assert is_whole_sentence("or (c) the Licensee becomes insolvent.")
    assert not is_whole_sentence("and the U.S. Affiliate is a member of the Authority;")  # no enumerator
    assert not is_whole_sentence("(ii) all offers of Securities by us have been effected by")  # cut at its end
    assert not is_whole_sentence("(the Agent) shall pay the fee.")  # a bracket, no enumerator
    assert not is_whole_sentence("(30) days before the expiration of the term then in effect.")  # "thirty" cut off
    long_item = ("(i) on the date hereof the U.S. Affiliate is and was: (A) a broker-dealer duly registered under "
                 + " ".join(["the laws of each state where it made offers"] * 8)
                 + "\u037e and (B) a member of and in good standing with the Financial Industry Regulatory Authority, "
                   "Inc.\u037e")
    units = answer_sentences(long_item)
    assert len(units) == 2 and units[1].startswith("and (B) a member") and all(is_whole_sentence(u) for u in units)
    assert whole_sentences(f"{units[1]} [E1]")


def test_a_noun_and_its_verb_share_a_stem():
    """"terminate" in a question finds "termination" in a clause (cuad-101 was declined
    with "they never mention 'terminate'"), and the verdict says found."""
    from docmaster_core.text.answer_units import Background, profile_question, terms_of, verdict

    assert terms_of("termination renewal payment insurance") == terms_of("terminate renew pay insured")
    p = profile_question("How much notice does the licensee need to terminate the license?")
    assert "need" not in " ".join(p.terms)
    clause = "4.1 Termination. This license may be terminated upon sixty (60) days written notice by the Licensee."
    bg = Background(3, __import__("collections").Counter(set(terms_of(clause))))
    assert verdict(p, bg, [clause]).found


def test_the_need_leaves_out_the_documents_kind_and_other_names_but_not_a_clause(dm):
    """"the distribution agreement" names the document's kind (its title says so): the need
    keeps "the agreement"; a clause after the names ("if ...") stays in the need."""
    view = dm.retriever().view
    r = route_by_names("What is the term of the distribution agreement between Ostrander Robotics Corp. and "
                       "Pelliton Trading Ltd.?", view)
    assert r is not None and r.need == "What is the term of the agreement?"
    r = route_by_names("Which state's law governs the agreement between Ostrander Robotics Corp. and Pelliton "
                       "Trading Ltd. if the Territory changes?", view)
    assert r is not None and "if" in r.need.split() and r.need.endswith("changes?"), r.need
    res = dm.ask("What is the term of the distribution agreement between Ostrander Robotics Corp. and Pelliton "
                 "Trading Ltd.?", all_docs=True, save=False)
    assert any("36 months" in c.quote for c in res.answer.citations)
    # words between a determiner and the document noun describe the named document too ("his F2 golf
    # clubs endorsement agreement"), whether or not its name fields hold them; what is asked stays
    r = route_by_names("What royalty does Ostrander Robotics Corp. pay Pelliton Trading Ltd. under their 2019 robot "
                       "arm distribution agreement?", view)
    assert r is not None and r.need == "What royalty does pay under their agreement?", r.need
    # the question's own abbreviation of a name it spells out ("Ostrander Robotics Corp." ... "OR's") goes with it
    r = route_by_names("Can Pelliton Trading Ltd. assign its distribution agreement with Ostrander Robotics Corp. "
                       "without OR's consent?", view)
    assert r is not None and "OR" not in r.need and "OR's" not in r.need and "consent" in r.need, r.need


def test_a_term_or_a_period_asks_for_a_length_of_time():
    from docmaster_core.text.answer_units import profile_question, type_match

    p = profile_question("What is the term of the agreement?")
    assert p.answer_type == "number" and p.soft_units == ["duration"]
    assert type_match(p, "The term of this Agreement shall be for one (1) year commencing on the Effective Date.") == 1.0
    assert type_match(p, "During the Term and subject to the limitations set forth in Paragraph 4, Talent shall") < 1.0
    assert profile_question("What is the notice period for termination?").soft_units == ["duration"]


def test_a_price_is_an_amount_or_a_share_of_another_price():
    """"At what price may STAAR repurchase ...?" is answered by "at eighty percent (80%) of the
    original net purchase price" as by "$12.50"; a sentence with neither gives no price."""
    from docmaster_core.text.answer_units import profile_question, type_match

    p = profile_question("At what price may STAAR repurchase resalable Products in the Distributor's inventory?")
    assert p.units == ["price"] and p.answer_type == "number"
    assert type_match(p, "STAAR may repurchase Products at eighty percent (80%) of Distributor's original net price.") == 1.0
    assert type_match(p, "The purchase price is $12.50 per unit.") == 1.0
    assert type_match(p, "The airplane had flown 190 hours since an amateur rebuilt it.") < 1.0
    assert profile_question("How much is it in US dollars?").units == ["dollar"]


def test_a_term_without_an_end_answers_how_long():
    """"How long does it last?" is answered by "valid for an indefinite term" or "in perpetuity"
    as much as by a number of years; a sentence with neither is no length of time."""
    from docmaster_core.text.answer_units import profile_question, type_match

    p = profile_question("How long does the transportation agreement between ZTO and Tonglu last?")
    assert type_match(p, "2. Period of transportation services: this Agreement is valid for an indefinite term.") == 1.0
    assert type_match(p, "The license granted herein is perpetual and irrevocable.") == 1.0
    assert type_match(p, "Party B shall obtain Party A's written consent in the case of early termination.") == 0.0
    # without "how long" the words do not make an answer
    assert type_match(profile_question("How much does the carrier charge?"), "valid for an indefinite term") == 0.0


def test_a_paragraphs_last_sentence_without_its_stop_is_whole():
    """cuad-157: "This Agreement is governed by ... the laws of Hong Kong" ends its paragraph
    without a full stop (clause 16.2 starts the next); it is a whole sentence there, not a
    cut one. A piece ending in a lower-case word, a heading run into the end, an address
    block, or a piece that does not end its passage still count as cut."""
    from docmaster_core.text.words import ends_its_paragraph

    law = "This Agreement is governed by and shall be construed in accordance with the laws of Hong Kong"
    passage = "16.1 The English language version shall prevail in the event of any discrepancy. " + law
    assert ends_its_paragraph(law, passage)
    assert whole_sentences(f"{law} [E3]", {"E3": passage})
    assert not whole_sentences(f"{law} [E3]")  # without the passage nothing says it ends there
    assert not ends_its_paragraph(law, passage + " and of no other place.")
    cut = "This Agreement shall be governed by and construed in accordance with the laws"
    assert not ends_its_paragraph(cut, "1. " + cut)
    head = 'Use of this claim is OPTIONAL. 4.1.4. "exp" (Expiration Time) Claim'
    assert not ends_its_paragraph(head, "x " + head)
    addr = "With a Copy To: Craig E. Sherman Venture Law Group 4750 Carillon Point Kirkland, WA 98033"
    assert not ends_its_paragraph(addr, addr)


def test_a_citation_names_its_numbered_clause(dm):
    """Issue 35 item 3: a citation of a numbered paragraph without a heading names its
    clause ("clause 17"), not only the title above it; a clause with a heading title
    ("4. Governing Law") is named by that title."""
    from docmaster_core.qa.answering import clause_path

    assert clause_path(["DESCRIPTION OF DISTRIBUTOR"], "17. This Agreement shall be construed") == [
        "DESCRIPTION OF DISTRIBUTOR", "clause 17"]
    assert clause_path(["ARTICLE VIII", "8.05 GOVERNING LAW"], "8.05 GOVERNING LAW. All disputes") == [
        "ARTICLE VIII", "8.05 GOVERNING LAW"]
    assert clause_path(["3 Results"], "3 Results We show") == ["3 Results"]  # a paper's section, no clause
    assert clause_path([], "2. Miscellaneous. This Amendment shall be governed by") == ["2. Miscellaneous"]
    res = dm.ask("Which state's law governs the agreement between Foxglove Optics Inc. and Wrenford Trading Ltd.?",
                 all_docs=True, save=False)
    utah = [c for c in res.answer.citations if "Utah" in c.quote]
    assert utah and utah[0].section_path[-1] == "clause 17"
    res = dm.ask("Which state's law governs the agreement between Ostrander Robotics Corp. and Pelliton Trading Ltd.?",
                 all_docs=True, save=False)
    assert any(c.section_path[-1:] == ["4. Governing Law"] and "Oregon" in c.quote for c in res.answer.citations)


def test_a_named_contract_is_searched_whole_not_only_the_retrieval_pool(dm, monkeypatch):
    """When the names pick the documents, every node of them is a candidate passage: the clause
    that answers is found even when the retrieval ranking puts it last (a payment term ranked
    below the clauses whose embeddings sit closer to the question)."""
    from docmaster_core.qa import answering

    retr = dm.retriever()
    view = retr.view
    di = next(i for i, d in enumerate(view.docs) if d.file_name == "dist-echo.pdf")
    nodes = view.docs[di].tree.nodes
    fee = next(n.id for n in nodes if "within fifteen days" in (n.content or ""))

    def adversarial(retr_, q, doc_ids, per_doc, view_):  # the fee clause last, the pool honoured
        order = [n.id for n in nodes if n.id != fee] + [fee]
        return [(0.5 - 0.01 * r, di, nid, "combined") for r, nid in enumerate(order[:per_doc])], retr_.encode(q)

    monkeypatch.setattr(answering, "combined_candidates", adversarial)
    monkeypatch.setattr(answering, "_keyword_candidates", lambda *a, **k: [])
    monkeypatch.setattr(answering, "_counted_candidates", lambda *a, **k: [])  # "(15) days" would find it too
    need = "Within how many days must the licensee pay each invoice?"
    doc = [view.docs[di].doc_id]
    pooled = answering.select_passages(retr, need, doc, 1, pool_factor=1)
    whole = answering.select_passages(retr, need, doc, 1, pool_factor=1, whole_documents=True)
    assert fee not in {e.node_id for e in pooled.evidence}
    assert whole.evidence[0].node_id == fee and "fifteen days of each invoice" in whole.evidence[0].text
    assert len(nodes) <= retr.settings.answer_whole_nodes


def test_a_number_beside_the_counted_noun_is_a_candidate_passage(dm, monkeypatch):
    """"Within how many days ...?": a passage that writes a number beside "days" joins the pool
    even when the retrieval ranking puts it last and BM25 adds nothing (a paper's introduction
    that says "SUBJQA includes over 10,000 English examples" in passing; docs/results/qa.md)."""
    from docmaster_core.qa import answering
    from docmaster_core.text.answer_units import profile_question

    retr = dm.retriever()
    view = retr.view
    di = next(i for i, d in enumerate(view.docs) if d.file_name == "dist-echo.pdf")
    nodes = view.docs[di].tree.nodes
    fee = next(n.id for n in nodes if "within fifteen days" in (n.content or ""))

    def adversarial(retr_, q, doc_ids, per_doc, view_):
        order = [n.id for n in nodes if n.id != fee] + [fee]
        return [(0.5 - 0.01 * r, di, nid, "combined") for r, nid in enumerate(order[:per_doc])], retr_.encode(q)

    monkeypatch.setattr(answering, "combined_candidates", adversarial)
    monkeypatch.setattr(answering, "_keyword_candidates", lambda *a, **k: [])
    need = "Within how many days must the licensee pay each invoice?"
    assert profile_question(need).counted == ["day"]
    got = answering.select_passages(retr, need, [view.docs[di].doc_id], 1, pool_factor=1)
    assert got.evidence[0].node_id == fee and "fifteen days of each invoice" in got.evidence[0].text
    # a question that counts nothing adds no such candidate
    none = answering._counted_candidates(view, profile_question("Who pays each invoice?"), retr.encode("x"), [di], 2)
    assert none == []


def test_term_weights_of_a_named_contract_come_from_the_collection(dm):
    """Over one contract every word it lacks weighs the most, so a paraphrase ("stop" a renewal)
    made the verdict decline; with the collection's weights a common word it lacks weighs little."""
    from collections import Counter

    from docmaster_core.qa.answering import collection_background
    from docmaster_core.text import answer_units as S

    p = S.profile_question("How much notice is needed to stop the agreement from renewing automatically?")
    assert p.terms == ["notic", "stop", "agre", "renew"]
    passage = ["Either party may prevent the renewal by sixty days notice."]
    one = S.Background(200, Counter({"notic": 20, "agre": 150, "renew": 20}))  # the named contract: no "stop"
    wide = S.Background(5000, Counter({"stop": 400, "notic": 500, "agre": 3000, "renew": 100}))
    assert not S.verdict(p, one, passage).found
    routed = S.Background(one.n_nodes, one.df, idf_from=wide)
    assert routed.weight("stop") == wide.weight("stop") and not routed.has("stop")
    v = S.verdict(p, routed, passage)
    assert v.found and v.missing_terms == ["stop"]
    # the collection's background counts the nodes of every document by stem
    bg = collection_background(dm.retriever().view)
    assert bg.n_nodes == sum(d.n_nodes for d in dm.retriever().view.docs)
    assert bg.df["govern"] >= 20 and bg.df["quillfeather"] >= 1 and bg.df.get("the", 0) == 0


def test_a_word_no_contract_uses_is_the_askers_own_and_does_not_decline_a_typed_answer():
    """"stay in effect", "run", "stop" a renewal: no contract of the collection uses the word, so
    the named contract lacking it says nothing; a clause word other contracts use still counts,
    and so does a lay word of a question that asks for a description (a liability "cap")."""
    from collections import Counter

    from docmaster_core.text import answer_units as S

    wide = S.Background(5000, Counter({"notic": 500, "agre": 3000, "renew": 100, "insur": 60, "liability": 170,
                                       "day": 600, "distributor": 300, "stop": 2}))
    one = S.Background(200, Counter({"notic": 20, "agre": 150, "renew": 20, "liability": 4, "day": 30}), idf_from=wide)
    passage = ["Either party may prevent the renewal by giving sixty (60) days notice before the term ends."]
    p = S.profile_question("How many days of notice are needed to stop the agreement from renewing?")
    assert p.answer_type == "number" and "stop" in p.terms
    assert S.askers_words(p, one, passage) == ["stop"]
    v = S.verdict(p, one, passage)
    assert v.found and "stop" not in v.missing_terms
    # without a typed answer in the passages, or over a scope chosen by hand, the word counts
    assert S.askers_words(p, one, ["Either party may prevent the renewal by notice."]) == []
    assert S.askers_words(p, S.Background(one.n_nodes, one.df), passage) == []
    # a clause word the collection uses ("insurance") is no asker's word
    q = S.profile_question("How much insurance must the distributor carry, in dollars?")
    assert "insur" in q.terms and S.askers_words(q, one, ["The distributor shall pay $5,000 within thirty days."]) == [
        "dollar"]  # the asked unit is no contract's word here
    # a description question keeps its lay word: "cap" of liability is what it asks about
    c = S.profile_question("What is the liability cap in the agreement?")
    assert c.answer_type == "description" and S.askers_words(c, one, ["Liability is limited."]) == []


def test_now_is_no_topic_term():
    """"To whom should notices now be addressed?": the contract says "notices ... shall be addressed",
    never "now", and a question word it lacks must not decline the answer."""
    from docmaster_core.text import answer_units as S

    assert S.profile_question("To whom should notices for Glu Mobile now be addressed?").terms == [
        "notic", "glu", "mobil", "address"]


def test_a_name_beside_the_collection_asked_about_names_no_document(dm):
    """ "Which contracts mention Kestrelby?" asks every contract about Kestrelby: the plural
    after "which" is the collection, not a document named Kestrelby (a newcomer's "Which papers
    use Wikipedia?" was answered from the one paper whose abstract says Wikipedia)."""
    view = dm.retriever().view
    for q in ("Which contracts mention Kestrelby?", "Do any of these agreements name Kestrelby as a party?",
              "Which agreements are with Kestrelby?"):
        assert route_by_names(q, view) is None, q
    r = route_by_names("What is the term of the Kestrelby agreement?", view)  # a document named by its party
    assert r is not None and _files(dm, r.doc_ids) == ["dist-charlie.pdf"]


def test_the_parties_route_over_a_word_beside_agreement_that_another_file_name_holds(dm):
    """A question naming both parties routes to their contract even when the only word beside
    "agreement" ("golfwear") is held by another contract's file name alone (cuad-113 / cuad-156)."""
    view = dm.retriever().view
    r = route_by_names("What royalty does Pinecrest Golfers pay Rowan Ashby for the use of his name under the "
                       "golfwear agreement?", view)
    assert r is not None and _files(dm, r.doc_ids) == ["endorse-ashby.pdf"]
    assert {"Pinecrest", "Rowan", "Ashby"} <= set(r.names)
    # the word beside "agreement" still routes when no pair of names says otherwise
    r = route_by_names("What may be used under the golfwear use agreement?", view)
    assert r is not None and _files(dm, r.doc_ids) == ["golfwear-unlimited-use-agreement.pdf"]


def test_a_document_named_outside_the_scope_is_said_not_searched(dm):
    """The scope is the user's: a question naming a contract outside the chosen documents is
    answered from the chosen ones, and the result (and the CLI) says which document it names
    (a newcomer asked about a paper outside the filter's kept documents and never learned why
    the answer came from others)."""
    names = {d.file_name: d.doc_id for d in dm.documents()}
    q = "Which state's law governs the agreement between Quillfeather Instruments Inc. and Marrowgate Supply Ltd.?"
    res = dm.ask(q, docs=[names["dist-bravo.pdf"]], save=False)
    assert res.doc_ids == [names["dist-bravo.pdf"]] and res.doc_source == "given"
    assert res.named_outside == ["dist-alpha.pdf"] and res.to_dict()["named_outside"] == ["dist-alpha.pdf"]
    assert {c.file for c in res.answer.citations} <= {"dist-bravo.pdf"}
    # a named document inside the scope is routed to as before, and nothing is said to be outside
    inside = dm.ask(q, docs=[names["dist-alpha.pdf"], names["dist-bravo.pdf"]], save=False)
    assert inside.doc_source == "named" and inside.named_outside == []
    # a question that names nothing says nothing
    assert dm.ask("Which state's law governs the agreement?", docs=[names["dist-bravo.pdf"]],
                  save=False).named_outside == []


def test_the_chat_note_names_the_document_outside_the_scope():
    from ui.chat import narrowed_note

    msg = {"outcome": "answered", "n_scope": 4, "n_all": 15, "scope_label": "4 documents of filter run #3",
           "named_outside": ["1706.03762v7_attention-is-all-you-need.pdf"]}
    note = narrowed_note(msg)
    assert note and "1706.03762v7_attention-is-all-you-need.pdf" in note and "Search all 15 documents" in note
    assert narrowed_note({**msg, "named_outside": []}) is None  # answered from its scope: nothing to say


def test_the_not_found_note_counts_the_chosen_scope_a_name_narrowed():
    """A name inside a chosen scope of 3 (of 15) narrowed the search to 1 document: the note
    says 2 of the chosen scope and 12 outside it were not searched, not "the other 14"."""
    from ui.chat import narrowed_note

    msg = {"outcome": "not_found", "n_scope": 1, "n_all": 15, "n_chosen": 3,
           "scope_label": "1911.08265_muzero.pdf (named in the question)", "named_outside": []}
    note = narrowed_note(msg)
    assert note == ("Only 1911.08265_muzero.pdf (named in the question) was searched; the other 2 of the 3 documents "
                    "in the chosen scope were not, nor the 12 outside it.")
    # every document chosen: one count, as before
    assert narrowed_note({**msg, "n_chosen": 15}).endswith("the other 14 documents were not.")
    assert narrowed_note({**msg, "n_chosen": None}).endswith("the other 14 documents were not.")


def test_about_one_document_needs_the_evidence_to_concentrate_on_it():
    """One thing asked over unnamed documents: quoted from one document only when its passages
    dominate the evidence; a generic question over contracts (each has its own governing law)
    keeps several."""
    from docmaster_core.model import Evidence
    from docmaster_core.qa.ask import about_one_document

    def ev(docs):
        return [Evidence(f"E{i}", d, i, "semantic", 0.5, "text", page=1) for i, d in enumerate(docs)]

    q = "What batch size was used to train the DPR retriever?"
    assert about_one_document(q, ev(["dpr", "dpr", "rag", "dpr", "retro", "dpr", "dpr", "rag"]))
    assert not about_one_document(q, ev(["dpr", "rag", "retro", "w2v", "rag", "dpr", "x", "y"]))  # spread
    assert not about_one_document("What batch sizes do these papers use?", ev(["dpr"] * 6 + ["rag"] * 2))
    assert not about_one_document(q, ev(["dpr"] * 8))  # one document already


def test_a_generic_question_over_several_contracts_quotes_several(dm):
    res = dm.ask("Which state's law governs?", all_docs=True, save=False)
    assert res.doc_source == "all"
    assert len({c.doc_id for c in res.answer.citations}) > 1, res.answer.text


def test_a_forms_empty_label_is_no_answer_sentence():
    """"Supplier Name:" (its value in another cell) led an answer about an addendum's effective
    date (held-out set own 9); a label with its value, or a sentence ending in a colon, is kept."""
    from docmaster_core.text.words import is_empty_label

    assert is_empty_label("Supplier Name:") and is_empty_label("Addendum Effective Date: ")
    assert not is_empty_label("Addendum Effective Date: March 3, 2011")
    assert not is_empty_label("The Program Materials include the following components, each of which is licensed:")
    assert not is_empty_label("")


def test_a_tier_whose_range_holds_the_questions_number_answers():
    """"What royalty when net sales are $4,000,000?" over a royalty scale: the tier "$3,500,001 to
    $5,000,000" holds the number and answers; "$5,000,001 to $10,000,000" does not (a newcomer's
    answer quoted it); "greater than" and "up to" are ranges too."""
    from docmaster_core.text.answer_units import profile_question, range_holds, type_match

    p = profile_question("What royalty does Dr. Murray receive when net sales are $4,000,000 in 12 months?")
    right, wrong = "$3,500,001 to $5,000,000 | royalty: $250,000", "$5,000,001 to $10,000,000 | royalty: $350,000"
    assert range_holds(p, right) is True and range_holds(p, wrong) is False
    assert type_match(p, right) > type_match(p, wrong)
    assert range_holds(p, "greater than $1,000,000 | royalty: $2,500,000") is True
    assert range_holds(p, "up to $2,000,000 | royalty: $100,000") is False
    assert range_holds(p, "the royalty is paid each january.") is None  # no range: the other rules decide
    assert range_holds(profile_question("What royalty is paid on net sales?"), right) is None  # no number asked


def test_a_company_in_the_file_name_names_its_contract(dm):
    view = dm.retriever().view
    for q in ("Which state's law governs the Harbourline.com agreement?",
              "Which state's law governs Harbourline.com's agreement?"):
        r = route_by_names(q, view)
        assert r is not None and _files(dm, r.doc_ids) == ["ex10_harbourlinecominc-20001114_hosting-agreement.pdf"], q
    res = dm.ask("Which state's law governs the Harbourline.com agreement?", all_docs=True, save=False)
    assert res.doc_source == "named" and any("Delaware" in c.quote for c in res.answer.citations)


def test_a_follow_up_stays_with_the_document_named_before(dm):
    from docmaster_core.qa.names import refers_back

    assert refers_back("Can it be terminated early, and on what notice?")
    assert refers_back("What does this agreement say about assignment?")
    assert not refers_back("Which contracts can be terminated early?")
    assert not refers_back("What is the governing law?")
    first = dm.ask("What is the term of the agreement between Vantorian Foods and Kestrelby Wholesale?",
                   all_docs=True)
    assert first.doc_source == "named" and _files(dm, first.doc_ids) == ["dist-charlie.pdf"]
    assert dm.last_routed() == first.doc_ids
    res = dm.ask("Can it be terminated early, and on what notice?", all_docs=True, save=False,
                 follow=dm.last_routed())
    assert res.doc_source == "follow-up" and res.doc_ids == first.doc_ids
    assert res.to_dict()["scope"] == "dist-charlie.pdf (named earlier in the conversation)"
    assert res.answer.citations and {c.file for c in res.answer.citations} == {"dist-charlie.pdf"}
    assert any("thirty days" in c.quote for c in res.answer.citations)
    # without the earlier documents, or about the collection, the question keeps its whole scope
    assert dm.ask("Can it be terminated early, and on what notice?", all_docs=True, save=False).doc_source == "all"
    wide = dm.ask("Which contracts can be terminated without cause?", all_docs=True, save=False,
                  follow=first.doc_ids)
    assert wide.doc_source == "all"
    # a question that names another document goes by its own names
    other = dm.ask("Which state's law governs it, the agreement between Ostrander Robotics and Pelliton Trading?",
                   all_docs=True, save=False, follow=first.doc_ids)
    assert other.doc_source == "named" and _files(dm, other.doc_ids) == ["dist-bravo.pdf"]
    # ... and one naming a document outside the scope is no follow-up: it is said to be outside (a newcomer's
    # question about a paper the filter had dropped was answered from the one named before)
    names = {d.file_name: d.doc_id for d in dm.documents()}
    scope = [d for f, d in names.items() if f != "dist-bravo.pdf"]
    outside = dm.ask("Which state's law governs it, the agreement between Ostrander Robotics and Pelliton Trading?",
                     docs=scope, save=False, follow=first.doc_ids)
    assert outside.doc_source != "follow-up" and outside.named_outside == ["dist-bravo.pdf"]


def test_cli_follow_up_continues_with_the_last_named_contract(dm, monkeypatch, capsys):
    from docmaster_core import cli

    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", dm.embedder.name)
    assert cli.main(["ask", "What is the term of the Halloway Paper agreement?", "--workspace", str(dm.path),
                     "--all", "--json"]) == 0
    capsys.readouterr()
    rc = cli.main(["ask", "How long does it run?", "--workspace", str(dm.path), "--all", "--follow-up", "--json",
                   "--no-save"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    d = json.loads(out.out)
    assert d["doc_source"] == "follow-up" and d["scope"].startswith("dist-delta.pdf")
    assert any("48 months" in c["quote"] for c in d["answer"]["citations"])


def test_a_company_name_that_starts_with_a_number_names_its_contract(dm):
    """"... under its co-branding agreement with 4Sight?" routes to 4Sight Media's contract (cuad-001's
    "2TheMart" was no name candidate: a word with a digit counted only as a file name); an
    identifier such as "8K" or "GSM8K" still names nothing."""
    view = dm.retriever().view
    r = route_by_names("How long does the co-branding agreement with 4Sight last?", view)
    assert r is not None and _files(dm, r.doc_ids) == ["cobrand-larkspur.pdf"] and "4Sight" in r.names
    assert route_by_names("How many problems of GSM8K does the 8K model solve?", view) is None
