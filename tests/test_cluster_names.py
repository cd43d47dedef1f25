"""Clusters named by their content (issue 36): class-based TF-IDF over the passages of each cluster."""
from __future__ import annotations

import re

import numpy as np
import pytest

from docmaster_core.index.cluster_names import cluster_names

TERMINATION = ["Either party may terminate this Agreement upon thirty days written notice.",
               "Termination for material breach requires written notice and a cure period.",
               "Upon termination the Distributor shall return all Products.",
               "The Agreement may be terminated by notice if the other party becomes insolvent."]
PAYMENT = ["The Distributor shall pay each invoice within thirty days of receipt.",
           "Late payment bears interest at one percent per month on the unpaid invoice.",
           "All payments are made in United States dollars by wire transfer.",
           "Prices exclude taxes; the Distributor pays all sales taxes on each invoice."]
CONFIDENTIAL = ["Each party keeps the Confidential Information of the other party secret.",
                "Confidential Information excludes information that is public.",
                "The receiving party may disclose Confidential Information only to its employees.",
                "The duty to protect Confidential Information survives for five years."]


def test_each_cluster_is_named_by_the_terms_it_does_not_share():
    texts = TERMINATION + PAYMENT + CONFIDENTIAL
    labels = [7] * 4 + [2] * 4 + [5] * 4
    names = cluster_names(texts, labels)
    assert set(names) == {7, 2, 5}
    assert names[5][0] in {"confidential", "information"}
    assert "invoice" in names[2] and "confidential" not in names[2]
    assert any(t.startswith("termin") or t == "notice" for t in names[7])
    # "party" and "distributor" occur in every cluster: never the first name of one
    assert all(n[0] not in {"party", "distributor", "agreement"} for n in names.values())


def test_noise_is_unnamed_and_bad_input_is_refused():
    names = cluster_names(TERMINATION + ["1 2 3"], [0, 0, 0, 0, -1])
    assert set(names) == {0}
    assert cluster_names(["", ""], [0, 1]) == {0: [], 1: []}
    with pytest.raises(ValueError):
        cluster_names(["a"], [0, 1])


def test_a_term_of_one_documents_passages_names_no_cluster():
    """Over a collection, the party of one contract ("Quillfeather", in both of its payment
    passages) would name the payment cluster; with the documents given, the words the
    contracts share do."""
    pay = ["Quillfeather bills Quillfeather customers by invoice each month.",
           "Quillfeather may charge Quillfeather interest on an unpaid invoice.",
           "The buyer shall pay each invoice in dollars by wire.",
           "Each invoice is payable without set-off."]
    texts = pay + TERMINATION
    labels = [0] * 4 + [1] * 4
    docs = ["alpha", "alpha", "bravo", "charlie"] + ["alpha", "bravo", "charlie", "delta"]
    assert "quillfeather" in cluster_names(texts, labels, n_terms=2)[0]
    named = cluster_names(texts, labels, n_terms=2, groups=docs)
    assert "quillfeather" not in named[0] and "invoice" in named[0]
    # one document's clusters (a document's own view) are named as before
    one = ["alpha"] * 8
    assert cluster_names(texts, labels, n_terms=2, groups=one) == cluster_names(texts, labels, n_terms=2)
    with pytest.raises(ValueError, match="document ids"):
        cluster_names(texts, labels, groups=docs[:3])


def test_representative_passages_are_the_closest_to_the_centre_not_the_first():
    from docmaster_core.index.cluster_names import representative_passages

    rng = np.random.default_rng(0)
    a, b = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]
    emb = np.stack([b * 0.2 + a,  # the first of cluster 0 in reading order leans to cluster 1's topic
                    *(a + 0.05 * rng.standard_normal(8) for _ in range(5)),
                    *(b + 0.05 * rng.standard_normal(8) for _ in range(4))]).astype(np.float32)
    labels = [0] * 6 + [1] * 4
    rep = representative_passages(emb, labels, n=3)
    assert set(rep) == {0, 1} and len(rep[0]) == 3 and len(rep[1]) == 3
    assert 0 not in rep[0] and set(rep[0]) <= set(range(1, 6)) and set(rep[1]) <= set(range(6, 10))
    unit = emb[:6] / np.linalg.norm(emb[:6], axis=1, keepdims=True)
    assert rep[0][0] == int(np.argmax(unit @ unit.mean(0)))  # the closest to the cluster's mean
    assert representative_passages(emb, [-1] * 10) == {}  # noise has no representatives
    with pytest.raises(ValueError):
        representative_passages(emb, labels[:5])


def test_names_are_readable_words_only():
    """A newcomer read "r𝐵𝑟, 𝑚𝑖𝑗, 𝑚new" (an equation's letters), "extra, according, takes"
    (generic words), "items, documents, ffl" (a ligature's remains) and "feedback, llms,
    https" (a URL's parts). None of these can name a topic now; content words and acronyms can."""
    from docmaster_core.index.cluster_names import terms_of

    maths = ["The update r𝐵𝑟 sets 𝑚𝑖𝑗 to 𝑚new for every message passing step.",
             "Each message 𝑚𝑖𝑗 passes along the edge; r𝐵𝑟 and 𝑚new are recomputed per message step."]
    generic = ["According to the extra takes, the method takes extra steps according to the schedule.",
               "The schedule takes extra steps, according to what is shown in the figure of the paper."]
    bullets = ["ffl Items are ranked; ffl documents are scored against the items of the query.",
               "ffl The documents and items are indexed; ffl each query retrieves documents."]
    urls = ["LLMs learn from human feedback, see https://github.com/org/repo and www.example.com for the code.",
            "Feedback from LLMs is collected as described at https://arxiv.org/abs/2203.02155 (doi:10.1/x)."]
    texts = maths + generic + bullets + urls
    names = cluster_names(texts, [0, 0, 1, 1, 2, 2, 3, 3], n_terms=5)
    bad = re.compile("[\U0001D400-\U0001D7FF]|^(https?|www|com|org|arxiv|doi|ffl|according|extra|takes|shown|"
                     "figure|paper)$")
    for c, words in names.items():
        assert words and not [w for w in words if bad.search(w)], (c, words)
    assert "message" in names[0] and "schedule" in names[1] and "documents" in names[2]
    assert "LLMs" in names[3] and "feedback" in names[3]  # an acronym stays, though it has no vowel, as written
    assert [t for t, _ in terms_of("Dr. Smith's GPT-4 and h100 x2 ﬁnd 2021a")] == ["smith", "gpt"]


def test_legal_function_words_and_cut_off_prefixes_name_no_topic():
    """A newcomer's contract topics read "parties, arbitration, thereof" and "items, future, pre": legal English's
    function words and a prefix a hyphen cut off say nothing; the clause's own words name the topic."""
    from docmaster_core.index.cluster_names import terms_of

    arbitration = ["Any dispute arising hereunder or in connection herewith shall be settled by arbitration thereof.",
                   "The arbitration shall be held pursuant to the rules of the tribunal; the award thereof is final.",
                   "Notwithstanding the foregoing, either party may seek arbitration of the dispute hereunder."]
    items = ["Pre-approved items ordered hereunder are shipped at the non-refundable price thereof.",
             "Future orders of pre-packaged items are shipped within ten days of the order therefor.",
             "Items not shipped are credited against future orders pursuant to the price list hereto."]
    names = cluster_names(arbitration + items, [0, 0, 0, 1, 1, 1], n_terms=5)
    bad = {"thereof", "hereunder", "herewith", "pursuant", "notwithstanding", "foregoing", "therefor", "hereto", "pre",
           "non"}
    assert "arbitration" in names[0] and "items" in names[1], names
    assert not [w for ws in names.values() for w in ws if w in bad], names
    assert [t for t, _ in terms_of("pre-approved non-refundable items thereof")] == ["approved", "refundable", "items"]


def test_an_abbreviation_is_named_as_the_passages_write_it():
    """"rofr, arrangement, region" and "acdbe, collateral, partner" (a newcomer's contract topics)
    read as typos: a term never written in lower case keeps its capitals when it has two or more;
    a capitalised word (a sentence's first, a defined "Territory") is named in lower case."""
    texts = ["The ROFR applies to any Stores in the Region under this arrangement.",
             "Franchisee may exercise the ROFR for each new Store in the Region within the arrangement.",
             "Territory means the area of the Stores; Territory rights are exclusive.",
             "The Territory may grow when new Stores open; Territory maps are in Exhibit B."]
    names = cluster_names(texts, [0, 0, 1, 1], n_terms=3)
    assert "ROFR" in names[0] and "rofr" not in names[0], names
    assert "territory" in names[1], names
    # a longer word set in capitals (an address block's "MEXICO") is no acronym
    shout = cluster_names(["ScanSource de MEXICO, incorporated in MEXICO City.",
                           "Notices to ScanSource de MEXICO go to MEXICO City."], [0, 0], n_terms=3)
    assert "mexico" in shout[0] and "ScanSource" in shout[0], shout


def test_a_one_passage_topic_of_names_is_named_by_its_section():
    """ "edward, lockhart, schmitt (1)", "london, college, gower (1)": an author line or an
    affiliation as a topic of its own. Named by its section when it has one, else "a list of names";
    a topic of several passages keeps its words (a contract's defined terms are capitalised too)."""
    body = ["The model predicts the reward and the value of each state from its hidden state.",
            "Planning with the learned model searches a tree of hidden states and rewards.",
            "The hidden state is trained so that predicted rewards match the observed rewards."]
    authors = "Edward Lockhart, Martin Schmitt and Julian Schrittwieser, University College London, Gower Street"
    texts = body + [authors]
    labels = [0, 0, 0, 1]
    assert cluster_names(texts, labels)[1] == ["a list of names"]
    got = cluster_names(texts, labels, sections=["2 Model", "2 Model", "3 Planning", "Acknowledgements"])
    assert got[1] == ["section “Acknowledgements”"] and "reward" in got[0][0] + got[0][1] + got[0][2]
    # no title: "a list of names"; a topic without any telling word takes its section too
    assert cluster_names(texts, labels, sections=["2 Model"] * 3 + [""])[1] == ["a list of names"]
    untold = cluster_names(body + ["1 2 3"], labels, sections=[""] * 3 + ["Schedule A"])
    assert untold[1] == ["section “Schedule A”"]
    # a one-passage topic of ordinary words keeps them
    one = body + ["The licensee pays royalties each quarter on the net sales of licensed products."]
    assert "licensee" in cluster_names(one, labels, sections=["x"] * 4)[1]
    with pytest.raises(ValueError, match="section titles"):
        cluster_names(texts, labels, sections=["x"])


def test_clusters_named_alike_each_get_a_word_of_their_own():
    """Two one-passage topics of names (a signature block, an author line) were both named
    "a list of names" in a newcomer's collection; each now adds a word of its own, as written
    ("Whitworth", "Ashby"), and clusters named differently keep their names."""
    from docmaster_core.index.cluster_names import NAMES_TOPIC

    texts = ["Kathy Whitworth Square Two Golf", "Rowan Ashby Pinecrest Golfers"] + TERMINATION + PAYMENT
    labels = [0, 1] + [2] * 4 + [3] * 4
    names = cluster_names(texts, labels)
    assert names[0][0] == NAMES_TOPIC == names[1][0]
    assert len(names[0]) == len(names[1]) == 2 and names[0] != names[1]
    assert {names[0][1], names[1][1]} <= {"Kathy", "Whitworth", "Square", "Two", "Golf", "Rowan", "Ashby",
                                          "Pinecrest", "Golfers"}
    assert names[2] == cluster_names(TERMINATION + PAYMENT, [2] * 4 + [3] * 4)[2]
