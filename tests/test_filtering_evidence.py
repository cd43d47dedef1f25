"""Structure-aware filter evidence (issue: filter decisions that hold on new conditions):
section roles, condition parts, document-level signals and the best-fraction cut, on
collections the tests build (real all-MiniLM-L6-v2 embeddings)."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.config import RetrievalSettings
from docmaster_core.model import DocumentTree, Node, NodeType
from docmaster_core.filtering.decider import DEFAULT_CALIBRATION, OfflineCalibration, cut_threshold
from docmaster_core.filtering.evidence import condition_parts, lexical_parts, strip_question
from docmaster_core.filtering.run import run_filter
from docmaster_core.tree.roles import ROLES, empty_sections, heading_role, node_roles
from support.toy import TOY_DOCS, build_toy_workspace

GNN = ("gnn_molecules.pdf", "Message Passing Networks for Molecular Property Prediction", [
    (None, ["We propose a message-passing graph neural network that predicts quantum-chemical properties of molecules "
            "from their molecular graphs."]),
    ("1 Introduction", ["Predicting molecular properties such as atomization energy is central to drug discovery; "
                        "our graph neural network learns directly from atoms and bonds."]),
    ("2 Method", ["Each atom is a node and each bond an edge; messages are passed along bonds for six steps and a readout "
                  "predicts the molecular property."]),
    ("3 Experiments", ["On the QM9 benchmark of 134k molecules our network reaches chemical accuracy on 11 of 13 targets."]),
])
# mentions graph neural networks for molecules only in its related work: someone else's work
MENTION = ("subword_mt.pdf", "Subword Tokenization for Neural Machine Translation", [
    (None, ["We propose a byte-pair encoding tokenizer that improves translation of rare words."]),
    ("1 Introduction", ["Rare and unknown words limit neural machine translation systems."]),
    ("2 Related Work", ["Graph neural networks have been proposed to predict molecular properties from molecular graphs, "
                        "and message-passing networks predict quantum-chemical properties of molecules on QM9 [4, 5]. "
                        "Graph neural networks for molecules pass messages along bonds [6]."]),
    ("3 Method", ["Byte-pair encoding merges the most frequent pairs of characters into subword units."]),
    ("4 Experiments", ["On WMT English-German our subword model improves BLEU by 1.1 points over a word-level baseline."]),
])
BOTH = ("sparse_summ.pdf", "Sparse Attention for Long Document Summarization", [
    (None, ["We propose a sparse attention mechanism with local windows and global tokens, and evaluate it on "
            "long-document summarization."]),
    ("2 Method", ["Our sparse attention attends to a sliding window and a few global tokens, so its cost is linear in "
                  "the sequence length."]),
    ("3 Experiments", ["We evaluate on long-document summarization of arXiv and PubMed articles, where our model improves "
                       "ROUGE-L over full-attention baselines."]),
])
ONLY_METHOD = ("sparse_vision.pdf", "Sparse Attention for Image Recognition", [
    (None, ["We propose a sparse attention mechanism with local windows for vision transformers."]),
    ("2 Method", ["Each image patch attends to a sliding window of neighbouring patches, so the cost is linear."]),
    ("3 Experiments", ["We evaluate on image classification, where our sparse model improves top-1 accuracy on CIFAR-100."]),
])
ONLY_TASK = ("summ_analysis.pdf", "How Well Do Summarizers Handle Long Documents?", [
    (None, ["We analyse how existing abstractive summarizers perform on long-document summarization."]),
    ("2 Setup", ["We run published summarization systems without changes on arXiv and PubMed articles."]),
    ("3 Findings", ["Summarization quality measured by ROUGE-L drops sharply for documents longer than 4,000 words."]),
])
COMPOUND = "Does the paper propose a sparse attention mechanism and evaluate it on long-document summarization?"
GNN_COND = "Does the paper propose a graph neural network for predicting molecular properties?"


@pytest.fixture(scope="module")
def ws_extra(tmp_path_factory, embedder):
    docs = TOY_DOCS + [GNN, MENTION, BOTH, ONLY_METHOD, ONLY_TASK]
    return build_toy_workspace(tmp_path_factory.mktemp("docev"), embedder, docs)


def _run(ws, embedder, cond, **kw):
    return run_filter(ws, embedder, None, RetrievalSettings(), cond, save=False,
                      strategies=["tree", "semantic", "hyperedge", "combined", "flat"], **kw)


def _by_file(run):
    return {d.file_name: d for d in run.documents}


# ------------------------------------------------------------------------------ roles
@pytest.mark.parametrize("heading, role", [
    ("2 Related Work", "related"), ("Background", "related"), ("1 Introduction", "introduction"),
    ("Abstract", "abstract"), ("5 Experiments", "experiments"), ("IV. RESULTS", "experiments"),
    ("6 Conclusion and Future Work", "conclusion"), ("References", "back"), ("Appendix B", "appendix"),
    # spelt as the papers spell them (U-Net's "Acknowlegements" opened the graph on a 1-passage group)
    ("Acknowledgements", "back"), ("Acknowledgments", "back"), ("Acknowlegements", "back"),
    ("Important Safety Instructions", "safety"), ("Consolidated Statements of Income", "financial"),
    ("3.1 Model Architecture", "method"), ("3 Sparse JL transforms", None), ("", None),
    # a table of contents holds no evidence of the document's own; "4 Index" of a paper on indexing does
    ("Table of Contents", "back"), ("CONTENTS", "back"), ("INDEX", "back"), ("4 Index", None),
])
def test_heading_roles(heading, role):
    assert heading_role(heading) == role


def test_node_roles_follow_the_outermost_named_heading():
    nodes = [Node(0, NodeType.ROOT, 0, None, [1, 2, 3], "T", 1, 1),
             Node(1, NodeType.TEXT, 1, 0, [], "front text", 1, 1, section_path=[]),
             Node(2, NodeType.TITLE, 1, 0, [4, 5], "4 Experiments", 1, 1, section_path=["4 Experiments"], level=1),
             Node(3, NodeType.TITLE, 1, 0, [6], "5 Related Work", 1, 1, section_path=["5 Related Work"], level=1),
             Node(4, NodeType.TITLE, 2, 2, [], "4.1 Method comparison", 1, 1,
                  section_path=["4 Experiments", "4.1 Method comparison"], level=2),
             Node(5, NodeType.TEXT, 2, 2, [], "x", 1, 1, section_path=["4 Experiments"]),
             Node(6, NodeType.TEXT, 2, 3, [], "y", 1, 1, section_path=["5 Related Work"])]
    r = [ROLES[c] for c in node_roles(DocumentTree("d", "T", nodes))]
    assert r == ["front", "front", "experiments", "related", "experiments", "experiments", "related"]


def test_empty_sections_are_back_matter():
    """A 10-K's "Mine Safety Disclosures" > "Not applicable." kept the report as sure for "describes a safety
    incident" (a newcomer): a section whose only content says it has none, and a heading "[Reserved]", are
    ``back`` (weight 0); a section with one real paragraph beside "None." is not."""
    nodes = [Node(0, NodeType.ROOT, 0, None, [1, 3, 5, 6], "T", 1, 1),
             Node(1, NodeType.TITLE, 1, 0, [2], "Item 4. Mine Safety Disclosures", 1, 1,
                  section_path=["Item 4. Mine Safety Disclosures"], level=1),
             Node(2, NodeType.TEXT, 2, 1, [], "Not applicable.", 1, 1, section_path=["Item 4. Mine Safety Disclosures"]),
             Node(3, NodeType.TITLE, 1, 0, [4, 7], "Item 5. Legal Proceedings", 1, 1,
                  section_path=["Item 5. Legal Proceedings"], level=1),
             Node(4, NodeType.TEXT, 2, 3, [], "None.", 1, 1, section_path=["Item 5. Legal Proceedings"]),
             Node(5, NodeType.TITLE, 1, 0, [], "Section 5. [Reserved]", 1, 1, section_path=["Section 5. [Reserved]"],
                  level=1),
             Node(6, NodeType.TITLE, 1, 0, [], "6. None of the above", 1, 1, section_path=["6. None of the above"],
                  level=1),
             Node(7, NodeType.TEXT, 2, 3, [], "A suit was filed in 2021 over a safety incident.", 1, 1,
                  section_path=["Item 5. Legal Proceedings"])]
    tree = DocumentTree("d", "T", nodes)
    assert empty_sections(tree) == [1, 2, 5]
    assert [ROLES[c] for c in node_roles(tree)] == ["front", "back", "back", "body", "body", "back", "body", "body"]


# ------------------------------------------------------------------------------ parts
def test_condition_parts_split_compound_conditions_only():
    assert strip_question("Does the paper report results on ImageNet?") == "report results on ImageNet"
    assert condition_parts(COMPOUND) == ["propose a sparse attention mechanism", "evaluate it on long-document summarization"]
    assert condition_parts("Does the paper contain a theorem together with a proof?") == ["contain a theorem", "a proof"]
    # alternatives and examples are one part
    assert condition_parts("Does the paper study board games, such as chess, Go and shogi?") == [
        "study board games, such as chess, Go and shogi"]
    assert condition_parts("") == [""]
    # a part too short to carry lexical evidence of its own is not counted alone
    assert lexical_parts("Does the paper contain a theorem together with a proof?") == [["contain", "theorem", "together", "proof"]]
    assert len(lexical_parts(COMPOUND)) == 2


# ------------------------------------------------------------------------------ decisions
def test_related_work_mention_is_not_the_papers_own_contribution(ws_extra, embedder):
    run = _run(ws_extra, embedder, GNN_COND)
    by = _by_file(run)
    assert by["gnn_molecules.pdf"].decision("combined") is True
    assert by["subword_mt.pdf"].decision("combined") is False
    # counted like any other section, the same mention would pass: the discount is what separates them
    full = _by_file(_run(ws_extra, embedder, GNN_COND, calibration=OfflineCalibration(related_weight=1.0)))
    assert full["subword_mt.pdf"].decision("combined") is True
    assert (by["subword_mt.pdf"].decisions["combined"].evidence_score
            < full["subword_mt.pdf"].decisions["combined"].evidence_score)


def test_compound_condition_needs_both_parts(ws_extra, embedder):
    run = _run(ws_extra, embedder, COMPOUND)
    by = _by_file(run)
    comb = {f: d.decisions["combined"] for f, d in by.items()}
    assert comb["sparse_summ.pdf"].decision is True and comb["sparse_summ.pdf"].rank == 1
    assert comb["sparse_vision.pdf"].decision is False  # proposes the method, other task
    assert comb["summ_analysis.pdf"].decision is False  # the task, no method proposed


def test_every_run_ranks_and_reports_its_cut(ws_extra, embedder):
    run = _run(ws_extra, embedder, GNN_COND)
    n = len(run.documents)
    for s in run.strategies:
        ranks = sorted(d.decisions[s].rank for d in run.documents)
        assert ranks == list(range(1, n + 1)), s
        cut = run.cuts[s]
        kept = [d for d in run.documents if d.decision(s)]
        assert cut.kept == len(kept) and cut.of == n
        # the calibrated decisions are exactly the documents at or above the cut (and above the floor),
        # and they are the top of the ranking
        assert all(d.decisions[s].evidence_score >= cut.threshold for d in kept)
        assert sorted(d.decisions[s].rank for d in kept) == list(range(1, len(kept) + 1)), s
    js = run.to_dict()
    assert js["cuts"]["combined"]["threshold"] == pytest.approx(run.cuts["combined"].threshold, abs=1e-4)
    assert all(isinstance(d["decisions"]["combined"]["rank"], int) for d in js["documents"])


def test_best_fraction_cut():
    z = np.array([10.0, 6.0, 4.9, 1.0, 0.0])
    half = OfflineCalibration(rel_rho=0.5, rel_z_min=1.5)
    assert cut_threshold(z, half) == pytest.approx(5.0)  # 0.5 x the best
    assert cut_threshold(z) == pytest.approx(DEFAULT_CALIBRATION.rel_rho * 10.0)
    assert cut_threshold(np.array([2.0, 1.6, 0.0]), half) == pytest.approx(1.5)  # the minimum
    assert cut_threshold(z, OfflineCalibration(cut="zscore")) == DEFAULT_CALIBRATION.z_threshold
    # documents without evidence cannot set the best
    assert cut_threshold(z, half, present=np.array([False, True, True, True, True])) == pytest.approx(3.0)
    with pytest.raises(ValueError):
        OfflineCalibration(cut="gap")
    with pytest.raises(ValueError):
        OfflineCalibration(rel_rho=0.0)
