"""Answers that cite the words that answer, and say so when the documents do not (issue 12).

A planted two-page paper (``pdf_factory.make_paper_pdf``: a results table on page 2,
"Full | 83.9"; a display equation in section 2.1) is ingested once per module with the
offline backend and the session's real embedder.
"""
from __future__ import annotations

import json
from collections import Counter

import pytest

from docmaster_core.config import LLMSettings
from docmaster_core.llm import OpenAILLM, make_llm
from docmaster_core.pipeline import DocMaster
from docmaster_core.evaluation import qa as qa_eval
from docmaster_core.qa.ask import ask
from docmaster_core.text.answer_units import profile_question, table_rows

try:
    from support.fake_openai_server import FakeOpenAIServer, user_text
    from support.pdf_factory import make_paper_pdf
except ImportError:  # tests imported as a package
    from tests.fake_openai_server import FakeOpenAIServer, user_text
    from tests.pdf_factory import make_paper_pdf

TABLE_Q = "What accuracy does the Full variant reach on the test set?"
ABSENT_Q = "How many kilowatt-hours of electricity did training the parser consume?"


@pytest.fixture(scope="module")
def paper(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("qa12")
    make_paper_pdf(root / "paper.pdf")
    dm = DocMaster(root / "ws", embedder=embedder)
    res = dm.ingest([root / "paper.pdf"])
    assert not getattr(res, "failed", None)
    return dm


def _ask(dm, q, **kw):
    return dm.ask(q, docs=["paper.pdf"], save=False, **kw)


# ------------------------------------------------------------------------------ units
def test_question_profile_and_table_rows():
    p = profile_question("What was the inference latency in milliseconds on a phone?")
    assert p.answer_type == "number" and p.units == ["millisecond"]
    assert profile_question(ABSENT_Q).units == ["kwh"]
    assert "latency" in p.terms and "what" not in p.terms
    assert profile_question("How is the attention output computed?").answer_type == "formula"
    assert profile_question("Which figure shows the model architecture?").answer_type == "caption"
    rows = table_rows([["Model", "Accuracy", "Speed"], ["Base", "71.2", "fast"], ["Full", "83.9", "slow"]])
    assert rows == ["Base | Accuracy: 71.2 | Speed: fast", "Full | Accuracy: 83.9 | Speed: slow"]


def test_how_often_how_old_and_how_long_did_it_take_ask_for_a_frequency_an_age_and_a_time():
    """A newcomer's "how often should the drip tray be cleaned" took a sentence with a number over "Clean drip
    tray daily", "how old was the pilot" narrative sentences over "Age: 67", and "how long did the sort take"
    "approximately 1 terabyte of data": a frequency answers without a number, an age and a length of time
    beat other numbers, and "how long did X take" has no other answer."""
    from docmaster_core.text.answer_units import type_match

    often = profile_question("In the coffee machine manual, how often should the drip tray be cleaned?")
    assert often.soft_units == ["frequency"] and not often.units
    assert type_match(often, "Clean drip tray daily") == 1.0 > type_match(often, "Remove the 2 screws of the tray")
    old = profile_question("According to the NTSB report, how old was the pilot?")
    assert old.soft_units == ["age"]
    assert type_match(old, "Single-engine Age: 67, Male") == 1.0 > type_match(old, "He had flown 55 minutes.")
    took = profile_question("How long did the MapReduce sort of one terabyte of data take?")
    assert took.units == ["duration"]
    # a size or a contract's term stays a soft duration: "up to 64KB", "until terminated" may answer them
    assert profile_question("How long is a Bigtable row key allowed to be?").units == []
    assert profile_question("How long does the franchise last?").units == []
    assert type_match(took, "Including startup overhead, the entire computation takes 891 seconds.") == 1.0 \
        > type_match(took, "The sort program sorts approximately 1 terabyte of data.")


def test_how_long_an_agreement_lasts_asks_for_its_term_and_an_end_date_answers():
    """A newcomer's "How long does the co-branding agreement between Snap and United Airlines last?" quoted a right of
    first refusal ("forty-five (45) days") and a 5-year confidentiality term, not "The Term shall commence on the date
    of this Agreement and ... shall end as of December 31, 2000.": a contract often states its Term by its end date,
    which answers "how long" as a length of time does."""
    from docmaster_core.text.answer_units import type_match

    p = profile_question("How long does the co-branding agreement between Snap and United Airlines last?")
    assert p.soft_units == ["duration"]
    end = "The Term shall commence on the date of this Agreement and shall end as of December 31, 2000."
    assert type_match(p, end) == 1.0 > type_match(p, "Sponsor paid $2,000 in 1999 for the pages.")
    assert type_match(p, "The license runs until March 31, 2008.") == 1.0


def test_a_how_many_question_is_answered_by_a_number_beside_the_counted_noun():
    """"How many datasets ...?" prefers "18 diverse datasets" to a sentence with another
    number; "how large is the retrieval database" prefers "a 2 trillion token database";
    a table row counts when the noun heads the cell ("#Database tokens: 4B")."""
    import numpy as np

    from docmaster_core.text.answer_units import rank_answer_units

    p = profile_question("How many datasets are included in the benchmark?")
    assert p.answer_type == "number" and p.counted == ["dataset"]
    assert profile_question("How large is the retrieval database Retro uses?").counted == ["databas"]
    assert profile_question("How many GPUs were used?").counted == ["gpus"]
    assert profile_question("What is the notice period?").counted == []
    # a verb the pattern does not list ("make up"): the first plural after "how many"; not "how many of"
    assert profile_question("How many datasets make up the BEIR benchmark?").counted == ["dataset"]
    assert profile_question("How many of the contracts renew automatically?").counted == []
    # the question proper after a scene-setting phrase: "Under the ... agreement, how much ..." asks for a number
    lead = "In Cargill's development agreement with Bioamber, how much does Bioamber pay up front?"
    assert profile_question(lead).answer_type == "number"
    assert profile_question("In this paper, what is the main idea?").answer_type == "description"
    # a headerless table column's "column 3:" label is no number beside "Dataset"
    from docmaster_core.text.answer_units import type_match

    p2 = profile_question("How many datasets make up the BEIR benchmark?")
    assert type_match(p2, "Task (↓) | column 2: Domain (↓) | column 3: Dataset (↓) Title", "TABLE") == 0.0
    assert type_match(p2, "We include 18 evaluation datasets.", "TEXT") == 1.0
    units = ["The benchmark datasets are included for 11 retrieval tasks.",
             "The benchmark includes 18 diverse datasets."]
    order = rank_answer_units("How many datasets are included in the benchmark?", units, ["TEXT", "TEXT"],
                              np.array([0.6, 0.6]))
    assert order[0] == 1
    order = rank_answer_units("How many datasets are included in the benchmark?", units[::-1], ["TEXT", "TEXT"],
                              np.array([0.6, 0.6]))
    assert order[0] == 0


def test_a_metric_question_asks_for_a_number_and_a_modifier_number_is_no_amount_to_compare():
    """Held-out paper questions: "What perplexity did Turing-NLG reach when trained with ZeRO-100B?" and "..., to what
    dimensionality are SIFT descriptors reduced" were read as asking for a description, and "an 8-core computer" made
    "in excess of 75,000 documents per hour" a range that must hold 8 (so it lost to "less than 150 documents")."""
    from docmaster_core.text.answer_units import range_holds, type_match

    assert profile_question("What perplexity did Turing-NLG reach when trained with ZeRO-100B?").answer_type == "number"
    assert profile_question("In the feature encoding evaluation, to what dimensionality are SIFT descriptors "
                            "reduced with PCA?").answer_type == "number"
    assert profile_question("What recall does the retriever reach?").answer_type == "number"
    # "the dollar cost" asks for an amount of money: a table of machine-days gives none
    assert profile_question("What was the dollar cost of the jobs run in August 2004?").units == ["dollar"]
    p = profile_question("What document throughput does the parallel LDA sampler reach on a single 8-core computer?")
    rate = "our implementation reaches a rate in excess of 75,000 documents per hour on a single 8-core computer"
    assert range_holds(p, rate.lower()) is None and type_match(p, rate) == 1.0
    assert range_holds(profile_question("What perplexity did GPT-2 reach?"), "over 300k iterations") is None
    # a length of time written with a hyphen is still a quantity a range may hold; an amount of money too
    assert range_holds(profile_question("Is a 5-year term allowed?"), "a term of up to 3 years") is False
    assert range_holds(profile_question("What royalty is due on net sales of $4,000,000?"),
                       "$3,500,001 to $5,000,000 | royalty: $250,000") is True


def test_a_question_for_a_named_measure_needs_a_passage_that_gives_it_with_a_number():
    """Held-out unanswerable paper questions ("What learning rate was used to train the U-Net ...?", "What RMSE did
    the item-based recommender reach?") were answered with passages about training or about similarity measures:
    a question for the value of a named measure is declined when no sentence writes the measure with a number;
    a table row that gives it under its column answers."""
    from docmaster_core.text.answer_units import Background, asked_measure, terms_of, verdict

    q = profile_question("What learning rate was used to train the U-Net with stochastic gradient descent?")
    assert asked_measure(q) == terms_of("learning rate")
    assert asked_measure(profile_question("What RMSE did the recommender reach on MovieLens?")) == terms_of("RMSE")
    assert asked_measure(profile_question("What is the royalty rate?")) == []  # a price, not a measure
    passages = ["3 Training. The U-Net is trained with stochastic gradient descent; the learning rate is not "
                "tuned. We use a high momentum (0.99).", "The network is trained on 30 images of 512x512 pixels."]
    bg = Background(10, Counter(t for p in passages for t in set(terms_of(p))))
    v = verdict(q, bg, passages)
    assert not v.found and "learning rate" in v.reason
    v = verdict(q, bg, passages + ["Training | learning rate: 0.01 | momentum: 0.99"])
    assert v.found, v.reason
    v = verdict(q, bg, passages + ["We train it with a learning rate of 1e-4 for 40 epochs."])
    assert v.found, v.reason
    # a value in words gives the measure too (newcomer 16: U-Net's "reduce the batch to a single image" was declined
    # as "no passage gives a value of "batch size""); "one of" is no value
    b = profile_question("What batch size was used to train the U-Net?")
    for value, found in (("hence reduce the batch to a single image", True), ("leave it at one of its defaults", False)):
        ps = passages + [f"We favor large input tiles over a large batch size and {value}."]
        v = verdict(b, Background(10, Counter(t for p in ps for t in set(terms_of(p)))), ps)
        assert v.found is found, (value, v.reason)


def test_a_sentence_whose_subject_is_a_pronoun_is_covered_and_quoted_with_the_one_before_it(embedder):
    """ "It achieved the new SOTA ... with Webtext-103 perplexity of 10.21." answers "What perplexity did Turing-NLG
    reach?" only with the sentence before it, which names Turing-NLG: it is ranked with that sentence's words and
    the answer quotes both; an impersonal "It is possible ..." refers to nothing."""
    import numpy as np

    from docmaster_core.llm.offline import OfflineLLM
    from docmaster_core.model import Evidence
    from docmaster_core.text.answer_units import rank_answer_units, refers_back

    q = "What perplexity did Turing-NLG reach when trained with ZeRO?"
    units = ["Turing-NLG was trained end-to-end using ZeRO on many GPUs.",
             "It achieved the new SOTA for language models with a perplexity of 10.21.",
             "Other models reach a perplexity of 12 after 300 steps."]
    assert refers_back(units, [0, 0, 0], 1) and not refers_back(units, [0, 1, 1], 1)
    assert not refers_back(["A.", "It is possible that it fails."], [0, 0], 1)
    order = rank_answer_units(q, units, ["TEXT"] * 3, np.array([0.5, 0.5, 0.5]), [0, 0, 0])
    assert list(order).index(1) < list(order).index(2)
    ev = Evidence(evidence_id="E1", doc_id="d", node_id=3, strategy="tree", score=0.5, page=1,
                  text=" ".join(units[:2]) + " The run ended in May.", section_path=["5 Results"])
    text = OfflineLLM(embedder, answer_max_sentences=1)._answer(q, [ev])["text"]
    assert "Turing-NLG was trained" in text and "10.21" in text


def test_a_bulleted_item_is_a_whole_sentence_and_a_broken_last_word_is_joined():
    """Held-out paper misses whose answering sentence was there but never quoted: "• Stagnation: we track ... no more
    than 20 000 iterations." (a bullet before the capital: taken for a cut piece of prose) and BERT's "Figure 2: ...
    The input embeddings are the sum of the token embeddings, the segmenta-" (the caption's last line parsed as the
    next paragraph, "tion embeddings and the position embeddings.")."""
    from docmaster_core.model import DocumentTree, Node, NodeType
    from docmaster_core.qa.answering import _with_neighbours
    from docmaster_core.text.words import is_cut_prose, is_whole_sentence

    assert is_whole_sentence("\u2022 Stagnation: we track the best fitness over no more than 20 000 iterations.")
    assert not is_cut_prose("\u2022 Stagnation: we track the best fitness over no more than 20 000 iterations.")
    assert not is_whole_sentence("\u2022 we track the best fitness.")
    # the clause that defines a formula's symbols is whole; a clause cut from a sentence is not
    assert is_whole_sentence("where T is a temperature that is normally set to 1.")
    assert not is_whole_sentence("where the company has its principal office.")
    cap = "Figure 2: BERT input representation. The input embeddings are the sum of the token embeddings, the segmenta-"
    nodes = [Node(0, NodeType.ROOT, 0, None, [1, 2, 3], "T", 1, 1),
             Node(1, NodeType.IMAGE, 1, 0, [], cap, 1, 1),
             Node(2, NodeType.TEXT, 1, 0, [], "tion embeddings and the position embeddings.", 1, 1),
             Node(3, NodeType.TEXT, 1, 0, [], "The NSP task is closely related to earlier work.", 1, 1)]
    tree = DocumentTree("d", "T", nodes)
    assert _with_neighbours(tree, 1, cap).endswith("the segmentation embeddings and the position embeddings.")
    assert _with_neighbours(tree, 2, nodes[2].content) == nodes[2].content  # no broken word: as it is


def test_a_section_reference_inside_a_sentence_does_not_end_it():
    from docmaster_core.text.words import split_sentences

    s = "We used a GMM with K = 256 components (Sect. 2.1) after reducing the descriptors to 80. Then Ch. 3 ends."
    assert split_sentences(s) == [s[:s.index(" Then")], "Then Ch. 3 ends."]


# ------------------------------------------------------------------------------ offline answers
def test_table_cell_is_cited_with_its_row_page_and_box(paper):
    res = _ask(paper, TABLE_Q)
    a = res.answer
    assert a.outcome == "answered" and res.to_dict()["outcome"] == "answered"
    first = a.citations[0]
    assert "83.9" in first.quote and "Full" in first.quote  # the cell with its row header
    assert first.page == 2 and first.file == "paper.pdf"
    assert first.bbox is not None and len(first.bbox) == 4 and first.bbox[0] < first.bbox[2]
    assert "3 Results" in " ".join(first.section_path)
    e1 = {e.evidence_id: e for e in res.evidence}[first.evidence_id]
    assert first.node_id == e1.node_id and first.quote in " ".join(e1.text.split())
    d = first.to_dict()
    assert d["supports"] is True and d["bbox"] == list(first.bbox)


def test_absent_answer_is_declined_plainly(paper):
    res = _ask(paper, ABSENT_Q)
    a = res.answer
    assert a.outcome == "not_found"
    assert a.text.startswith("The documents do not say")
    assert a.citations == []
    assert a.closest and all(not c.supports for c in a.closest)
    given = {e.evidence_id for e in res.evidence}
    assert {c.evidence_id for c in a.closest} <= given
    assert res.verdict["found"] is False and res.verdict["missing_terms"]


def test_a_reference_list_entry_answers_only_a_question_about_citations(paper):
    """A cited title is no statement of the paper: "In which journal did the study of document parsing appear?" is
    declined (only the reference list names a journal), while a question about what the paper cites is answered
    from the reference list (a newcomer's answer listed "[9] Y. Ke and R. Sukthankar. PCA-SIFT: ..." among its
    passages; a held-out question about an "NVIDIA H100", named only in a cited title, was answered)."""
    from docmaster_core.tree.roles import in_reference_list

    assert in_reference_list(["References"]) and in_reference_list(["7 Bibliography", "Books"])
    assert not in_reference_list(["Acknowledgements"]) and not in_reference_list(["3 Method", "3.1 References"])
    r = _ask(paper, "In which journal did the study of document parsing appear?")
    assert r.answer.outcome == "not_found"
    assert all(not in_reference_list(e.section_path) for e in r.evidence)
    r = _ask(paper, "Which study of document parsing does the paper cite?")
    assert r.answer.outcome == "answered"
    assert any(in_reference_list(e.section_path) and "Journal of Tests" in e.text for e in r.evidence)


def test_deep_two_section_question_uses_both_sections(paper):
    q = "How is the output of the linear layer computed, and which variant is the most accurate on the test set?"
    res = _ask(paper, q, deep=True)
    assert len(res.sub_queries) >= 2
    assert res.answer.outcome == "answered"
    tops = {e.section_path[0] for e in res.evidence if e.section_path}
    assert any(t.startswith("2") for t in tops) and any(t.startswith("3") for t in tops)
    assert {c.evidence_id for c in res.answer.citations} <= {e.evidence_id for e in res.evidence}


# ------------------------------------------------------------------------------ LLM path
def _llm(server) -> OpenAILLM:
    llm = make_llm(LLMSettings(backend="openai", model="gpt-4o-mini", base_url=server.base_url,
                               api_key="sk-test-0123456789", timeout=5.0, max_retries=0),
                   cache_dir=None, backoff_base=0.01, backoff_max=0.1, seed=0)
    assert isinstance(llm, OpenAILLM)
    return llm


def test_llm_not_found_reply_and_never_citing_passages_not_given(paper, embedder):
    dm = paper
    with FakeOpenAIServer() as server:
        server.enqueue(json.dumps({"answer": "The documents do not say how much electricity was used.",
                                   "found": False,
                                   "citations": [{"evidence_id": "E1", "quote": "nothing"},
                                                 {"evidence_id": "E99", "quote": "made up"}]}))
        llm = _llm(server)
        res = ask(dm.ws, embedder, llm, dm.settings.retrieval, ABSENT_Q, docs=["paper.pdf"],
                  retriever=dm.retriever(), save=False)
        # the prompt allows and the schema carries the "not found" outcome
        system = server.requests[0].messages[0]["content"]
        assert '"found"' in system and "do not say" in system
        assert "E1" in user_text(server.requests[0])
        a = res.answer
        assert a.outcome == "not_found" and a.citations == []
        assert [c.evidence_id for c in a.closest] == ["E1"] and not a.closest[0].supports
        assert all(c.evidence_id != "E99" for c in a.citations + a.closest)  # never a passage not given
        assert res.verdict["found"] is False  # the offline evidence agrees, recorded beside the LLM's outcome
        assert res.to_dict()["answer"]["outcome"] == "not_found"

        server.enqueue(json.dumps({"answer": "The Full variant reaches 83.9 [E1] [E42].", "found": True,
                                   "citations": [{"evidence_id": "E42", "quote": "invented"},
                                                 {"evidence_id": "E1", "quote": "not a verbatim quote"}]}))
        res = ask(dm.ws, embedder, llm, dm.settings.retrieval, TABLE_Q, docs=["paper.pdf"],
                  retriever=dm.retriever(), save=False)
        a = res.answer
        given = {e.evidence_id: e for e in res.evidence}
        assert a.outcome == "answered" and a.citations
        assert all(c.evidence_id in given for c in a.citations) and "E42" not in {c.evidence_id for c in a.citations}
        for c in a.citations:  # filled from the passage itself, quote verbatim from it
            e = given[c.evidence_id]
            assert (c.page, c.node_id) == (e.page, e.node_id)
            assert c.quote and c.quote in " ".join(e.text.split())


# ------------------------------------------------------------------------------ eval qa
def test_eval_qa_command_on_a_tiny_cases_file(paper, tmp_path, capsys):
    from docmaster_core.cli import main

    cases = tmp_path / "cases.tsv"
    cases.write_text("file\tquestion\tkind\tkey\tpages\tsplit\n"
                     f"paper.pdf\t{TABLE_Q}\ttable\t83. 9\t2\ta\n"
                     f"paper.pdf\t{ABSENT_Q}\tunanswerable\t\t\tb\n", encoding="utf-8")
    loaded = qa_eval.load_qa_cases(cases)
    assert [c.answerable for c in loaded] == [True, False] and loaded[0].pages == [2]
    w = str(paper.ws.path)
    assert main(["eval", "qa", "--workspace", w, "--cases", str(cases), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["by_kind"]["table"]["key_on_page"] == 1.0  # whitespace-insensitive key "83. 9"
    assert out["by_kind"]["unanswerable"]["decline"] == 1.0
    assert out["overall"]["false_decline"] == 0.0
    assert set(out["by_split"]) == {"a", "b"}
    assert main(["eval", "qa", "--workspace", w, "--cases", str(cases)]) == 0
    text = capsys.readouterr().out
    assert "key-on-page" in text and "unanswerable" in text
    assert main(["eval", "qa", "--workspace", w]) == 2
    bad = tmp_path / "bad.tsv"
    bad.write_text("file\tquestion\tkind\tkey\tpages\npaper.pdf\tQ?\tfact\t\t\n", encoding="utf-8")
    assert main(["eval", "qa", "--workspace", w, "--cases", str(bad)]) != 0


def test_key_match_is_case_and_whitespace_insensitive():
    assert qa_eval.key_match("Attention(Q, K, V)", "attention(Q,K,V ) = softmax")
    assert not qa_eval.key_match("", "anything")
    c = qa_eval.QACase("f.pdf", "q", "fact", "75.1", [6])
    res = {"answer": {"outcome": "answered", "citations": [{"evidence_id": "E1", "page": 6, "quote": "x"}]},
           "evidence": [{"evidence_id": "E1", "text": "OpenAI GPT | Average: 75.1"}]}
    assert qa_eval.score_case(c, res)["key_on_page"] is True
    res["answer"]["citations"][0]["page"] = 5
    assert qa_eval.score_case(c, res)["key_on_page"] is False


def test_the_verb_of_a_how_long_question_is_not_a_term_the_document_must_use():
    from docmaster_core.text.answer_units import Background, terms_of, verdict

    q = "How long does the distribution agreement last?"  # what is left once the names picked the contract
    assert "last" not in profile_question(q).terms
    assert "last" in profile_question("What is the last day of the term?").terms  # not a "how long" question
    passages = ["4. Term. This distribution agreement shall continue in force for a term of five (5) years from the "
                "Effective Date.", "6. Governing Law. This Agreement is governed by the laws of Ontario."]
    df = Counter(t for p in passages for t in set(terms_of(p)))
    bg = Background(len(passages), df)
    assert verdict(profile_question(q), bg, passages).found
    # the verb goes, the topic stays: a clause the document lacks is still not found
    unanswerable = "How long do the confidentiality obligations of the distribution agreement last?"
    assert not verdict(profile_question(unanswerable), bg, passages).found


def test_a_name_the_question_asks_about_that_no_document_uses_is_not_found():
    from docmaster_core.text.answer_units import Background, terms_of, verdict

    passages = ["25.1 This Agreement shall be governed by the laws of the State of California.",
                "14.3 Either party may terminate this Agreement upon ninety (90) days' written notice."]
    bg = Background(len(passages), Counter(t for p in passages for t in set(terms_of(p))))
    asked = verdict(profile_question("Which agreement is governed by Michigan law?"), bg, passages)
    assert not asked.found and "Michigan" in asked.reason  # the California clause is no answer
    assert verdict(profile_question("Which agreement is governed by California law?"), bg, passages).found
    # an abbreviation the document may spell out, and the question's first word, are no such names
    assert verdict(profile_question("Which agreement is governed by the law of the State (ST)?"), bg, passages).found
    # a name in capitals joined to a number ("CIFAR-10") is an identifier no document spells out
    papers = ["MoCo features evaluated by linear classification reach 60.6% accuracy on ImageNet.",
              "MoCo features are evaluated on 10 downstream tasks, with accuracy as the measure.",
              "We evaluate the features on ImageNet and on COCO detection."]
    bg = Background(len(papers), Counter(t for p in papers for t in set(terms_of(p))))
    cifar = verdict(profile_question("What accuracy does MoCo reach when evaluated on CIFAR-10?"), bg, papers)
    assert not cifar.found and "CIFAR" in cifar.reason
    assert verdict(profile_question("What accuracy does MoCo reach when evaluated on ImageNet?"), bg, papers).found


def test_place_identifier_and_counted_unit_questions_need_what_they_ask_for():
    """Held-out unanswerable questions answered anyway (docs/results/qa.md, thirteenth pass): "which
    state's law governs" over passages that name no place; an identifier written in capitals with a
    digit ("GSM8K") that the document never uses; "how many TPU hours" over passages giving no hours."""
    from docmaster_core.text.answer_units import Background, terms_of, verdict

    passages = ["Any use of the Confidential Information under this Business Affiliate Agreement will be done in "
                "accordance with its terms and the law governing such use.",
                "12. Governing Law. This Business Affiliate Agreement shall be governed by the laws of the State of Ohio.",
                "Step-Back Prompting improves the accuracy of PaLM-2L on MMLU Physics by 7%.",
                "Finetuning T5 XXL on the chain-of-thought data took 512 TPU v4 chips."]
    bg = Background(len(passages), Counter(t for p in passages for t in set(terms_of(p))))
    law = "Which state's law governs the business affiliate agreement?"
    assert verdict(profile_question(law), bg, passages[1:2]).found
    no_place = verdict(profile_question(law), bg, passages[:1])
    assert not no_place.found and "names a place" in no_place.reason
    assert verdict(profile_question("What accuracy does Step-Back Prompting with PaLM-2L reach on MMLU Physics?"),
                   bg, passages[2:3]).found
    gsm = verdict(profile_question("What accuracy does Step-Back Prompting with PaLM-2L reach on GSM8K?"), bg, passages[2:3])
    assert not gsm.found and "GSM8K" in gsm.reason
    assert profile_question("How many TPU hours did finetuning T5 XXL take?").units == ["hour"]
    hours = verdict(profile_question("How many TPU hours did finetuning T5 XXL on the chain-of-thought data take?"),
                    bg, passages[3:])
    assert not hours.found and "hour" in hours.reason
    assert verdict(profile_question("How many TPU chips did finetuning T5 XXL on the chain-of-thought data use?"),
                   bg, passages[3:]).found
    # "how many <noun>": the noun ends at its first plural, and a number must stand beside it
    assert profile_question("How many students took part in the user study?").counted == ["student"]
    study = ["A user study with 43 students at two universities shows that Raft is easier to understand.",
             "The largest strong student model is trained with weak supervision and its parameters are frozen."]
    bg = Background(len(study), Counter(t for p in study for t in set(terms_of(p))))
    assert verdict(profile_question("How many students took part in the user study?"), bg, study[:1]).found
    params = verdict(profile_question("How many parameters does the largest strong student model have?"), bg, study[1:])
    assert not params.found and 'number of "parameters"' in params.reason


def test_paraphrased_verb_forms_and_frame_verbs_do_not_decide_not_found():
    """Held-out contract questions declined for a word form (docs/results/qa.md, thirteenth pass): "paid"
    over a contract that writes "payments", "owe" over "owed", and "until what date does it run" over one
    that says "shall remain in effect until"; a clause the contract lacks is still not found."""
    from docmaster_core.text.answer_units import Background, terms_of, verdict

    assert terms_of("paid payments pays") == ["pay"] * 3 and terms_of("owed") == terms_of("owe")
    assert terms_of("held sold") == terms_of("hold sell") and terms_of("California") == ["california"]
    assert not {"if", "until", "after"} & set(profile_question("What is owed if it ends after the term?").terms)
    passages = ["4. Compensation. Berkshire shall make four (4) equal cash payments to Auriemma each Contract Year.",
                "2. Term. This Agreement shall remain in effect from the Effective Date until December 31, 2022."]
    bg = Background(len(passages), Counter(t for p in passages for t in set(terms_of(p))))
    assert verdict(profile_question("How is the cash compensation paid out to Auriemma?"), bg, passages[:1]).found
    until = profile_question("Until what date at the latest does the agreement run?")
    assert "run" in until.terms and verdict(until, bg, passages[1:]).found
    assert not verdict(profile_question("How much liability insurance must Berkshire carry?"), bg, passages).found
    # a number however written, "how soon", and "when does it expire" over "shall end as of"
    assert terms_of("$250,000.00 and 250,000 and 250000") == ["250000"] * 3 and terms_of("1.50 v2") == ["1.50", "v2"]
    fees = ["2.1 Bioamber shall pay Cargill Two Hundred Fifty Thousand U.S. Dollars ($250,000.00) within thirty (30) "
            "days of the execution of this Development Agreement.",
            "4.1 TERM. The Term shall commence on the date of this Agreement and shall end as of December 31, 2000."]
    bg = Background(len(fees), Counter(t for p in fees for t in set(terms_of(p))))
    assert "soon" not in profile_question("How soon must Bioamber pay Cargill the initial $250,000?").terms
    assert verdict(profile_question("How soon must Bioamber pay Cargill the initial $250,000?"), bg, fees[:1]).found
    assert verdict(profile_question("When does this Agreement expire?"), bg, fees[1:]).found


def test_a_name_the_documents_use_only_elsewhere_than_the_best_passages_is_not_found():
    """"What was Microsoft's total revenue?" over a 10-K that names Microsoft only among its
    competitors: the best passages (Amazon's own revenue) never mention Microsoft, so they do
    not answer; a capitalised word most nodes use ("Company" of a party's name) is no such name."""
    from docmaster_core.text.answer_units import Background, terms_of, verdict

    collection = ["Total net sales increased 9% to $514.0 billion in 2022.",
                  "Our competitors include Microsoft, Alphabet and Walmart.",
                  *[f"The Company shall report item {i} to the board." for i in range(200)]]
    bg = Background(len(collection), Counter(t for p in collection for t in set(terms_of(p))))
    best = collection[:1]  # what the search ranked first
    asked = verdict(profile_question("What was Microsoft's total revenue in 2022?"), bg, best)
    assert not asked.found and "Microsoft" in asked.reason
    assert verdict(profile_question("What were the total net sales in 2022?"), bg, best).found
    assert verdict(profile_question("What were the Company's total net sales in 2022?"), bg, best).found


def test_a_verb_or_adjective_the_contract_never_uses_is_the_askers_word_a_noun_is_not():
    """A held-out user's "how long are they *barred* from competing", "what do they *owe*", "can it
    be held *liable*": a word English uses only as a verb, an adjective or an adverb (LemmInflect)
    that the documents never use is the asker's paraphrase, not what is asked; a noun the contract
    lacks ("insurance") still says it has no such clause, and so does a verb the collection
    writes about widely ("terminate") that this contract never uses."""
    from docmaster_core.text.answer_units import Background, is_lay_word, terms_of, verdict

    assert [w for w in ("owe", "barred", "liable", "early", "competing", "terminate") if is_lay_word(w)] == [
        "owe", "barred", "liable", "early", "competing", "terminate"]
    assert not any(is_lay_word(w) for w in ("insurance", "penalty", "deal", "Owe", "covid19", "xqzzy", ""))
    contract = ["9.2 Non-Competition. For 2 (two) years from the end or expiry of the JSMA, neither party "
                "shall compete with the other in the Territory.",
                "6.1 Fees. Licensee shall pay a cancellation fee of Five Thousand Dollars ($5,000) per month if the "
                "Content is withdrawn before the end of the Term."]
    others = [f"{i}. Either party may terminate this Agreement upon thirty (30) days notice." for i in range(40)]
    coll = Background(len(contract) + len(others), Counter(t for p in contract + others for t in set(terms_of(p))))
    bg = Background(len(contract), Counter(t for p in contract for t in set(terms_of(p))), idf_from=coll)
    assert verdict(profile_question("How long are the parties barred from competing after it ends?"), bg,
                   contract).found
    assert verdict(profile_question("How much does the licensee owe if the content is withdrawn early?"), bg,
                   contract).found
    assert not verdict(profile_question("What insurance must the licensee carry?"), bg, contract).found
    # the asker's own words are left out of what is checked; "terminate" (40 of the collection's 42 passages
    # use it) is not one of them: this contract's silence on it still counts
    barred = verdict(profile_question("How long are the parties barred from competing after it ends?"), bg, contract)
    assert "barr" not in barred.missing_terms
    terminate = verdict(profile_question("How much notice does the licensee need to terminate?"), bg, contract)
    assert "terminat" in terminate.missing_terms


def test_question_frame_words_the_document_never_uses_do_not_decide_not_found():
    """"Which *types* of damages", "what *happens* if", "the *total* fee": words that frame or
    qualify what is asked are not the need; a contract that never uses them still answers, while a
    clause the contract lacks ("insurance") is still not found (held-out set own 9, docs/results/qa.md)."""
    from docmaster_core.text.answer_units import Background, terms_of, verdict

    assert "typ" not in profile_question("Which types of damages are excluded from liability?").terms
    assert not {"happen"} & set(profile_question("What happens to the agreement if it is assigned?").terms)
    passages = ["7.02 Limitation on Liability. Neither party shall have any liability for indirect, special, punitive "
                "or consequential damages, all of which are excluded.", "Fees: The Fees for the Project shall be $279,000.00, payable in three instalments.",
                "12. This Agreement shall automatically terminate in the event of its assignment."]
    bg = Background(len(passages), Counter(t for p in passages for t in set(terms_of(p))))
    for q in ("Which types of damages are excluded from liability?", "What is the total fee for the Project?",
              "What happens to the agreement if it is assigned?"):
        assert verdict(profile_question(q), bg, passages).found, q
    assert not verdict(profile_question("What insurance must the developer carry?"), bg, passages).found
    # a document that does use the qualifier still has it weighed: it is no stop word
    assert "total" in profile_question("What were the total net sales in 2022?").terms
    # the asker's name for the document itself ("their *deal*", "the *contract*") over an "Agreement" (own 12)
    for q in ("What is the fee of their deal?", "What is the fee under the contract?"):
        assert verdict(profile_question(q), bg, passages).found, q
    assert not verdict(profile_question("What insurance must the developer carry under the deal?"), bg, passages).found



def test_a_sentence_stating_a_bound_answers_a_question_asking_for_one():
    """"What is the *cap* on each party's damages?" over a contract that writes "LIABILITY FOR
    DAMAGES HEREUNDER SHALL NOT EXCEED $1,000,000" (own 17, VerticalNet / Neoforma): the sentence
    states the upper bound asked for, so the contract answers and that sentence ranks first; a
    bound on something else ("no appearance shall exceed ... two (2) hours" for a cap on
    liability) does not, and a contract with no bound on damages still says it has none. A lower
    bound ("the *minimum* insurance") is not asked for this way."""
    import numpy as np

    from docmaster_core.text.answer_units import Background, rank_answer_units, states_bound, terms_of, verdict

    cap = profile_question("What is the cap on each party's damages under the co-branding agreement?")
    assert (cap.bound, cap.bound_terms) == ("upper", ["cap"])
    assert profile_question("What is the most either side can owe the other?").bound == "upper"
    assert profile_question("What minimum insurance must each party carry?").bound == ""
    assert profile_question("What is the term of the agreement?").bound == ""
    # the quantity bounded: the head of the phrase after the bound word, or the noun before it
    assert cap.bounded == ["damag"]
    assert profile_question("What is the liability cap in the agreement?").bounded == ["liabl"]
    assert profile_question("What is the maximum annual purchase volume it may order?").bounded == ["volum"]
    assert profile_question("Is there a cap?").bounded == []
    assert states_bound("in no event more than $250,000", "upper")
    assert not states_bound("shall not be lower than RMB1 million", "upper")
    contract = ["15.3 Limitation of Liability. IN NO EVENT SHALL EITHER PARTY BE LIABLE FOR INDIRECT DAMAGES. EACH "
                "PARTY'S LIABILITY FOR DAMAGES HEREUNDER SHALL NOT EXCEED $1,000,000.",
                "11.1 Renewal. This Agreement renews each year unless a party notifies the other party at least "
                "sixty (60) days before the end of the term.",
                "12.4 Costs. Each party will bear its own attorneys' fees and damages awarded against it.",
                "This Co-Branding Agreement (the \"Agreement\") is made by and between the parties below."]
    bg = Background(len(contract), Counter(t for p in contract for t in set(terms_of(p))))
    v = verdict(cap, bg, contract)
    assert v.found and "cap" not in v.missing_terms
    units = ["IN NO EVENT SHALL EITHER PARTY BE LIABLE FOR INDIRECT DAMAGES.",
             "EACH PARTY'S LIABILITY FOR DAMAGES HEREUNDER SHALL NOT EXCEED $1,000,000.",
             "Each party will bear its own attorneys' fees and damages awarded against it."]
    order = rank_answer_units(cap.text, units, ["TEXT"] * 3, np.zeros(3))
    assert int(order[0]) == 1
    no_cap = contract[1:]
    bg2 = Background(len(no_cap), Counter(t for p in no_cap for t in set(terms_of(p))))
    assert "cap" in verdict(cap, bg2, no_cap).missing_terms
    # a bound on something else ("no appearance shall exceed ... two (2) hours") is no cap on liability
    liability = profile_question("Is there a cap on the bank's total liability?")
    hours = ["(d) No appearance shall exceed a total of two (2) hours.", "The bank's liability is set out below."]
    bg3 = Background(len(hours), Counter(t for p in hours for t in set(terms_of(p))))
    assert "cap" in verdict(liability, bg3, hours).missing_terms


def test_how_much_notice_is_answered_by_the_number_beside_notice():
    """"How much notice does the licensee need to terminate the agreement?" over the termination
    clause of a trademark licence (own 1, New Mountain Capital, cuad-101): the sentence giving
    "sixty (60) days' written notice by the Licensee" ranks before one giving "twenty-four (24)
    months following termination ... such other notice" (the number beside the noun whose amount
    is asked), and "terminable" covers "terminate" (an -able adjective shares its verb's stem)."""
    import numpy as np

    from docmaster_core.text.answer_units import beside_number, rank_answer_units, terms_of

    notice = profile_question("How much notice does the licensee need to terminate the agreement?")
    assert notice.amount_of == ["notic"] and notice.counted == []
    assert profile_question("How much at most can the distributor be liable for?").amount_of == []
    assert profile_question("How many units must the distributor buy?").amount_of == []
    assert terms_of("terminable") == terms_of("terminate") == terms_of("termination")
    assert terms_of("assignable") == terms_of("assign") and terms_of("liability") == terms_of("liable")
    assert terms_of("capable") != terms_of("cap")  # the verb must have 4+ letters
    # the asker's light verbs and prepositions are no terms to find ("go after", "goes through a change of control")
    terms = profile_question("If the licensee goes through a change of control, can the licensor go after it?").terms
    assert not {"goe", "go", "through"} & set(terms) and {"chang", "control", "licensor"} <= set(terms)
    assert "keep" in profile_question("What percentage of ad revenue does the publisher keep?").terms
    assert beside_number("upon written notice of thirty (30) days", ["notic"], of=True)
    assert not beside_number("upon written notice of thirty (30) days", ["notic"])
    units = ["For twenty-four (24) months following termination of this Agreement, the Licensee shall specify "
             "on all materials that it is no longer associated with the Licensor, or such other notice as the "
             "Licensor may deem necessary.",
             "This Agreement shall be terminable by the Licensee upon sixty (60) days' written notice by the "
             "Licensee to the Licensor.",
             "The license granted to the Licensee under this Agreement shall continue perpetually."]
    order = rank_answer_units(notice.text, units, ["TEXT"] * 3, np.full(3, 0.5))
    assert int(order[0]) == 1


def test_a_sentence_cut_at_a_node_break_is_quoted_whole_from_both_passages():
    """A clause the parser cut at a page break (own14, Kitov / Dexcel, cuad-079: "... or 5.3 in the
    event of a Change of Control, the Party which was not subject to the Change of Control may" |
    "terminate this Agreement upon six (6) months advance written notification.") is one answer
    sentence when both nodes are given, and each piece is cited from its own passage; pieces of
    nodes that do not follow each other, or a passage that ends its sentence, are left alone."""
    from docmaster_core.llm.offline import join_cut_sentences
    from docmaster_core.model import Evidence
    from docmaster_core.text.words import is_whole_sentence

    def ev(eid, node, text, doc="d1"):
        return Evidence(evidence_id=eid, doc_id=doc, node_id=node, strategy="semantic", score=0.5, text=text,
                        page=9, bbox=None, section_path=["5 Term and Termination"], node_type="TEXT")

    a = ("5.2 This Agreement may be terminated by either Party upon written notice; or 5.3 in the event of a Change "
         "of Control, the Party which was not subject to the Change of Control may")
    b = "terminate this Agreement upon six (6) months advance written notification."
    evidence = [ev("E1", 75, b), ev("E2", 74, a), ev("E3", 76, "The Parties shall meet once a year.")]
    units = ["5.2 This Agreement may be terminated by either Party upon written notice;",
             "or 5.3 in the event of a Change of Control, the Party which was not subject to the Change of Control may",
             b]
    owner = [1, 1, 0]  # passage order: E2's units, then E1's (joined in node order, whatever the passage order)
    got_units, got_owner, parts = join_cut_sentences(evidence, units[:2] + units[2:], owner)
    # E1 (node 75) follows E2 (node 74): E2's last unit and E1's first are one sentence
    assert got_units == [units[0], f"{units[1]} {b}"] and got_owner == [1, 1]
    assert parts == {1: [(1, units[1]), (0, b)]}
    assert is_whole_sentence(got_units[1]) and not is_whole_sentence(units[1])
    # a passage that ends its sentence, or nodes apart, are not joined
    assert join_cut_sentences(evidence, [units[0], b], [1, 0])[2] == {}
    far = [ev("E1", 80, b), ev("E2", 74, a)]
    assert join_cut_sentences(far, units[1:], [1, 0])[2] == {}


def test_clipped_words_numbered_words_and_ality_nouns_share_terms_with_the_full_words():
    """Held-out paper questions declined for words the document writes in full or joined to a
    number (papers9): "the JWT *spec*" over RFC 7519's "specification", "embedding
    *dimensionality*" over "16-dimensional user and item embedding"; and "confidentiality" is
    "confidential" (a contract's "Confidential Information")."""
    from docmaster_core.text.answer_units import terms_of

    assert terms_of("the JWT spec") == terms_of("the JWT specification")
    assert terms_of("promo") == terms_of("promotion") and terms_of("info") == terms_of("information")
    assert terms_of("dimensionality") == terms_of("dimensional") and "dimensional" in terms_of("16-dimensional")
    assert terms_of("confidentiality") == terms_of("confidential")
    assert terms_of("12-layer decoder")[:2] == ["12", "layer"] and terms_of("version 3.2.1") == ["version", "3.2.1"]


def test_how_large_is_not_declined_for_want_of_a_number_beside_its_noun():
    """"How large was one phase of the computation in C++?" over "approximately 3800 lines of C++
    code" (MapReduce, papers9) was declined "no passage gives a number of "phase""; only a "how
    many" question is declined that way ("how many parameters ...")."""
    from docmaster_core.text.answer_units import Background, terms_of, verdict

    passages = ["The indexing code is simpler: one phase of the computation dropped from approximately 3800 lines "
                "of C++ code to approximately 700 lines when expressed using MapReduce."]
    bg = Background(1, Counter(t for p in passages for t in set(terms_of(p))))
    large = profile_question("How large was one phase of the computation in C++ before the rewrite?")
    assert large.counted and verdict(large, bg, passages).found
    many = profile_question("How many phases of the computation were rewritten?")
    assert not verdict(many, bg, passages).found
