"""Parsed clauses -> base SceneGraph: reference resolution, placements, goals and checks.

The :class:`Builder` walks the clauses of :mod:`scenegen.design.parser` in order. It
resolves noun phrases to graph nodes (a definite phrase such as "the bowl" reuses an
object named before, "a"/"another" or a count makes new ones, "it"/"them" mean the
previous step's objects), records initial placements (sources and relative clauses),
turns each verb into goals, then assembles and validates the graph. A goal that cannot hold
at any size the catalog allows ("put the plate in the cup") is refused here, with both
objects' sizes, instead of after minutes of failed layouts and QA.
"""

from __future__ import annotations

import networkx as nx

from scenegen.catalog import Catalog, Category
from scenegen.design import lexicon as lx
from scenegen.design.parser import NP, Clause
from scenegen.errors import PromptError
from scenegen.graph import SUPPORT_RELATIONS, Goal, SceneGraph
from scenegen.graph_schema import COMPARTMENTS, SLOT_NAMES

TABLE = "table"
_MOVE = ("move", "pick", "sort", "gather")
_OPPOSITE = {"left_of": "right_of", "right_of": "left_of", "in_front_of": "behind", "behind": "in_front_of",
             "near": "far_from", "far_from": "near"}
_ORIENT = ("flip", "turn", "invert", "stand", "lay", "topple")
IN_FIT = 1.0
"""An ``in`` goal needs the subject's narrow side at most this times the receptacle's narrow side
(the default of QA's ``GeometryConfig.in_fit_ratio``)."""
ON_FIT = 2.0
"""An ``on`` goal needs the subject's narrow side at most this times the support's wide side
(the default of QA's ``GeometryConfig.on_fit_ratio``)."""


def _a(noun: str) -> str:
    """Prefix the indefinite article: ``a banana``, ``an apple``."""
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _largest_side(c: Category, predicate: str) -> float:
    """The side a subject must fit at a category's largest size: narrow for ``in``, wide for ``on``."""
    return min(c.size_max[:2]) if predicate == "in" else max(c.size_max[:2])


class Builder:
    """Turns parsed clauses into a graph, resolving references as it goes."""

    def __init__(self, prompt: str, catalog: Catalog) -> None:
        self.cat = catalog
        self.sg = SceneGraph(" ".join(prompt.split()))
        self.sg.add_object(TABLE, TABLE, "support")
        self.fixed: dict[str, dict] = {}
        self.noun: dict[str, str] = {}
        self.parent: dict[str, tuple[str, str]] = {}
        self.extra: list[tuple[str, str, str]] = []
        self.state: dict[str, str] = {}
        self.goals: list[Goal] = []
        self.last: list[str] = []
        self.last_dest: list[str] = []
        self.pending: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.distractors: set[str] = set()
        self.reserved: set[str] = set()
        self.slots: dict[str, dict[str, str]] = {}
        """Receptacle with compartments -> category -> the compartment its parts are sorted into."""

    # ------------------------------------------------------------------ helpers
    def disp(self, node: str) -> str:
        """Display name of a node's category ("cutting board")."""
        return self.cat.get(self.sg.object(node).category).display

    def _new(self, category: str, attrs: dict) -> str:
        node = self.sg.new_id(category)
        self.sg.add_object(node, category, "background", attributes=dict(attrs))
        self.fixed[node] = dict(attrs)
        return node

    def _matches(self, np: NP) -> list[str]:
        """Objects a definite phrase can mean: same category, same fixed attributes, same noun.

        Nouns match when equal or when one ends the other ("mug" / "coffee mug"), so "the
        lime" after "the lemon" is a second object although both are lemons in the catalog.
        """
        def same_noun(a: str, b: str) -> bool:
            return not a or not b or a == b or a.endswith(" " + b) or b.endswith(" " + a)

        out = []
        for o in self.sg.objects():
            if o.category == np.category and o.id != TABLE and same_noun(np.noun, self.noun.get(o.id, "")):
                if all(self.fixed.get(o.id, {}).get(k) == v for k, v in np.attrs.items()):
                    out.append(o.id)
        return out

    def resolve(self, np: NP, ctx: str, plural_default: int = 2, exclude: tuple[str, ...] = (),
                current: tuple[str, ...] = ()) -> list[str]:
        """Map a phrase to node ids, creating objects the prompt introduces.

        A pronoun names the previous step's objects; as a destination it names the
        previous destination when the previous objects are the ones being moved.
        """
        if np.head == "pronoun":
            ids = self.last
            if ctx == "dest" and (not ids or set(ids) <= set(current)):
                ids = self.last_dest
            if not ids:
                raise PromptError(f"'{np.word}' does not refer to anything named before; name the object")
            return list(ids)
        if np.category == TABLE:
            for k, v in np.attrs.items():
                self.sg.set_attribute(TABLE, k, v)
                self.fixed.setdefault(TABLE, {})[k] = v
            return [TABLE]
        if np.head == "group":
            return self._group(np, np.count or (lx.GROUP_DEFAULT_COUNT if np.plural else 1), exclude)
        count = np.count or (3 if np.quant_all else plural_default if np.plural else 1)
        if not np.new and np.count is None:
            hits = self._matches(np)
            if len(hits) > 1 and not np.plural:
                raise PromptError(f"'{np.word}' is ambiguous: {len(hits)} {self.cat.get(np.category).plurals[0]} "
                                  "are named; tell them apart by colour or size")
            if hits:
                self._where(np, hits)
                return hits
        ids = [self._new(np.category, np.attrs) for _ in range(count)]
        for i in ids:
            self.noun[i] = np.noun
        self._where(np, ids)
        return ids

    def _group(self, np: NP, count: int, exclude: tuple[str, ...]) -> list[str]:
        cats = [c.name for c in self.cat if c.graspable and (c.group in np.groups or c.name in np.groups)]
        self.reserved.update(c.name for c in self.cat if c.group in np.groups or c.name in np.groups)
        if not np.new and np.count is None:
            have = [o.id for o in self.sg.objects() if o.category in cats and o.id in self.fixed
                    and self.fixed[o.id].get("_group") == np.groups]
            if have:
                return have
        usable = [c for c in cats if c not in exclude] or cats
        if not usable:
            raise PromptError(f"'{np.word}' names no graspable objects in the catalog; name them one by one")
        ids = [self._new(usable[k % len(usable)], np.attrs) for k in range(count)]
        for i in ids:
            self.fixed[i]["_group"] = np.groups
        self._where(np, ids)
        return ids

    def _where(self, np: NP, ids: list[str]) -> None:
        if np.where is None:
            return
        rel, other = np.where
        (o,) = self._single(self.resolve(other, "where"), other)
        for i in ids:
            self.place(i, rel, o)

    def _single(self, ids: list[str], np: NP) -> list[str]:
        if len(ids) != 1:
            raise PromptError(f"'{np.word}' names {len(ids)} objects; name a single one there")
        return ids

    def place(self, node: str, rel: str, other: str) -> None:
        """Record an initial relation of ``node`` (an on/in parent or a spatial relation)."""
        if node == other:
            raise PromptError(f"the {self.disp(node)} cannot start {rel.replace('_', ' ')} itself")
        rel = self.rel_to(rel, other)
        if rel not in SUPPORT_RELATIONS:
            self.extra.append((node, rel, other))
            return
        old = self.parent.get(node)
        if old is not None and old != (rel, other):
            raise PromptError(f"the {self.disp(node)} cannot start both {old[0]} the {self.disp(old[1])} "
                              f"and {rel} the {self.disp(other)}")
        self.parent[node] = (rel, other)

    def rel_to(self, rel: str, other: str) -> str:
        """Resolve ``to``/``from`` by the other object's flags and check in/on are possible."""
        c = self.cat.get(self.sg.object(other).category)
        if rel == "from" and not (c.support or c.container or other == TABLE):
            raise PromptError(f"nothing can start on or in {_a(c.display)}; name a container or support to "
                              "take it from, such as a bowl, a plate or the table")
        if rel in ("to", "from"):
            rel = "on" if other == TABLE or (c.support and not c.container) else \
                "in" if c.container else ("near" if rel == "to" else "on")
        if rel == "in" and not c.container:
            raise PromptError(f"{_a(c.display)} is not a container, so nothing can go in it; use one "
                              "such as a bowl, cup, basket or bin")
        if rel == "on" and not (c.support or other == TABLE):
            raise PromptError(f"nothing can rest on {_a(c.display)}; use a support such as the table, "
                              "a plate, a tray or a box")
        return rel

    def graspable(self, ids: list[str], verb: str) -> None:
        """Raise a PromptError unless every object can be picked by the gripper."""
        for i in ids:
            c = self.cat.get(self.sg.object(i).category)
            if i == TABLE or not c.graspable:
                raise PromptError(f"{_a(c.display)} is not graspable, so the robot cannot {verb} it; "
                                  "choose a graspable object (see `scenegen catalog`)")

    def goal(self, s: str, pred: str, o: str | None = None) -> None:
        """Add a goal; a later placement or state of the same object replaces the earlier one."""
        if o is not None and s == o:
            raise PromptError(f"cannot put the {self.disp(s)} {pred.replace('_', ' ')} itself")
        def replaced(g: Goal) -> bool:
            if g.subject != s:
                return False
            if pred in SUPPORT_RELATIONS:
                return g.predicate in SUPPORT_RELATIONS
            if o is None:
                return g.object is None
            # A later step wins over an earlier opposite one ("near the bowl, then away from it").
            return g.object == o and (g.predicate == pred or _OPPOSITE.get(g.predicate) == pred)

        self.goals = [g for g in self.goals if not replaced(g)]
        self.goals.append(Goal(s, pred, o))
        self.pending.pop(s, None)

    # ------------------------------------------------------------------ clauses
    def clause(self, c: Clause, prev: Clause | None = None) -> None:
        """Apply one clause; an elided clause without a destination reuses the previous one's."""
        if c.elided and c.dest is None and prev is not None and prev.dest is not None and not c.chain \
                and c.verb in _MOVE:
            c.dest = prev.dest
        exclude = tuple(x.category for x in ([c.dest[1]] if c.dest else []) if x.category)
        plural_default = 3 if c.verb == "stack" else 2
        subj: list[str] = []
        for np in c.subjects:
            subj += [i for i in self.resolve(np, "subject", plural_default, exclude) if i not in subj]
        for np in c.extras:
            self.distractors.update(self.resolve(np, "extra"))
        if c.source is not None:
            (src,) = self._single(self.resolve(c.source, "where"), c.source)
            for s in subj:
                self.place(s, c.source_rel, src)
        dest = None
        if c.dest is not None:
            (dest,) = self._single(self.resolve(c.dest[1], "dest", current=tuple(subj)), c.dest[1])
        verb = c.verb_word
        if c.verb == "stack":
            self._stack(subj, dest, c)
        elif c.verb in _ORIENT and not (c.verb == "lay" and dest is not None):
            self._orient(subj, c)
            if dest is not None:
                self._move(subj, c.dest[0], dest, verb)
        else:
            self.graspable(subj, verb)
            if dest is not None:
                self._move(subj, c.dest[0], dest, verb)
                if c.verb == "sort":
                    self._assign_slots(subj, dest)
            elif c.verb == "gather" or c.chain:
                for s in subj:
                    self.pending[s] = ("gather", tuple(subj))
            elif c.verb == "pick":
                for s in subj:
                    self.pending.setdefault(s, ("pick", tuple(subj)))
            elif c.orient not in ("upright", "invert", "lying"):
                raise PromptError(f"say where to {verb} the {self.disp(subj[0])}, "
                                  "e.g. 'in the bowl' or 'next to the plate'")
            if c.orient in ("upright", "invert", "lying"):
                self._orient(subj, c)
        self.last = subj
        if dest is not None:
            self.last_dest = [dest]

    def _move(self, subj: list[str], rel: str, dest: str, verb: str) -> None:
        for s in subj:
            if s == dest:
                raise PromptError(f"cannot {verb} the {self.disp(s)} {rel.replace('_', ' ')} itself")
            self.goal(s, self.rel_to(rel, dest), dest)
            if self.goals[-1].predicate == "far_from" and (s, "near", dest) not in self.extra:
                self.extra.append((s, "near", dest))

    def _assign_slots(self, subj: list[str], dest: str) -> None:
        """Sorting into a receptacle with compartments: each kind of part gets its own compartment, in order."""
        kind = self.sg.object(dest).category
        if kind not in COMPARTMENTS:
            return
        have = self.slots.setdefault(dest, {})
        for s in subj:
            cat = self.sg.object(s).category
            if cat not in have:
                if len(have) >= COMPARTMENTS[kind]:
                    raise PromptError(f"the {self.disp(dest)} has {COMPARTMENTS[kind]} compartments, so it sorts at "
                                      f"most {COMPARTMENTS[kind]} kinds of object; name fewer kinds")
                have[cat] = SLOT_NAMES[len(have)]
        self.goals = [Goal(g.subject, g.predicate, g.object, have[self.sg.object(g.subject).category])
                      if g.subject in subj and g.object == dest and g.predicate == "in" else g for g in self.goals]

    def _stack(self, subj: list[str], dest: str | None, c: Clause) -> None:
        self.graspable(subj, "stack")
        if len(subj) == 1 and dest is None:
            raise PromptError(f"say what to stack the {self.disp(subj[0])} on, e.g. 'on the plate'")
        below = dest
        for s in subj:
            if below is not None:
                if s == below:
                    raise PromptError(f"cannot stack the {self.disp(s)} on itself")
                self.goal(s, self._stack_rel(below, c.dest[0] if c.dest and below == dest else "on", s), below)
            below = s

    def _stack_rel(self, below: str, rel: str, above: str) -> str:
        c = self.cat.get(self.sg.object(below).category)
        if rel not in ("on", "in", "to"):
            raise PromptError(f"stack on or in something, not '{rel.replace('_', ' ')}' it")
        same_stack = c.stackable and not c.container and self.sg.object(above).category == c.name
        if below == TABLE or c.support or same_stack:
            return "on" if rel != "in" or not c.container else "in"
        if c.container:
            return "in"
        raise PromptError(f"nothing can be stacked on {_a(c.display)}: it is neither a support nor a container")

    def _orient(self, subj: list[str], c: Clause) -> None:
        self.graspable(subj, c.verb_word)
        o, v = c.orient, c.verb
        if o == "invert" or v == "invert":
            start, goal = "upright", "inverted"
        elif o == "lying" or v in ("lay", "topple") or (v == "turn" and o == "down"):
            start, goal = "upright", "lying"
        elif v == "flip" or o == "over":
            start, goal = "inverted", "upright"
        elif o in ("upright", "up") or v == "stand":
            start, goal = "upright_fallen", "upright"
        else:
            raise PromptError(f"say how to {c.verb_word} the {self.disp(subj[0])}: "
                              "upright, upside down or over")
        for s in subj:
            if start == "upright_fallen":
                fallen = "inverted" if self.cat.get(self.sg.object(s).category).container and v != "stand" \
                    else "lying"
                self.state.setdefault(s, fallen)
            elif start != "upright":
                self.state.setdefault(s, start)
            self.goal(s, goal)

    # ------------------------------------------------------------------ finish
    def finish(self, clutter: int | None) -> SceneGraph:
        """Settle pending steps (pick/gather without a destination), check the goals, assemble."""
        for s, (kind, group) in sorted(dict(self.pending).items()):
            if kind == "gather":
                if len(group) < 2:
                    raise PromptError(f"gather at least two objects, or say where to put the {self.disp(s)}")
                if s != group[0]:
                    self.goal(s, "near", group[0])
            elif s in self.parent and self.parent[s][1] != TABLE:
                self.goal(s, "on", TABLE)
            else:
                raise PromptError(f"say where to put the {self.disp(s)}, e.g. 'and put it in the bowl'")
        self._check_goal_cycle()
        self._check_goal_conflicts()
        self._check_fit()
        for gl in self.goals:
            if gl.predicate == "on" and gl.object == TABLE and gl.subject not in self.parent:
                src = next(n for n in ("tray", "bin", "basket") if n != self.sg.object(gl.subject).category)
                self.parent[gl.subject] = ("in", self._new(src, {}))
        return self._assemble(clutter)

    def _check_goal_conflicts(self) -> None:
        have = {(g.subject, g.predicate, g.object) for g in self.goals if g.object is not None}
        for s, pred, o in sorted(have):
            mirrored = pred not in ("near", "far_from") and (o, pred, s) in have
            if (s, _OPPOSITE.get(pred), o) in have or mirrored:
                raise PromptError(f"the goals contradict each other: the {self.disp(s)} cannot be both "
                                  f"{pred.replace('_', ' ')} and {_OPPOSITE[pred].replace('_', ' ')} "
                                  f"the {self.disp(o)}")

    def _sides(self, node: str) -> tuple[tuple[float, float], tuple[float, float]]:
        """(narrow, wide) horizontal side (m) of a node at its smallest and at its largest allowed size."""
        c = self.cat.get(self.sg.object(node).category)
        band = self.cat.size_classes.get(self.fixed.get(node, {}).get("size"), (0.0, 1.0))
        ext = [[lo + f * (hi - lo) for lo, hi in zip(c.size_min[:2], c.size_max[:2], strict=True)] for f in band]
        return (min(ext[0]), max(ext[0])), (min(ext[1]), max(ext[1]))

    def _check_fit(self) -> None:
        """Refuse an ``in``/``on`` goal whose subject, at its smallest, exceeds the receptacle at its largest."""
        for g in self.goals:
            if g.predicate not in ("in", "on") or g.object in (None, TABLE):
                continue
            small, _ = self._sides(g.subject)
            side = 0 if g.predicate == "in" else 1      # the receptacle's narrow side for in, wide for on
            o_lo, o_hi = (sides[side] for sides in self._sides(g.object))
            limit = (IN_FIT if g.predicate == "in" else ON_FIT) * o_hi
            if small[0] <= limit + 1e-9:
                continue
            s, o = self.disp(g.subject), self.disp(g.object)
            need = small[0] / (IN_FIT if g.predicate == "in" else ON_FIT)
            skip = (TABLE, self.sg.object(g.object).category)
            alts = [c.display for c in self.cat.with_flag("container" if g.predicate == "in" else "support")
                    if _largest_side(c, g.predicate) >= need and c.name not in skip][:3]
            hint = f"such as {_a(alts[0])}" + "".join(f" or {_a(x)}" for x in alts[1:]) if alts else "such as the table"
            raise PromptError(f"the {s} ({small[0] * 100:.1f} cm across at its smallest) cannot go {g.predicate} "
                              f"the {o} ({o_lo * 100:.1f}-{o_hi * 100:.1f} cm across): it is too big for it at "
                              f"every size; put it {g.predicate} something bigger, {hint}")

    def _check_goal_cycle(self) -> None:
        dg = nx.DiGraph((g.subject, g.object) for g in self.goals if g.predicate in SUPPORT_RELATIONS)
        try:
            cyc = nx.find_cycle(dg)
        except nx.NetworkXNoCycle:
            return
        names = " -> ".join(self.disp(u) for u, _ in cyc)
        raise PromptError(f"the goals put objects inside each other in a circle ({names}); drop one step")

    def _assemble(self, clutter: int | None) -> SceneGraph:
        sg = self.sg
        targets = {g.subject for g in self.goals}
        receptacles = {g.object for g in self.goals if g.object is not None} - targets - {TABLE}
        for o in sg.objects():
            if o.id == TABLE:
                continue
            role = "target" if o.id in targets else "receptacle" if o.id in receptacles else \
                "distractor" if o.id in self.distractors else "background"
            sg.g.nodes[o.id]["role"] = role
            sg.g.nodes[o.id]["state"] = self.state.get(o.id, "upright")
            sg.g.nodes[o.id]["attributes"] = {k: v for k, v in self.fixed.get(o.id, {}).items()
                                              if not k.startswith("_")}
            rel, par = self.parent.get(o.id, ("on", TABLE))
            sg.add_relation(o.id, rel, par)
        for s, rel, o in self.extra:
            sg.add_relation(s, rel, o)
        sg.goals = list(self.goals)
        fixed = {k: sorted(x for x in v if not x.startswith("_")) for k, v in sorted(self.fixed.items())}
        sg.meta = {"designer": "rules", "fixed": {k: v for k, v in fixed.items() if v},
                   "reserved_categories": sorted(self.reserved)}
        if clutter is not None:
            sg.meta["clutter"] = clutter
        probs = sg.validate(self.cat)
        if probs:
            more = f" (and {len(probs) - 1} more problem(s))" if len(probs) > 1 else ""
            raise PromptError(f"this task cannot be built: {probs[0].message}{more}; rephrase the prompt")
        return sg
