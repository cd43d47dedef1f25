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

The page's words (slider labels, the checked pairs' labels) are in :mod:`ui.plain`: this
module imports Altair, which the Hyper-edge graph page does not need.
"""
from __future__ import annotations

import colorsys

import altair as alt
import pandas as pd

__all__ = ["PALETTE", "SVG_MAX_POINTS", "cluster_chart"]


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
