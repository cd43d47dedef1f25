"""Chat over a small collection of papers the test builds (issue 35, a newcomer's questions):
"the Attention paper" names the paper whose title begins with "Attention"; a question naming two
papers quotes both; "Which papers use BM25?" lists only papers that mention BM25. Real
all-MiniLM-L6-v2 embeddings, offline answerer."""
from __future__ import annotations

import pytest

from docmaster_core.pipeline import DocMaster
from docmaster_core.qa.names import route_by_names
from docmaster_core.text.terms import name_words
from support.toy import build_toy_workspace, file_names as _files

PAPERS = [
    ("attention.pdf", "Attention Is All You Need", [
        (None, ["Ashish Vaswani, Google Brain. We propose the Transformer, a network architecture based solely on "
                "Attention mechanisms."]),
        ("3.1 Encoder and Decoder Stacks", ["The encoder is composed of a stack of N = 6 identical layers.",
                                            "Each layer has two sub-layers: self-attention and a feed-forward network."]),
        ("5.2 Hardware and Schedule", ["We trained our models on one machine with 8 NVIDIA P100 GPUs."]),
    ]),
    ("bert.pdf", "BERT: Pre-training of Deep Bidirectional Transformers", [
        (None, ["Jacob Devlin, Google AI Language. BERT uses Multi-Head Attention in every layer of its encoder."]),
        ("3 BERT", ["BERT-Base has 12 layers and BERT-Large has 24 layers of Transformer blocks with Attention."]),
        ("4 Experiments", ["We compare BERT against a BM25 baseline on passage retrieval."]),
    ]),
    ("flash.pdf", "FlashAttention: Fast and Memory-Efficient Exact Attention", [
        (None, ["Tri Dao, Stanford. Attention is slow and memory-hungry on long sequences."]),
        ("3 Algorithm", ["FlashAttention tiles the attention computation so that it reads less GPU memory."]),
        ("5 Experiments", ["FlashAttention trains GPT-2 three times faster than the baseline implementation."]),
    ]),
    ("raptor.pdf", "RAPTOR: Recursive Abstractive Processing for Tree-Organized Retrieval", [
        (None, ["Parth Sarthi, Stanford. RAPTOR builds a tree of summaries for retrieval."]),
        ("3 Method", ["RAPTOR clusters text chunks with Gaussian mixtures, summarises each cluster and repeats, "
                      "building its retrieval index as a tree from the bottom up."]),
        ("4 Experiments", ["RAPTOR with SBERT retrieval is more accurate than with BM25 or DPR."]),
    ]),
    ("lightrag.pdf", "LightRAG: Simple and Fast Retrieval-Augmented Generation", [
        (None, ["Zirui Guo, University of Hong Kong. LightRAG indexes text with a graph for retrieval."]),
        ("3 Method", ["LightRAG extracts entities and relations from each chunk and builds its retrieval index as a "
                      "knowledge graph with key-value pairs.", "The graph index is updated incrementally."]),
        ("3.2 Graph-based Text Indexing", ["LightRAG builds its retrieval index from entities and relations.",
                                           "The retrieval index of LightRAG stores key-value pairs for each entity.",
                                           "LightRAG deduplicates the retrieval index to build a smaller graph."]),
        ("4 Experiments", ["LightRAG is compared with GraphRAG on four datasets."]),
    ]),
    ("raft.pdf", "In Search of an Understandable Consensus Algorithm", [
        (None, ["Diego Ongaro, Stanford University. Raft is a consensus algorithm for managing a replicated log."]),
        ("5.2 Leader election", ["Raft uses randomized election timeouts to elect a leader: a follower that hears "
                                 "from no leader becomes a candidate and asks the other servers for votes."]),
        ("5.6 Timing and availability", ["Raft will be able to elect and maintain a steady leader as long as the "
                                         "system satisfies the following timing requirement:",
                                         "broadcastTime << electionTimeout << MTBF",
                                         "Here broadcastTime is the average time a server takes to send RPCs."]),
    ]),
    ("dynamo.pdf", "Dynamo: Amazon's Highly Available Key-value Store", [
        (None, ["Giuseppe DeCandia, Amazon.com. Dynamo is a highly available key-value storage system."]),
        ("4 System Architecture", ["Dynamo is eventually consistent: updates reach all replicas asynchronously.",
                                   "Dynamo uses vector clocks to capture causality between versions."]),
    ]),
]


@pytest.fixture(scope="module")
def dm(tmp_path_factory, embedder):
    ws = build_toy_workspace(tmp_path_factory.mktemp("papers_named"), embedder, PAPERS)
    return DocMaster(ws, embedder=embedder)


def test_the_word_a_title_begins_with_names_the_paper(dm):
    view = dm.retriever().view
    q = "How many layers does the Transformer encoder have in the Attention paper?"
    r = route_by_names(q, view)
    assert r is not None and _files(dm, r.doc_ids) == ["attention.pdf"] and r.names == ["Attention"]
    res = dm.ask(q, all_docs=True, save=False)
    assert res.doc_source == "named" and {c.doc_id for c in res.answer.citations} == set(r.doc_ids)
    assert "N = 6" in res.answer.text and "12 layers" not in res.answer.text
    # a word two papers' opening text holds and no title begins with names nothing
    assert route_by_names("What does the Google paper propose?", view) is None


def test_a_question_naming_two_papers_quotes_both(dm):
    # three passages: LightRAG's many index passages would fill them all
    res = dm.ask("Compare how RAPTOR and LightRAG build their retrieval index.", all_docs=True, save=False, top_k=3)
    assert res.doc_source == "named"
    assert sorted(_files(dm, {c.doc_id for c in res.answer.citations})) == ["lightrag.pdf", "raptor.pdf"], \
        res.answer.text


def test_an_identifier_in_capitals_with_a_digit_is_a_name_a_question_asks_about():
    from docmaster_core.text.answer_units import question_names

    assert name_words("Which papers use BM25?", identifiers=True) == ["BM25"]
    assert name_words("Which models were trained on P100 GPUs?", identifiers=True) == ["P100", "GPUs"]
    assert name_words("Is the AGREEMENT governed by NY law?", identifiers=True) == []  # capitals alone: abbreviations
    assert question_names("Which papers use BM25?") == ["bm25"]
    # a condition's "of GPT-3 scale" names a size, not a model every match must mention (the filter's names)
    assert name_words("Is a model of GPT-3 scale used?") == []


def test_which_papers_use_a_named_method_lists_only_papers_that_mention_it(dm):
    res = dm.ask("Which papers use BM25?", all_docs=True, save=False)
    cited = set(_files(dm, {c.doc_id for c in res.answer.citations}))
    assert cited and cited <= {"bert.pdf", "raptor.pdf"}, res.answer.text


def test_a_paragraph_announcing_what_follows_comes_with_it(dm):
    res = dm.ask("What timing requirement must Raft satisfy to keep a steady leader?", all_docs=True, save=False)
    assert res.doc_source == "named"
    assert "timing requirement:" in res.answer.text and "broadcastTime << electionTimeout << MTBF" in res.answer.text, \
        res.answer.text


def test_a_not_found_answer_lists_passages_with_words_before_bare_numbers():
    from docmaster_core.model import Evidence
    from docmaster_core.qa.answering import Selection, not_found_answer
    from docmaster_core.text.answer_units import Verdict, profile_question

    def ev(i, text, kind="TEXT"):
        return Evidence(f"E{i}", "d1", i, "semantic", 1.0 - i / 10, text, 1, None, ["Results"], kind)

    evidence = [ev(1, "50.2 | 17.5: 26.4\n\n53.0 | 17.5: 32.1", "TABLE"), ev(2, "27.2 | column 2: 53.3", "TABLE"),
                ev(3, "Which country did Sokolovsko belong to from 1392 to 1525?"),
                ev(4, "The economy of the region grew after the war.")]
    q = "What is the GDP of France?"
    sel = Selection(evidence, Verdict(False, 'they never mention "GDP"', 0.0, 0.0, ["gdp"]), profile_question(q))
    ans = not_found_answer(q, sel, {"d1": "a.pdf"}, "offline", n_closest=2)
    assert [c.evidence_id for c in ans.closest] == ["E3", "E4"]
