"""Stage "figures": figure regions next to "Figure N" captions (vector-graphics
clusters and raster images) and uncaptioned raster images."""
from __future__ import annotations

import math

import numpy as np

from ...model import NodeType
from ..base import clean_text
from .common import Line, overlap_x, box_union
from .region_env import Box, RegionEnv


def graphics_clusters(rects: list[tuple[float, float, float, float]], width: float, height: float,
                       cell: float = 4.0, pad: float = 3.0) -> list[tuple[float, float, float, float]]:
    """Cluster graphics rectangles (vector paths, images) by rasterising them onto a
    coarse grid (``cell`` points) and labelling connected components (scipy)."""
    if not rects:
        return []
    from scipy import ndimage

    gw = int(math.ceil(width / cell)) + 1
    gh = int(math.ceil(height / cell)) + 1
    grid = np.zeros((gh, gw), dtype=bool)
    for x0, y0, x1, y1 in rects:
        a = max(0, int((x0 - pad) / cell))
        b = min(gw, int((x1 + pad) / cell) + 1)
        c = max(0, int((y0 - pad) / cell))
        d = min(gh, int((y1 + pad) / cell) + 1)
        if a < b and c < d:
            grid[c:d, a:b] = True
    lab, n = ndimage.label(grid)
    out = []
    for sl in ndimage.find_objects(lab):
        if sl is None:
            continue
        ys, xs = sl
        out.append((xs.start * cell + pad, ys.start * cell + pad, xs.stop * cell - pad, ys.stop * cell - pad))
    return out




def figure_region(env: RegionEnv, gid: int, cl: list[Line], cb: Box, rng: tuple[float, float], caption: str) -> None:
    """The IMAGE item of the figure caption group ``gid``: graphics clusters above
    the caption (or below when none is above) and the lines in them; appended to
    ``env.p.items``."""
    p = env.p
    rx0, rx1 = rng
    big_imgs = env.big_imgs
    gboxes = [b for k, b in enumerate(big_imgs) if k not in env.consumed_imgs]
    dr = env.drawings()
    graphics = graphics_clusters(dr["graphics"] + list(gboxes), p.width, p.height) if (dr["graphics"] or gboxes) else []
    graphics = [g for g in graphics if (g[2] - g[0]) >= 20 and (g[3] - g[1]) >= 12]

    def near(direction: int) -> list[Box]:
        out = []
        for g in graphics:
            if overlap_x(g[0], g[2], rx0, rx1) < 0.3 * min(g[2] - g[0], rx1 - rx0):
                continue
            if direction < 0 and g[3] <= cb[1] + 4 and cb[1] - g[3] < 0.5 * p.height:
                out.append(g)
            if direction > 0 and g[1] >= cb[3] - 4 and g[1] - cb[3] < 0.5 * p.height:
                out.append(g)
        return out

    up_g = near(-1)
    down_g = near(1)
    direction = 1 if (not up_g and down_g) else -1
    gs = up_g if direction < 0 else down_g
    region_lines, stop = env.grow(cl, cb, rx0, rx1, direction, allow_prose_in=gs)
    gs = [g for g in gs if g[1] >= stop - 2] if direction < 0 else [g for g in gs if g[3] <= stop + 2]
    boxes = [(l.x0, l.y0, l.x1, l.y1) for l in region_lines] + gs
    for l in region_lines:
        l.role = "region"
    # lines fully inside the chosen graphics are figure text as well
    fig_text = [l.text for l in region_lines]
    for l in p.lines:
        if l.role in ("", "equation") and any(
            l.x0 >= g[0] - 2 and l.x1 <= g[2] + 2 and l.y0 >= g[1] - 2 and l.y1 <= g[3] + 2 for g in gs
        ):
            l.role = "region"
            fig_text.append(l.text)
    for k, b in enumerate(big_imgs):
        if any(b[0] >= g[0] - 4 and b[2] <= g[2] + 4 and b[1] >= g[1] - 4 and b[3] <= g[3] + 4 for g in gs):
            env.consumed_imgs.add(k)
    rb = box_union(boxes) if boxes else None
    kind = "raster" if any(k in env.consumed_imgs for k in range(len(big_imgs))) and rb else ("vector" if rb else "caption-only")
    p.items.append({
        "type": NodeType.IMAGE, "bbox": box_union([cb] + ([rb] if rb else [])), "text": caption, "caption_group": gid,
        "extra": {"caption": caption, "figure_bbox": list(rb) if rb else None,
                  "figure_text": clean_text(" ".join(fig_text))[:2000], "kind": kind},
    })


def uncaptioned_images(env: RegionEnv) -> None:
    """IMAGE items for raster images of a reasonable size (>= 40 pt a side) that no
    captioned region took; the lines inside them become figure text."""
    p = env.p
    for k, b in enumerate(env.big_imgs):
        if k in env.consumed_imgs:
            continue
        if (b[2] - b[0]) < 40 or (b[3] - b[1]) < 40:
            continue
        if any(it["bbox"][0] - 2 <= b[0] and b[2] <= it["bbox"][2] + 2 and it["bbox"][1] - 2 <= b[1] and b[3] <= it["bbox"][3] + 2
               for it in p.items):
            continue
        inside = [l for l in p.lines if l.role == "" and l.x0 >= b[0] - 1 and l.x1 <= b[2] + 1 and l.y0 >= b[1] - 1 and l.y1 <= b[3] + 1]
        for l in inside:
            l.role = "region"
        p.items.append({"type": NodeType.IMAGE, "bbox": b, "text": "", "caption_group": None,
                        "extra": {"caption": "", "figure_bbox": list(b),
                                  "figure_text": clean_text(" ".join(l.text for l in inside))[:2000], "kind": "raster"}})
