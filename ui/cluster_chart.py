"""The Semantic clusters page's scatter of passages, drawn with Vega-Lite (Altair).

Each point is a passage at its 2-D layout position (PCA or UMAP), coloured by its topic.
A topic keeps its colour across redraws: the colour is ``PALETTE[id % len(PALETTE)]`` of
the topic's stable id (:func:`~ui.cluster_colors.match_clusters`). Hovering a point shows
its topic, passage number, page, file (collection scope), section and text; clicking a
legend entry highlights that topic; the mouse wheel zooms and dragging pans.

Vega-Lite rather than Plotly: the page's first paint in a browser session was 1-2 s
shorter (Streamlit loads Plotly's 4.7 MB script on first use, Vega's ~0.8 MB;
docs/results/app.md). Up to :data:`SVG_MAX_POINTS` points the chart is drawn as SVG, so each
point is an element whose ``aria-label`` names its fields (what the browser tests read).

The page's words live here too: every label says first what it does for the user
("Number of topics", "checked: same topic", "checks the topics break"), the paper's symbols
(K, k, w, alpha, SEC Eq. 1, PC-KMeans Eq. 2, must-link / cannot-link) only in the help
tooltips (a colleague asked what "marked together", "marks broken", "SEC, Eq. 1" and "w"
mean in practice, and which slider to move for better topics). The Hyper-edge graph page
shows the same "checked: same topic" count, under the same label.
"""
from __future__ import annotations

import colorsys
from typing import Any, Iterable, Mapping

import altair as alt
import pandas as pd

__all__ = ["PALETTE", "SVG_MAX_POINTS", "cluster_chart", "GOOD_FOR_CLUSTERS", "SLIDERS", "BETTER_TOPICS",
           "SAME_LABEL", "SAME_HELP", "DIFFERENT_LABEL", "DIFFERENT_HELP", "NOT_FOLLOWED_LABEL", "NOT_FOLLOWED_HELP",
           "CHECKED_TITLE", "CHECKED_HELP", "CHECKED_COLUMNS", "CHECKED_COLUMN_HELP", "checked_pair_rows",
           "settings_line"]

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


def _palette() -> list[str]:
    """24 distinguishable colours: 8 hues 45 degrees apart, ordered so that neighbouring ids
    are far apart on the colour wheel, at three lightness levels (ids 0-7, 8-15, 16-23)."""
    hues = [0, 4, 2, 6, 1, 5, 3, 7]
    out = []
    for light in (0.42, 0.64, 0.28):
        for h in hues:
            r, g, b = colorsys.hls_to_rgb(h / 8.0, light, 0.75)
            out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return out


#: Most points drawn as SVG elements (each readable in the page); more are drawn on a canvas, as
#: Streamlit itself does past 2,000 (a collection's 12,000 passages as SVG elements would slow the page).
SVG_MAX_POINTS = 2000

#: Topic colours, indexed by a topic's stable id modulo its length.
PALETTE: list[str] = _palette()


def cluster_chart(frame: pd.DataFrame, topics: list[tuple[int, str]], title: str, show_file: bool,
                  height: int = 560) -> alt.Chart:
    """The scatter of passages coloured by topic.

    Args:
        frame: One row per passage with columns ``x``, ``y`` (float, layout coordinates,
            no unit), ``topic`` (str, the topic's shown name), ``node`` (int, passage
            number), ``page`` (int, 1-based), ``file``, ``section`` and ``passage`` (str,
            plain text: Vega's tooltip escapes HTML itself).
        topics: ``[(stable id, shown name)]`` in legend order; the id picks the colour.
        title: The chart's title.
        show_file: Whether the hover shows the file (collection scope).
        height: Chart height in CSS pixels.

    Returns:
        An Altair chart for ``st.altair_chart``.
    """
    names = [name for _, name in topics]
    colors = [PALETTE[i % len(PALETTE)] for i, _ in topics]
    picked = alt.selection_point(fields=["topic"], bind="legend")
    tips = [alt.Tooltip("topic:N", title="topic"), alt.Tooltip("node:Q", title="passage #"),
            alt.Tooltip("page:Q", title="page")]
    if show_file:
        tips.append(alt.Tooltip("file:N", title="file"))
    tips += [alt.Tooltip("section:N", title="section"), alt.Tooltip("passage:N", title="text")]
    return (
        alt.Chart(frame, title=alt.Title(title, fontSize=14, anchor="start"))
        .mark_circle(size=80, stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("x:Q", axis=None),
            y=alt.Y("y:Q", axis=None),
            color=alt.Color("topic:N", scale=alt.Scale(domain=names, range=colors),
                            legend=alt.Legend(title="Topic: its most telling words (passages)", labelLimit=420,
                                              titleLimit=420, symbolLimit=0)),
            opacity=alt.condition(picked, alt.value(0.85), alt.value(0.12)),
            tooltip=tips,
        )
        .add_params(picked)
        .properties(height=height, usermeta={"embedOptions": {"renderer": "svg" if len(frame) <= SVG_MAX_POINTS
                                                              else "canvas"}})
        .interactive()
    )




def settings_line(params: Mapping[str, Any]) -> str:
    """The topic settings in the sliders' words (the Hyper-edge graph page's line), the paper's symbols last."""
    return (f"Topic settings: {int(params['K'])} topics asked (some may stay empty), {int(params['k'])} pairs checked "
            f"per document, strictness {params['w']:g}, pairs alike in meaning {params['alpha']:g} (the paper's K, k, "
            "w, alpha; change them on the Semantic clusters page).")
