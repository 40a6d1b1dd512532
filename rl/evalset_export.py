"""Export an eval set for a real bench: a table of object layouts and a top-down picture per configuration.

``layouts.csv`` has one row per object of every configuration: world position (m, robot base at
the origin, x away from the robot), the same relative to the table's centre, yaw and tilt
(degrees), state and size. ``topdown/<config>.png`` draws each object's footprint to scale on
the table with its id, and the robot base, on a 5 cm grid: what a person needs to lay the same
scene out by hand (or to project onto the table).
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

import numpy as np

from rl.evalset import EvalSet, load_evalset
from scenegen.errors import ConfigError
from scenegen.fileio import write_atomic

COLUMNS = ("config", "tier", "scene_id", "object", "category", "role", "state", "x", "y", "z", "x_table",
           "y_table", "yaw_deg", "tilt_deg", "size_x", "size_y", "size_z")
"""Columns of ``layouts.csv``."""
ROLE_COLORS = {"target": "#d62728", "receptacle": "#1f77b4", "distractor": "#7f7f7f"}


def layout_rows(es: EvalSet) -> list[dict]:
    """One row per object per configuration (see :data:`COLUMNS`)."""
    rows = []
    for c in es.configurations:
        cx, cy = c["table"]["center"][:2]
        for o in c["objects"]:
            x, y, z = o["position"]
            rows.append({"config": c["id"], "tier": c["tier"], "scene_id": c["scene_id"][:12], "object": o["id"],
                         "category": o["category"], "role": o["role"], "state": o["state"],
                         "x": round(x, 4), "y": round(y, 4), "z": round(z, 4), "x_table": round(x - cx, 4),
                         "y_table": round(y - cy, 4), "yaw_deg": round(o["yaw_deg"], 1),
                         "tilt_deg": round(o["tilt_deg"], 1), "size_x": o["extents"][0], "size_y": o["extents"][1],
                         "size_z": o["extents"][2]})
    return rows


def _footprint(o: dict) -> np.ndarray:
    hx, hy = o["extents"][0] / 2, o["extents"][1] / 2
    a = math.radians(o["yaw_deg"])
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    corners = np.array([[-hx, -hy], [hx, -hy], [hx, hy], [-hx, hy]]) @ rot.T
    return corners + np.asarray(o["position"][:2])


def topdown(conf: dict, path: str | os.PathLike, dpi: int = 100) -> None:
    """Draw one configuration from above, to scale (x up the page, away from the robot)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon, Rectangle

    cx, cy = conf["table"]["center"][:2]
    tx, ty = conf["table"]["extents"][:2]
    fig, ax = plt.subplots(figsize=(5, 5 * tx / max(ty, 1e-6) if ty else 5))
    # page coordinates: right = -y (the robot's right), up = +x (away from the robot)
    ax.add_patch(Rectangle((-(cy + ty / 2), cx - tx / 2), ty, tx, fc="#f3ead9", ec="#8c6d46", lw=1.5))
    for o in conf["objects"]:
        fp = _footprint(o)
        color = ROLE_COLORS.get(o["role"], "#2ca02c")
        ax.add_patch(Polygon(np.c_[-fp[:, 1], fp[:, 0]], closed=True, fc=color, alpha=0.45, ec=color, lw=1.2))
        x, y = o["position"][:2]
        ax.plot([-y], [x], "k+", ms=5)
        ax.annotate(f"{o['id']}\n{o['yaw_deg']:.0f} deg" + ("" if o["state"] == "upright" else f", {o['state']}"),
                    (-y, x), fontsize=6, ha="center", va="bottom", xytext=(0, 4), textcoords="offset points")
    bx, by = conf["robot"]["base"][:2]
    ax.plot([-by], [bx], marker="s", ms=10, color="black")
    ax.annotate("robot base", (-by, bx), fontsize=7, xytext=(8, 0), textcoords="offset points", va="center")
    lo_x, hi_x = min(bx, cx - tx / 2) - 0.05, cx + tx / 2 + 0.05
    ax.set_xlim(-(cy + ty / 2) - 0.05, -(cy - ty / 2) + 0.05)
    ax.set_ylim(lo_x, hi_x)
    ax.set_aspect("equal")
    ticks = np.arange(-2.0, 2.0001, 0.05)
    ax.set_xticks([t for t in ticks if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]], minor=True)
    ax.set_yticks([t for t in ticks if lo_x <= t <= hi_x], minor=True)
    ax.grid(which="minor", lw=0.3, alpha=0.5)
    ax.set_xlabel("-y (m): robot's right ->")
    ax.set_ylabel("x (m): away from the robot")
    ax.set_title(f"{conf['id']} (tier {conf['tier']}): {conf['instruction']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def export_layouts(evalset: EvalSet | str | os.PathLike, out: str | os.PathLike, pictures: bool = True) -> dict:
    """Write ``layouts.csv``, ``topdown/*.png`` and ``layouts.md`` for a (verified) set.

    Returns:
        ``{"rows", "pictures", "out"}``.

    Raises:
        ConfigError: the set changed since it was frozen.

    """
    es = evalset if isinstance(evalset, EvalSet) else load_evalset(evalset, verify_packs=False)
    root = Path(out)
    rows = layout_rows(es)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS)
    w.writeheader()
    w.writerows(rows)
    write_atomic(root / "layouts.csv", buf.getvalue(), error=ConfigError)
    md = [f"# Layouts of eval set {es.doc['name']} v{es.version} (`{es.content_hash[:16]}`)", "",
          "Positions in metres, robot base at the origin, x away from the robot; `x_table`/`y_table` from the "
          "table's centre. Yaw in degrees about the vertical.", ""]
    n_pics = 0
    for c in es.configurations:
        md.append(f"## {c['id']} (tier {c['tier']}, seed {c['seed']}): {c['instruction']}")
        if pictures:
            (root / "topdown").mkdir(parents=True, exist_ok=True)
            topdown(c, root / "topdown" / f"{c['id']}.png")
            n_pics += 1
            md.append(f"![{c['id']}](topdown/{c['id']}.png)")
        md.append("")
    write_atomic(root / "layouts.md", "\n".join(md), error=ConfigError)
    return {"rows": len(rows), "pictures": n_pics, "out": str(root)}
