"""Paraphrases of a scene's instruction, from templates over its goals and objects.

A policy conditioned on language learns nothing from its instruction when every episode of a
task reads the same words. :func:`paraphrases` writes several instructions for one scene graph:
the original prompt first, then sentences drawn from templates that vary

- the verb (put, place, move, set, drop...) and the relation's words (in, into, inside; on,
  onto, on top of; to the left of, on the left side of; next to, beside...);
- the word order (``into the mug, put the spoon``; ``the spoon goes in the mug``; ``pick up the
  spoon and put it in the mug``; a polite form);
- the nouns (the category's catalog synonyms) and the mentions of colour and size.

Every object is named by a phrase that picks it out among the scene's objects: a colour or
size is mentioned only as the graph's attributes have it, and a phrase is used only when no
other object of the scene fits it (two blocks are told apart by their colours). Randomness
comes from the caller's generator, so the same graph and generator state give the same
sentences.
"""

from __future__ import annotations

import itertools

import numpy as np

from scenegen.catalog import Catalog, load_catalog
from scenegen.graph import Goal, ObjectNode, SceneGraph

DEFAULT_COUNT = 6
"""Instructions per scene, the original included."""
MAX_COUNT = 32
"""Most instructions a scene graph may hold."""

_VERBS = {"in": ("put", "place", "move", "drop", "set"), "on": ("put", "place", "set", "move")}
_VERBS_OTHER = ("put", "place", "move", "set")
_PREPS = {
    "in": ("in", "into", "inside"),
    "on": ("on", "onto", "on top of"),
    "left_of": ("to the left of", "left of", "on the left side of"),
    "right_of": ("to the right of", "right of", "on the right side of"),
    "in_front_of": ("in front of",),
    "behind": ("behind", "in back of"),
    "near": ("next to", "near", "beside", "close to"),
    "far_from": ("far from", "away from", "far away from"),
}
_STATES = {
    "upright": ("flip {s} upright", "turn {s} upright", "stand {s} up", "set {s} upright", "put {s} right side up"),
    "inverted": ("turn {s} upside down", "flip {s} over", "put {s} upside down"),
    "lying": ("lay {s} down", "lay {s} on its side", "tip {s} over"),
}
_SIZE_WORDS = {"small": ("small", "little"), "large": ("large", "big")}
_FORMS = ("{v} {s} {p} {o}", "{p} {o}, {v} {s}", "{s} {goes} {p} {o}", "pick up {s} and {v} {it} {p} {o}",
          "please {v} {s} {p} {o}", "can you {v} {s} {p} {o}?")


def _words(cat: Catalog, o: ObjectNode) -> list[str]:
    """Nouns for an object: its category's first two synonyms (the display name first)."""
    return list(cat.get(o.category).synonyms[:2]) if o.category in cat else [o.category.replace("_", " ")]


def _mentions(o: ObjectNode) -> list[tuple[str | None, str | None]]:
    """``(colour, size)`` mentions the object's attributes allow (None: not mentioned)."""
    color = o.attributes.get("color")
    size = o.attributes.get("size") if o.attributes.get("size") in _SIZE_WORDS else None
    colors = [None] + ([str(color).replace("_", " ")] if color else [])
    sizes = [None] + ([size] if size else [])
    return list(itertools.product(colors, sizes))


def _fits(o: ObjectNode, color: str | None, size: str | None) -> bool:
    if color is not None and str(o.attributes.get("color", "")).replace("_", " ") != color:
        return False
    return size is None or o.attributes.get("size") == size


def referring_phrases(graph: SceneGraph, node: str, catalog: Catalog | None = None) -> list[str]:
    """Noun phrases (``the red block``, ``the big yellow bowl``...) that pick ``node`` out among the scene's objects."""
    cat = catalog or load_catalog()
    o = graph.object(node)
    others = [x for x in graph.objects() if x.id != node and x.role != "support"]
    out = []
    for color, size in _mentions(o):
        if any(x.category == o.category and _fits(x, color, size) for x in others):
            continue  # another object of the category fits: the phrase would not pick this one out
        for noun in _words(cat, o):
            size_words = _SIZE_WORDS[size] if size else (None,)
            for sw in size_words:
                out.append(" ".join(w for w in ("the", sw, color, noun) if w))
    return out


def _clause(rng: np.random.Generator, goals: list[Goal], names: dict[str, list[str]], form: str | None) -> str:
    """One sentence for goals that share a predicate and an object (or one state goal)."""
    g = goals[0]
    pick = lambda opts: opts[int(rng.integers(len(opts)))]  # noqa: E731
    subjects = [pick(names[x.subject]) for x in goals]
    s = subjects[0] if len(subjects) == 1 else ", ".join(subjects[:-1]) + " and " + subjects[-1]
    if g.is_state:
        return pick(_STATES[g.predicate]).format(s=s)
    verb = pick(_VERBS.get(g.predicate, _VERBS_OTHER))
    form = form or pick(_FORMS)
    plural = len(goals) > 1
    return form.format(v=verb, s=s, p=pick(_PREPS[g.predicate]), o=pick(names[g.object]),
                       goes="go" if plural else "goes", it="them" if plural else "it")


def _groups(goals: list[Goal]) -> list[list[Goal]]:
    """Goals grouped by (predicate, object), in order of first appearance (state goals alone)."""
    out: dict[tuple, list[Goal]] = {}
    for i, g in enumerate(goals):
        key = (i,) if g.is_state else (g.predicate, g.object)
        out.setdefault(key, []).append(g)
    return list(out.values())


def paraphrases(graph: SceneGraph, rng: np.random.Generator, n: int = DEFAULT_COUNT,
                catalog: Catalog | None = None) -> list[str]:
    """Up to ``n`` distinct instructions for ``graph``: its own instruction first, then paraphrases of its goals.

    Args:
        graph: a valid scene graph (its objects' attributes are final: colours and sizes are mentioned).
        rng: the random generator the sentences are drawn with.
        n: instructions wanted, the original included (1..32).
        catalog: the object catalog (nouns).

    Returns:
        The instructions; fewer than ``n`` when the templates run out.

    """
    cat = catalog or load_catalog()
    n = max(1, min(int(n), MAX_COUNT))
    original = " ".join(graph.instruction.split())
    out = [original]
    seen = {original.lower().rstrip("?.!")}
    if not graph.goals:
        return out
    names = {}
    for node in {x for g in graph.goals for x in (g.subject, g.object) if x is not None}:
        names[node] = referring_phrases(graph, node, cat) or [f"the {graph.object(node).category.replace('_', ' ')}"]
    groups = _groups(graph.goals)
    for _ in range(20 * n):
        if len(out) >= n:
            break
        if len(groups) == 1:
            text = _clause(rng, groups[0], names, None)
        else:
            text = ", then ".join(_clause(rng, grp, names, _FORMS[0]) for grp in groups)
        key = text.lower().rstrip("?.!")
        if key not in seen:
            seen.add(key)
            out.append(text)
    return out
