"""Figure and table regions of one page: the driver that hands each caption to the
figure or table stage (the page environment they share is :mod:`.region_env`).

A region is the block of non-prose lines (and graphics) next to a caption; its lines
get ``role = "region"`` and the region becomes one item of ``PageInfo.items``.
"""
from __future__ import annotations

from collections import defaultdict

from ..base import clean_text, join_lines
from .common import Line, PageInfo, ParseContext, box_union
from .figures import figure_region, uncaptioned_images
from .region_env import RegionEnv
from .tables import caption_side, layout_tables, table_region, table_sides


def page_regions(ctx: ParseContext, doc, pno: int, p: PageInfo, imgs: list) -> tuple[int, float]:
    """Figure and table regions on one page (appended to ``p.items``); returns
    (``find_tables`` calls, seconds spent in them)."""

    env = RegionEnv(ctx, doc, pno, p, imgs)
    caps: dict[int, list[Line]] = defaultdict(list)
    for l in p.lines:
        if l.role == "caption":
            caps[l.group].append(l)
    boxes = {gid: box_union((l.x0, l.y0, l.x1, l.y1) for l in cl) for gid, cl in caps.items()}
    ranges = {gid: env.caption_range(caps, gid, boxes[gid]) for gid in caps}
    # where this page sets a table's caption (above or below it), from the captions with a table on one side only
    side = caption_side([table_sides(env, cl, boxes[gid], ranges[gid]) for gid, cl in caps.items()
                         if cl[0].heading_source == "table"])
    for gid, cl in sorted(caps.items()):
        cb = boxes[gid]
        rx0, rx1 = ranges[gid]
        caption = clean_text(join_lines([l.text for l in cl], ctx.vocabulary))
        if cl[0].heading_source == "table":
            table_region(env, gid, cl, cb, (rx0, rx1), caption, prefer=side)
        else:
            figure_region(env, gid, cl, cb, (rx0, rx1), caption)
    layout_tables(env)
    uncaptioned_images(env)
    # caption lines stay attached to their item
    for l in p.lines:
        if l.role == "caption":
            l.role = "caption-used"
    return env.n_calls, env.t_tables
