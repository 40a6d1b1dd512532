"""Geometry check: asset validity (files, size, mass, inertia) and scale plausibility."""

from __future__ import annotations

from typing import Any

import numpy as np

from qa.checks._common import join_failures
from qa.config import GeometryConfig, QAConfig
from qa.result import CheckResult
from scenegen.catalog import load_catalog
from scenegen.errors import CatalogError
from scenegen.scene import Scene

NAME = "geometry"


def _asset_problems(node: str, asset: Any, catalog: Any, cfg: GeometryConfig) -> tuple[list[str], dict]:
    out: list[str] = []
    ext = np.asarray(asset.extents, dtype=float)
    m: dict = {"category": asset.category, "extents": [round(float(x), 5) for x in ext], "mass": asset.mass}
    if cfg.check_files:
        rels = [asset.urdf, asset.visual, *asset.collision]
        missing = [r for r in rels if asset.path is None or not asset.file(r).is_file()]
        m["missing_files"] = missing
        if missing:
            out.append(f"missing files: {node} lacks {', '.join(missing[:3])}")
    try:
        cat = catalog.get(asset.category)
    except CatalogError:
        out.append(f"unknown category: {node} is a {asset.category!r}, not in the catalog")
        return out, m
    lo = np.asarray(cat.size_min) * (1 - cfg.size_tol)
    hi = np.asarray(cat.size_max) * (1 + cfg.size_tol)
    m["size_range"] = [list(cat.size_min), list(cat.size_max)]
    if not (np.all(np.isfinite(ext)) and np.all(ext >= lo) and np.all(ext <= hi)):
        out.append(f"implausible size: {node} ({cat.name}) is {ext[0]:.3f}x{ext[1]:.3f}x{ext[2]:.3f} m, outside "
                   f"{cat.size_min} .. {cat.size_max} +-{cfg.size_tol:.0%}")
    mlo, mhi = cat.mass_range[0] * (1 - cfg.mass_tol), cat.mass_range[1] * (1 + cfg.mass_tol)
    if not (np.isfinite(asset.mass) and mlo <= asset.mass <= mhi):
        out.append(f"implausible mass: {node} ({cat.name}) weighs {asset.mass:.3g} kg, outside "
                   f"{cat.mass_range[0]:g}..{cat.mass_range[1]:g} kg")
    inertia = np.asarray(asset.inertia, dtype=float)
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T)) if inertia.shape == (3, 3) and np.all(
        np.isfinite(inertia)) else np.array([np.nan] * 3)
    m["principal_inertia"] = [float(x) for x in eig]
    if not (np.all(np.isfinite(eig)) and eig.min() > 0):
        out.append(f"bad inertia: {node}'s inertia tensor is not positive definite (eigenvalues {eig})")
    elif eig.max() > (eig.sum() - eig.max()) * (1 + 1e-6):
        out.append(f"bad inertia: {node}'s principal moments {eig} break the triangle inequality")
    volume = float(asset.volume or 0.0)
    if volume > 0:
        density = asset.mass / volume
        m["density"] = density
        if not cfg.min_density <= density <= cfg.max_density:
            out.append(f"implausible density: {node} is {density:.0f} kg/m^3, outside "
                       f"{cfg.min_density:g}..{cfg.max_density:g}")
    return out, m


def _goal_fit(scene: Scene, assets: dict, cfg: GeometryConfig) -> tuple[list[str], list[dict]]:
    out: list[str] = []
    rows: list[dict] = []
    for goal in scene.graph.goals:
        if goal.predicate not in ("in", "on") or goal.object not in assets or goal.subject not in assets:
            continue
        s = sorted(assets[goal.subject].extents[:2])
        o = sorted(assets[goal.object].extents[:2])
        limit = cfg.in_fit_ratio * o[0] if goal.predicate == "in" else cfg.on_fit_ratio * o[1]
        ok = s[0] <= limit
        rows.append({"goal": f"{goal.subject} {goal.predicate} {goal.object}", "subject_narrow": s[0],
                     "limit": limit, "fits": ok})
        if not ok:
            out.append(f"does not fit: {goal.subject} (narrow side {s[0]:.3f} m) cannot go {goal.predicate} "
                       f"{goal.object} (limit {limit:.3f} m)")
    return out, rows


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Check every asset of the world (files, size range, mass range, inertia, density) and goal fit.

    Args:
        scene: the scene.
        world: its :class:`~scenegen.sim.world.World` (its ``assets`` are read; nothing is moved).
        cfg: QA settings (``cfg.geometry``).

    Returns:
        A :class:`CheckResult`; ``metrics["objects"]`` holds per-object measurements.

    """
    gc = cfg.geometry
    catalog = load_catalog()
    failures: list[str] = []
    per: dict[str, dict] = {}
    bad_nodes = set()
    for node in sorted(world.assets):
        probs, m = _asset_problems(node, world.assets[node], catalog, gc)
        m["ok"] = not probs
        per[node] = m
        if probs:
            bad_nodes.add(node)
        failures += probs
    fit_rows: list[dict] = []
    if gc.check_goal_fit:
        fit_fail, fit_rows = _goal_fit(scene, world.assets, gc)
        failures += fit_fail
    n = len(per) + len(fit_rows)
    good = len(per) - len(bad_nodes) + sum(r["fits"] for r in fit_rows)
    score = good / n if n else 1.0
    return CheckResult(NAME, not failures, score, join_failures(failures),
                       {"objects": per, "goal_fit": fit_rows})
