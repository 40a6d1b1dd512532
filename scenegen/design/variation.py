"""N diverse variants of a base scene graph, and the public ``design()`` entry point.

A variant keeps the task (objects the instruction names, their categories, placements,
states and goals) and varies everything else: the number and categories of
distractors, colours (within the category's colours unless the prompt fixed them),
size class and scale, per-instance shape parameters (``instance_seed``) and the table
(colour, size). Each variant carries several instructions: the prompt and paraphrases of it
(:mod:`scenegen.design.paraphrase`). A distractor never shares a category with an object the instruction
names (nor with a group word's categories: "sort the fruit" gets no fruit
distractor), so the instruction stays unambiguous. Randomness comes from a numpy
Generator seeded by SHA-256 of the base graph's content hash and the seed, so the same
base and seed give the same graphs on every run and machine.
"""

from __future__ import annotations

import copy
import hashlib

import numpy as np

from scenegen.catalog import Catalog, Category, load_catalog
from scenegen.design.paraphrase import DEFAULT_COUNT, MAX_COUNT, paraphrases
from scenegen.errors import ConfigError, PromptError
from scenegen.graph import SceneGraph

MAX_VARIANTS = 10_000
"""Most variants one call may ask for."""
MAX_DISTRACTORS = 30
"""Most distractors one variant may get."""
DEFAULT_CLUTTER = (1, 3)
"""Distractor count range (inclusive) when neither the prompt nor the caller sets one."""
SIZE_CLASSES = ("small", "medium", "large")
_ATTEMPTS_PER_VARIANT = 20


def _rng(base: SceneGraph, seed: int) -> np.random.Generator:
    digest = hashlib.sha256(f"{base.content_hash()}:{int(seed)}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


SCALE_LEVELS = 3
"""Scales drawn per size class. Geometry comes from a bounded pool (size class x scale level x
instance seed, at most 3 x 3 x 6 meshes per category) so that a warm asset cache covers new
variants and CoACD runs once per shape; colours vary freely (they do not change the mesh)."""
INSTANCE_POOL = 6
"""Instance seeds drawn per category (see SCALE_LEVELS)."""


def _forbidden(base: SceneGraph) -> set[str]:
    """Categories a distractor may not take: every object the task names, and reserved groups."""
    named = {o.category for o in base.objects() if o.role in ("target", "receptacle", "background")}
    return named | set(base.meta.get("reserved_categories", []))


def _pick_attrs(rng: np.random.Generator, cat: Catalog, category: Category, fixed: dict,
                avoid_colors: set[str], avoid_sizes: set[str]) -> dict:
    """Draw colour, size class, scale and instance seed, keeping attributes in ``fixed``."""
    out = dict(fixed)
    if "color" not in fixed:
        choices = [c for c in category.colors if c not in avoid_colors] or \
            [c for c in sorted(cat.colors) if c not in avoid_colors] or list(category.colors)
        out["color"] = choices[int(rng.integers(len(choices)))]
    if "size" not in fixed:
        sizes = [s for s in SIZE_CLASSES if s not in avoid_sizes and s in cat.size_classes] or \
            [s for s in SIZE_CLASSES if s in cat.size_classes]
        out["size"] = sizes[int(rng.integers(len(sizes)))]
    if "scale" not in fixed:
        lo, hi = cat.size_classes.get(out["size"], (0.0, 1.0))
        level = (int(rng.integers(SCALE_LEVELS)) + 0.5) / SCALE_LEVELS
        out["scale"] = round(lo + (hi - lo) * level, 4)
    if "instance_seed" not in fixed:
        out["instance_seed"] = int(rng.integers(INSTANCE_POOL))
    return out


def _vary_objects(g: SceneGraph, base: SceneGraph, cat: Catalog, rng: np.random.Generator) -> None:
    objs = base.objects()
    holders = {gl.object for gl in base.goals if gl.predicate in ("in", "on") and gl.object}
    fixed_keys = base.meta.get("fixed")
    if not isinstance(fixed_keys, dict):  # not from the rules parser: keep every attribute given
        fixed_keys = {o.id: list(o.attributes) for o in objs}
    for o in objs:
        keys = set(fixed_keys.get(o.id, []))
        fixed = {k: v for k, v in o.attributes.items() if k in keys}
        # Same-category siblings must not take a colour/size the prompt uses to single one out.
        sib = [s for s in objs if s.category == o.category and s.id != o.id]
        avoid_c = {s.attributes["color"] for s in sib if "color" in fixed_keys.get(s.id, [])
                   and "color" in s.attributes}
        avoid_s = {s.attributes["size"] for s in sib if "size" in fixed_keys.get(s.id, [])
                   and "size" in s.attributes}
        if o.id in holders:  # a receptacle (or the table) is not drawn small: things must fit
            avoid_s = avoid_s | {"small"}
        attrs = _pick_attrs(rng, cat, cat.get(o.category), fixed, avoid_c, avoid_s)
        for k, v in o.attributes.items():
            attrs.setdefault(k, v)
        g.g.nodes[o.id]["attributes"] = attrs


def _add_distractors(g: SceneGraph, cat: Catalog, rng: np.random.Generator, k: int,
                     forbidden: set[str]) -> None:
    support = g.support_id or "table"
    pool = [c for c in cat if c.name != support and c.name != "table" and c.name not in forbidden]
    if not pool or k <= 0:
        return
    weights = np.array([3.0 if c.graspable else 1.0 for c in pool])
    first = rng.choice(len(pool), size=min(k, len(pool)), replace=False, p=weights / weights.sum())
    rest = rng.choice(len(pool), size=k - len(first), replace=True, p=weights / weights.sum())
    for idx in [*first.tolist(), *rest.tolist()]:
        c = pool[idx]
        node = g.new_id(c.name)
        g.add_object(node, c.name, "distractor", attributes=_pick_attrs(rng, cat, c, {}, set(), set()))
        g.add_relation(node, "on", support)


def variants(base: SceneGraph, n: int, seed: int, catalog: Catalog | None = None,
             clutter: int | None = None, instructions: int = DEFAULT_COUNT, *,
             extra_clutter: int = 0) -> list[SceneGraph]:
    """Return ``n`` valid variants of ``base`` with distinct content hashes.

    Args:
        base: A valid base graph (e.g. from :func:`scenegen.design.rules.parse`).
        n: Number of variants (1..10000).
        seed: Seed; the same base and seed always give the same graphs.
        catalog: The object catalog (default: :func:`scenegen.catalog.load_catalog`).
        clutter: Distractors per variant; default ``base.meta["clutter"]``, else 1-3 at random.
        instructions: Instructions per variant, the prompt's own included (see
            :func:`scenegen.design.paraphrase.paraphrases`); 1 keeps the prompt alone.
        extra_clutter: Distractors added to each variant's count (from ``clutter``, the prompt or the
            random draw), at most :data:`MAX_DISTRACTORS` in all.

    Returns:
        ``n`` validated graphs; ``meta`` gains ``variant`` (index) and ``seed``; ``instructions``
        holds the prompt and its paraphrases.

    Raises:
        ConfigError: ``n`` or ``clutter`` is out of range.
        GraphError: the base graph is invalid.
        PromptError: fewer than ``n`` distinct variants could be drawn.

    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_VARIANTS:
        raise ConfigError(f"n must be an integer in 1..{MAX_VARIANTS}, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    if clutter is None:
        clutter = base.meta.get("clutter")
    if clutter is not None and (isinstance(clutter, bool) or not isinstance(clutter, (int, np.integer))
                                or not 0 <= clutter <= MAX_DISTRACTORS):
        raise ConfigError(f"clutter must be an integer in 0..{MAX_DISTRACTORS}, got {clutter!r}")
    if isinstance(extra_clutter, bool) or not isinstance(extra_clutter, (int, np.integer)) \
            or not 0 <= extra_clutter <= MAX_DISTRACTORS:
        raise ConfigError(f"extra_clutter must be an integer in 0..{MAX_DISTRACTORS}, got {extra_clutter!r}")
    if isinstance(instructions, bool) or not isinstance(instructions, (int, np.integer)) \
            or not 1 <= instructions <= MAX_COUNT:
        raise ConfigError(f"instructions must be an integer in 1..{MAX_COUNT}, got {instructions!r}")
    cat = catalog or load_catalog()
    base.check(cat)
    rng = _rng(base, seed)
    forbidden = _forbidden(base)
    out: list[SceneGraph] = []
    seen: set[str] = set()
    for _ in range(n * _ATTEMPTS_PER_VARIANT):
        if len(out) == n:
            break
        g = base.copy()
        _vary_objects(g, base, cat, rng)
        k = int(clutter) if clutter is not None else int(rng.integers(DEFAULT_CLUTTER[0], DEFAULT_CLUTTER[1] + 1))
        k = min(MAX_DISTRACTORS, k + int(extra_clutter))
        _add_distractors(g, cat, rng, k, forbidden)
        h = g.content_hash()
        if h in seen:
            continue
        g.check(cat)
        seen.add(h)
        g.instructions = paraphrases(g, rng, instructions, cat)
        g.meta = {**copy.deepcopy(base.meta), "variant": len(out), "seed": int(seed)}
        out.append(g)
    if len(out) < n:
        raise PromptError(f"only {len(out)} distinct variants could be drawn for this prompt; ask for fewer")
    return out
