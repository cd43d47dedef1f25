"""Plain words for the Hyper-edge graph and Semantic clusters pages (issue 36).

The paper's names stay in the help text: a *hyper-edge* is shown as a "group" of
passages, a PC-KMeans *cluster* as a "topic", the SEC score (Eq. 1) as the "pair score";
the anchor pairs' words ("checked: same topic" / "different topics") are in
:mod:`ui.cluster_chart`.
The pages import their labels from here, and the tests check the same strings. No
Streamlit import: the strings and formatters are plain Python.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

__all__ = [
    "WHAT_GRAPH", "WHAT_CLUSTERS", "GROUP_RE", "TOPIC_RE",
    "group_label", "topic_label", "topic_words", "group_option", "mark_back_matter_topics",
    "GROUPS_LABEL", "GROUPS_HELP", "PASSAGES_LABEL", "PASSAGES_HELP", "TOPICS_LABEL", "TOPICS_HELP",
    "LINKS_LABEL", "LINKS_HELP",
    "GRAPH_LEGEND", "LINK_TITLE", "collection_topics_line",
]

#: "What am I looking at?" of the Hyper-edge graph page (drawn by :func:`ui.layout.page_header`).
WHAT_GRAPH = ("One document as a map: grey boxes are its sections, each coloured box is "
              "a *group* of passages of one section that say the same thing (the paper's hyper-edge), coloured by "
              "its *topic*; red dashed lines join groups of different sections on the same topic. Click a group to "
              "read its passages on the right.")
#: "What am I looking at?" of the Semantic clusters page.
WHAT_CLUSTERS = ("Every dot is a passage; passages that say similar things lie close "
                 "together. The colours are *topics*: passages grouped by what they say, each named by its most "
                 "telling words and its number of passages. The sliders change how the topics are formed.")

#: Parses the group number back from :func:`group_label` / :func:`group_option`.
GROUP_RE = re.compile(r"Group (\d+)\b")
#: Parses the topic number back from :func:`topic_label`.
TOPIC_RE = re.compile(r"Topic (\d+)\b")

GROUPS_LABEL = "groups of passages"
GROUPS_HELP = ("Passages of one section that belong together (the paper's hyper-edges, Sec. 2.3: the LLM groups "
               "each section's paragraphs; the offline backend groups neighbours by cosine).")
PASSAGES_LABEL = "passages"
PASSAGES_HELP = "Paragraphs of running text (the tree's TEXT nodes); headings, tables and figures are not grouped."
TOPICS_LABEL = "topics"
TOPICS_HELP = ("Groups of passages that say similar things, across sections (PC-KMeans clusters, Eq. 2; the "
               "'Number of topics (K)' slider on the Semantic clusters page asks for K of them; some may stay empty).")
LINKS_LABEL = "group links"
LINKS_HELP = ("Pairs of groups in different sections whose passages share a topic (the paper's must-links between "
              "hyper-edges; the red dashed lines of the graph).")
GRAPH_LEGEND = ("**Legend** · grey box: a section · coloured box *G n*: group *n* of passages, coloured by its topic · "
                "● dot: one passage · grey line: a section to its subsections and groups · solid coloured line: a "
                "group to its passages · red dashed line: two groups of different sections on the same topic (in "
                "the whole-document view they run among the many solid lines; zoom in or show one section to "
                "follow them). Click a group to read it.")
LINK_TITLE = "same topic, different sections (must-link between hyper-edges)"


def group_label(he_id: int) -> str:
    """``Group 26``: a hyper-edge in plain words."""
    return f"Group {int(he_id)}"


def topic_words(words: Sequence[str] | None, n: int = 3) -> str:
    """``termination, notice, terminate``, or ``no telling words``."""
    return ", ".join(list(words or [])[:n]) or "no telling words"


def topic_label(c: int, words: Sequence[str] | None = None, size: int | None = None) -> str:
    """``Topic 6 · termination, notice, terminate (41)``: a cluster in plain words (the
    number is what follows a topic across slider moves; ``size`` is its passages). A
    negative cluster (no passage with a topic) is ``no topic``."""
    if c < 0:
        return "no topic"
    return f"Topic {int(c)} · {topic_words(words)}" + (f" ({size})" if size is not None else "")


def mark_back_matter_topics(terms: Mapping[int, Sequence[str]], labels: Sequence[int],
                            section_paths: Sequence[Sequence[str]]) -> dict[int, list[str]]:
    """Topic names with "reference list" first for a topic whose passages lie mostly (at least
    half) in a reference list or acknowledgements (:data:`~docmaster_core.retrieval.corpus.BACK_MATTER_RE`):
    one paper's topics include its references ("lewis, aleksandra, piktus"), which say what
    the topic is only to a reader who knows that.

    Args:
        terms: ``{cluster: [term, ...]}`` (:meth:`DocMaster.name_clusters`).
        labels: Cluster of each passage, length n.
        section_paths: Section path of each passage, length n.

    Returns:
        A new ``{cluster: [term, ...]}``.
    """
    from docmaster_core.retrieval.corpus import BACK_MATTER_RE

    back: dict[int, list[int]] = {}
    for c, path in zip(labels, section_paths):
        n = back.setdefault(int(c), [0, 0])
        n[0] += int(any(BACK_MATTER_RE.match(t or "") for t in path))
        n[1] += 1
    out = {int(c): list(w or []) for c, w in terms.items()}
    for c, (k, n) in back.items():
        if n and 2 * k >= n:
            out[c] = ["reference list"] + [w for w in out.get(c, []) if w != "reference list"][:2]
    return out


def group_option(he_id: int, n_passages: int, topic: str, summary: str, width: int = 60) -> str:
    """A hyper-edge as a selectbox option: ``Group 26 · topic: termination, notice · 4
    passages · <summary>``."""
    from .text import shorten

    return f"{group_label(he_id)} · topic: {topic} · {n_passages} passages · " + shorten(summary or "", width)


def collection_topics_line(stats: Mapping[str, Any]) -> str:
    """What the collection's topics leave out and follow, from the collection index's stats
    (``boilerplate_left_out``, ``boilerplate_by_reason``, ``centered``)."""
    by = dict(stats.get("boilerplate_by_reason") or {})
    # counts of passages: "3303 reference lists" read as 3303 lists (a look at the 88-PDF collection)
    words = {"short": "short lines (signatures, titles)", "repeated": "repeated across documents",
             "front": "in cover pages and preambles", "back": "in reference lists and acknowledgements",
             "reference": "read as bibliography entries", "signature": "in signature blocks"}
    parts = [f"{n} {words.get(r, r)}" for r, n in by.items() if n]
    out = ("Passages left out of the topics: " + ", ".join(parts) + ". ") if parts else ""
    if float(stats.get("centered", 0) or 0) > 0:
        out += ("These documents are alike, so the topics follow what passages say inside them (clauses, sections) "
                "rather than what each document is about; the map places passages by their whole meaning, so one "
                "topic's dots can lie apart.")
    else:
        out += "The documents differ in subject, so the topics follow what the passages are about."
    return out
