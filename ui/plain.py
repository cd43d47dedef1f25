"""Plain words for the Hyper-edge graph and Semantic clusters pages (issue 36).

The paper's names stay in the help text: a *hyper-edge* is shown as a "group" of
passages, a PC-KMeans *cluster* as a "topic", the SEC score (Eq. 1) as the "pair score";
the anchor pairs are "passage pairs checked" ("checked: same topic" / "different topics"),
the four sliders' labels say what they do (:data:`SLIDERS`). Every label says first what it
does for the user ("Number of topics", "checks the topics break"), the paper's symbols (K, k,
w, alpha, SEC Eq. 1, PC-KMeans Eq. 2, must-link / cannot-link) only in the help tooltips (a
colleague asked what "marked together", "marks broken", "SEC, Eq. 1" and "w" mean in practice,
and which slider to move for better topics). Both pages show the "checked: same topic" count
under the same label.
The pages import their labels from here, and the tests check the same strings. No
Streamlit import: the strings and formatters are plain Python.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "WHAT_GRAPH", "WHAT_CLUSTERS", "GROUP_RE", "TOPIC_RE",
    "group_label", "topic_label", "topic_words", "group_option", "mark_back_matter_topics",
    "GROUPS_LABEL", "GROUPS_HELP", "PASSAGES_LABEL", "PASSAGES_HELP", "TOPICS_LABEL", "TOPICS_HELP",
    "LINKS_LABEL", "LINKS_HELP",
    "GRAPH_LEGEND", "LINK_TITLE", "collection_topics_line",
    "GOOD_FOR_CLUSTERS", "SLIDERS", "BETTER_TOPICS", "SAME_LABEL", "SAME_HELP", "DIFFERENT_LABEL", "DIFFERENT_HELP",
    "NOT_FOLLOWED_LABEL", "NOT_FOLLOWED_HELP", "CHECKED_TITLE", "CHECKED_HELP", "CHECKED_COLUMNS",
    "CHECKED_COLUMN_HELP", "checked_pair_rows", "settings_line",
]

#: "What am I looking at?" of the Hyper-edge graph page (drawn by :func:`ui.layout.page_header`).
WHAT_GRAPH = ("One document as a map: grey boxes are its sections, each coloured box is "
              "a *group* of passages of one section that say the same thing, coloured by "
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
LINKS_LABEL = "linked groups"
LINKS_HELP = ("Groups that share their topic with a group of another section (the paper's must-links between "
              "hyper-edges; the red dashed lines of the graph). Every pair of such groups counts as a link: "
              "{links} links in all.")
GRAPH_LEGEND = ("**Legend** · grey box: a section · coloured box *G n*: group *n* of passages, coloured by its topic · "
                "● dot: one passage · grey line: a section to its subsections and groups · solid coloured line: a "
                "group to its passages · red dashed line: two groups of different sections on the same topic (in "
                "the whole-document view they run among the many solid lines; zoom in or show one section to "
                "follow them). Click a group to read it.")
LINK_TITLE = "same topic, different sections"


#: What the Semantic clusters page is good for, under its "What am I looking at?" line.
GOOD_FOR_CLUSTERS = ("**Good for:** finding the topics of one document, or of all your documents together, and which "
                     "passages belong to each: hover a dot to read its passage, click a topic in the legend to pick "
                     "out its passages.")
#: ``{setting: (label, help)}`` of the four sliders, in the order drawn: plain words first, the
#: paper's symbol in the help.
SLIDERS = {
    "K": ("Number of topics",
          "How many topics the passages are split into. The setting to move first for better topics: fewer for "
          "broader topics, more when a topic mixes different things. (The paper's K: PC-KMeans clusters, capped by "
          "the number of passages; some may stay empty.)"),
    "k": ("Pairs checked to guide the topics",
          "How many of each document's most alike passage pairs are checked, \"same topic or not?\", before the "
          "topics are formed: by the LLM (one request per document), or offline by how similar the two passages "
          "are. More checks: topics that follow those judgements more; 0: none. Over a whole collection the checks "
          "of all documents add up. (The paper's k: the top-k anchor pairs by SEC, Eq. 1, labelled must-link or "
          "cannot-link.)"),
    "w": ("How strictly topics follow the checks",
          "0: the checks are ignored, topics follow the passages' meaning only; higher: a pair checked \"same "
          "topic\" is split (or one checked \"different topics\" joined) only when their meaning says so strongly. "
          "Raise it when the count 'checks the topics break' is high. (The paper's w: the penalty of a violated "
          "must-link or cannot-link in PC-KMeans, Eq. 2.)"),
    "alpha": ("Which pairs to check: near in the document (0) or alike in meaning (1)",
              "1 picks the pairs that say the most similar things, wherever they are; 0 the pairs that sit closest "
              "together in the document's sections; in between, both count. (The paper's alpha in SEC, Eq. 1: "
              "alpha·cos − (1−alpha)·H_T/log2|V|; 0.6 in the paper.)"),
}
#: Which slider to move, said once under the sliders.
BETTER_TOPICS = ("Better topics: move *Number of topics* first (fewer: broader; more: finer). If passages that belong "
                 "together still land apart, check more pairs, then raise *How strictly topics follow the checks*.")
SAME_LABEL = "checked: same topic"
SAME_HELP = ("Passage pairs checked and found to be on the same topic: the topics keep each such pair together unless "
             "'How strictly topics follow the checks' lets their meaning outweigh the check. (Must-link anchor "
             "pairs: the top-k pairs by SEC, Eq. 1, labelled by the LLM.)")
DIFFERENT_LABEL = "checked: different topics"
DIFFERENT_HELP = ("Passage pairs checked and found to be on different topics: the topics keep each such pair apart "
                  "unless 'How strictly topics follow the checks' lets their meaning outweigh the check. (Cannot-link "
                  "anchor pairs.)")
NOT_FOLLOWED_LABEL = "checks the topics break"
NOT_FOLLOWED_HELP = ("Checked pairs the final topics disagree with: a pair checked 'same topic' split into two topics, "
                     "or one checked 'different topics' put in one. Raise 'How strictly topics follow the checks' to "
                     "follow more of them. (Violated must-link and cannot-link constraints, Eq. 2.)")
CHECKED_TITLE = "Passage pairs checked to guide the topics"
CHECKED_HELP = ("The paper's anchor pairs: the k pairs with the highest SEC score (Eq. 1: alpha·cos − "
                "(1−alpha)·H_T/log2|V|), labelled must-link (same topic) or cannot-link (different topics), the "
                "constraints of PC-KMeans (Eq. 2, penalty w per violated one).")
#: Columns of the checked-pairs table.
CHECKED_COLUMNS = ("passage a", "passage b", "pair score", "checked as", "now in one topic", "text a", "text b")
CHECKED_COLUMN_HELP = {
    "pair score": "How strongly the two passages are paired: alike in meaning and close in the document (SEC, Eq. 1: "
                  "alpha·cos − (1−alpha)·H_T/log2|V|).",
    "checked as": "What the check said: same topic (must-link) or different topics (cannot-link). The check judges the "
                  "two passages' meaning (offline: their embedding cosine, same topic from 0.44), not the pair score, "
                  "which also counts their distance in the document.",
    "now in one topic": "Whether the final topics put the two passages in one topic: it agrees with the check unless "
                        "the topics did not follow it.",
}


def checked_pair_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The anchor-pair rows of :func:`ui.indexing.anchor_rows` in the page's words
    (:data:`CHECKED_COLUMNS`): ``checked as`` is ``same topic`` (must-link) / ``different
    topics`` (cannot-link); other keys (``file``) stay first."""
    out = []
    for r in rows:
        extra = {k: v for k, v in r.items() if k not in ("node a", "node b", "SEC", "label", "same cluster",
                                                         "text a", "text b")}
        out.append({**extra, "passage a": f"#{r['node a']}", "passage b": f"#{r['node b']}", "pair score": r["SEC"],
                    "checked as": "same topic" if r["label"] == "must-link" else "different topics",
                    "now in one topic": r["same cluster"], "text a": r["text a"], "text b": r["text b"]})
    return out


def settings_line(params: Mapping[str, Any]) -> str:
    """The topic settings in the sliders' words (the Hyper-edge graph page's line); the paper's symbols
    (K, k, w, alpha) are in the sliders' help only."""
    return (f"Topic settings: {int(params['K'])} topics asked (some may stay empty), {int(params['k'])} pairs checked "
            f"per document, strictness {params['w']:g}, pairs alike in meaning {params['alpha']:g} (change them on the "
            "Semantic clusters page).")


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
    from .text import plural, shorten

    return f"{group_label(he_id)} · topic: {topic} · {plural(n_passages, 'passage')} · " + shorten(summary or "", width)


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
