"""Scene graphs of one tier of a task family, drawn deterministically from the seed.

For each scene, a generator seeded by SHA-256 of (family, tier, seed, draw index) draws the
number of target kinds and targets in the tier's ranges, renders the family's template
("put the {targets} in the bin" -> "put the 3 bottles in the bin"), parses it with the rules
designer, draws each target's initial state from the tier's weights (a target drawn already in
its goal state, e.g. a mug already upright, keeps no goal and joins the scene as a background
object that must not be knocked over), and lets the variation sampler vary attributes and add the
tier's distractors. The same family, tier and seed give the same graphs on every run and machine.

:func:`design_run` is the pipeline's design step: the plain designer, or a family's tier when
the run's config sets ``tier``; it also applies the tier's layout margin to the config.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np

from scenegen.catalog import Catalog, load_catalog
from scenegen.design.families import TaskFamily, TierSpec, require_family
from scenegen.errors import FamilyError, PromptError
from scenegen.graph import SceneGraph

_DRAWS_PER_GRAPH = 20


def _rng(*parts: object) -> np.random.Generator:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def render_targets(kinds: list[tuple[str, int]], catalog: Catalog) -> str:
    """``[("hex_nut", 2), ("bolt", 1)]`` -> ``"2 hex nuts and 1 bolt"``; one object of one kind -> ``"bottle"``."""
    if len(kinds) == 1 and kinds[0][1] == 1:
        return catalog.get(kinds[0][0]).synonyms[0]
    words = []
    for name, k in kinds:
        c = catalog.get(name)
        words.append(f"{k} {c.plurals[0] if k > 1 else c.synonyms[0]}")
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def draw_kinds(family: TaskFamily, spec: TierSpec, rng: np.random.Generator) -> list[tuple[str, int]]:
    """Target categories (in the family's order) and how many of each, within the tier's ranges."""
    n_types = int(rng.integers(spec.types[0], spec.types[1] + 1))
    picked = sorted(rng.choice(len(family.targets), size=n_types, replace=False).tolist())
    total = int(rng.integers(max(spec.count[0], n_types), max(spec.count[1], n_types) + 1))
    counts = [1] * n_types
    for _ in range(total - n_types):
        counts[int(rng.integers(n_types))] += 1
    return [(family.targets[i], counts[j]) for j, i in enumerate(picked)]


def _draw_states(graph: SceneGraph, spec: TierSpec, rng: np.random.Generator, where: str) -> dict[str, str]:
    """Draw each target's initial state; a target drawn in its own goal state loses that goal (already done)."""
    names = [s for s, _ in spec.states]
    w = np.array([x for _, x in spec.states], dtype=float)
    targets = [o.id for o in graph.objects() if o.role == "target"]
    drawn = {t: names[int(rng.choice(len(names), p=w / w.sum()))] for t in targets}

    def done(t: str, state: str) -> bool:
        own = [g for g in graph.goals if g.subject == t]
        return bool(own) and all(g.is_state and g.predicate == state for g in own)

    if targets and all(done(t, drawn[t]) for t in targets):  # at least one target must have work left
        todo = [s for s in names if not done(targets[0], s)]
        if not todo:
            raise FamilyError(f"{where}: every state it allows already meets the goal, so no scene has a task; "
                              "add a state the goal changes (e.g. inverted)")
        drawn[targets[0]] = max(todo, key=lambda s: w[names.index(s)])
    for t in targets:
        graph.g.nodes[t]["state"] = drawn[t]
        if done(t, drawn[t]):
            graph.goals = [g for g in graph.goals if g.subject != t]
            graph.g.nodes[t]["role"] = "background"
    return drawn


def family_graphs(family: TaskFamily, tier: int, n: int, seed: int, catalog: Catalog | None = None, *,
                  extra_clutter: int = 0) -> list[SceneGraph]:
    """``n`` valid graphs with distinct hashes for tier ``tier`` of ``family``.

    Each graph's ``meta["family"]`` records the family, the tier and what was drawn (kinds,
    counts, states, distractors); ``extra_clutter`` distractors join the tier's own (a DR clutter knob).

    Raises:
        FamilyError: the family has no such tier, or the tier cannot make a task.
        PromptError: the rendered prompt does not parse, or too few distinct graphs could be drawn.

    """
    from scenegen.design.rules import parse
    from scenegen.design.variation import variants

    spec = family.tier(tier)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise FamilyError(f"n = {n!r} must be a positive integer")
    cat = catalog or load_catalog()
    where = f"{family.path or family.name}: tiers[{tier - 1}]"
    bases: dict[str, SceneGraph] = {}
    out: list[SceneGraph] = []
    seen: set[str] = set()
    for i in range(n * _DRAWS_PER_GRAPH):
        if len(out) == n:
            break
        rng = _rng("family", family.name, tier, int(seed), i)
        kinds = draw_kinds(family, spec, rng)
        prompt = family.template.replace("{targets}", render_targets(kinds, cat))
        if prompt not in bases:
            try:
                bases[prompt] = parse(prompt, cat)
            except PromptError as exc:
                raise PromptError(f"{where}: its prompt {prompt!r} does not parse ({exc.one_line()}); fix the "
                                  "family's template or targets") from None
        base = bases[prompt].copy()
        states = _draw_states(base, spec, rng, where)
        base.instruction = family.instruction or prompt
        clutter = int(rng.integers(spec.distractors[0], spec.distractors[1] + 1))
        base.meta["family"] = {"name": family.name, "tier": int(tier), "prompt": prompt,
                               "kinds": {k: c for k, c in kinds}, "states": states, "distractors": clutter}
        g = variants(base, 1, int(rng.integers(2**31)), catalog=cat, clutter=clutter,
                     extra_clutter=int(extra_clutter))[0]
        h = g.content_hash()
        if h in seen:
            continue
        seen.add(h)
        g.meta = {**g.meta, "variant": len(out), "seed": int(seed), "designer": "rules"}
        out.append(g)
    if len(out) < n:
        raise PromptError(f"{where}: only {len(out)} distinct scenes could be drawn of {n}; ask for fewer")
    return out


def design_run(prompt: str, n: int, seed: int, config: Any) -> tuple[list[SceneGraph], Any]:
    """The design step of a run: ``n`` graphs for ``prompt``, and the run's config with the tier applied.

    Without ``config.tier`` this is the configured designer, and the config is returned unchanged.
    With it, ``prompt`` must name a task family (its name, prompt or an alias): the graphs are the
    family's tier draws (plus the layout's ``extra_distractors``) and the config's layout margin
    becomes the tier's.

    Raises:
        FamilyError: ``prompt`` names no family, or the family has no such tier.
        PromptError: the prompt cannot be designed.

    """
    from scenegen.design.registry import design

    tier = getattr(config, "tier", None)
    if tier is None:
        lay = config.scene.layout  # its distractor knobs: the count without rewording the prompt
        return design(prompt, n, seed, designer=config.designer, clutter=lay.distractors,
                      extra_clutter=lay.extra_distractors), config
    family = require_family(prompt)
    spec = family.tier(tier)
    graphs = family_graphs(family, spec.tier, n, seed, extra_clutter=config.scene.layout.extra_distractors)
    layout = dataclasses.replace(config.scene.layout, margin=spec.margin)
    return graphs, dataclasses.replace(config, scene=dataclasses.replace(config.scene, layout=layout))
