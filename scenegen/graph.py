"""The scene graph: objects with roles, attributes and states; spatial relations; the task.

A :class:`SceneGraph` wraps a networkx ``MultiDiGraph`` (a directed graph whose edge
key is the relation word, so a pair of objects may carry several relations). It
validates itself (reporting every problem at once), round-trips through JSON with a
schema version, and has a canonical content hash independent of insertion order.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from scenegen.catalog import Catalog, load_catalog
from scenegen.errors import GraphError
from scenegen.fileio import canonical_json as canonical_json  # re-exported for callers
from scenegen.fileio import content_hash
from scenegen.graph_schema import COMPARTMENTS, RELATIONS, ROLES, SCHEMA_VERSION, SLOT_NAMES, STATES, schema_error
from scenegen.graph_schema import JSON_SCHEMA as JSON_SCHEMA  # re-exported for callers

SUPPORT_RELATIONS = ("on", "in")
SYMMETRIC = ("near", "far_from")
INVERSE = {"left_of": "right_of", "right_of": "left_of", "in_front_of": "behind", "behind": "in_front_of"}
ATTRIBUTE_KEYS = ("color", "material", "size", "scale", "instance_seed")


@dataclass(frozen=True, order=True)
class Relation:
    """A spatial relation ``subject relation object`` (e.g. banana on table)."""

    subject: str
    relation: str
    object: str


@dataclass(frozen=True)
class Goal:
    """A goal: a relation to reach (``object`` set) or a state to reach (``object`` None).

    An ``in`` goal may name a compartment (``slot``, one of :data:`SLOT_NAMES`) of a receptacle that has them
    (:data:`COMPARTMENTS`): the subject must lie in that compartment.
    """

    subject: str
    predicate: str
    object: str | None = None
    slot: str | None = None

    @property
    def is_state(self) -> bool:
        """True for a state goal (upright, inverted, lying)."""
        return self.predicate in STATES

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (``slot`` only when set, so goals without one hash as before)."""
        out = {"subject": self.subject, "predicate": self.predicate, "object": self.object}
        if self.slot is not None:
            out["slot"] = self.slot
        return out


@dataclass(frozen=True)
class ObjectNode:
    """A read-only view of one object node."""

    id: str
    category: str
    role: str
    state: str = "upright"
    attributes: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return {"id": self.id, "category": self.category, "role": self.role, "state": self.state,
                "attributes": dict(sorted(self.attributes.items()))}


@dataclass(frozen=True)
class Problem:
    """One validation problem: a machine code, a message and the node ids involved."""

    code: str
    message: str
    nodes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


def _canon_dir(rel: Relation) -> tuple[str, str, str]:
    """Normalise directional relations: ``a right_of b`` -> ``b left_of a``."""
    if rel.relation in ("right_of", "behind"):
        return (rel.object, INVERSE[rel.relation], rel.subject)
    return (rel.subject, rel.relation, rel.object)


class SceneGraph:
    """Objects (nodes), relations (edges keyed by relation) and the task (instruction + goals)."""

    def __init__(self, instruction: str = "", goals: Iterable[Goal] = (), meta: dict | None = None,
                 instructions: Iterable[str] = ()) -> None:
        self.g = nx.MultiDiGraph()
        self.instruction = instruction
        # paraphrases of the task, the original ``instruction`` first (empty: the instruction alone)
        self.instructions: list[str] = list(instructions)
        self.goals: list[Goal] = list(goals)
        self.meta: dict = dict(meta or {})
        self._id_hints: dict[str, int] = {}

    # ----------------------------------------------------------------- building
    def add_object(self, obj_id: str, category: str, role: str, state: str = "upright",
                   attributes: dict | None = None) -> str:
        """Add an object node and return its id.

        Raises:
            GraphError: the id is already used.

        """
        if obj_id in self.g:
            raise GraphError(f"object id {obj_id!r} is already used; pick another id")
        self.g.add_node(obj_id, category=category, role=role, state=state, attributes=dict(attributes or {}))
        return obj_id

    def new_id(self, category: str) -> str:
        """Return the unused id ``<category>_<i>`` with the smallest ``i >= 1``, such as ``apple_2``.

        Linear over a graph's life: a per-category hint remembers that every smaller index is
        taken (adding objects keeps that true; :meth:`remove_object` forgets the hints).
        """
        i = self._id_hints.get(category, 1)
        while f"{category}_{i}" in self.g:
            i += 1
        self._id_hints[category] = i
        return f"{category}_{i}"

    def add_relation(self, subject: str, relation: str, obj: str) -> None:
        """Add the relation ``subject relation obj`` (both nodes must exist)."""
        for n in (subject, obj):
            if n not in self.g:
                raise GraphError(f"relation {subject} {relation} {obj}: no object {n!r}; add it first")
        self.g.add_edge(subject, obj, key=relation)

    def remove_relation(self, subject: str, relation: str, obj: str) -> None:
        """Remove one relation if present."""
        if self.g.has_edge(subject, obj, key=relation):
            self.g.remove_edge(subject, obj, key=relation)

    def remove_object(self, obj_id: str) -> None:
        """Remove an object with its relations and goals."""
        self._id_hints.clear()
        self.g.remove_node(obj_id)
        self.goals = [gl for gl in self.goals if obj_id not in (gl.subject, gl.object)]

    def set_attribute(self, obj_id: str, key: str, value: Any) -> None:
        """Set one attribute of an object."""
        self.g.nodes[obj_id]["attributes"][key] = value

    def add_goal(self, subject: str, predicate: str, obj: str | None = None, slot: str | None = None) -> Goal:
        """Append a goal and return it."""
        goal = Goal(subject, predicate, obj, slot)
        self.goals.append(goal)
        return goal

    def copy(self) -> SceneGraph:
        """Return a deep copy."""
        return copy.deepcopy(self)

    # ----------------------------------------------------------------- queries
    def __contains__(self, obj_id: object) -> bool:
        return obj_id in self.g

    def __len__(self) -> int:
        return self.g.number_of_nodes()

    def object(self, obj_id: str) -> ObjectNode:
        """Return the object with this id."""
        if obj_id not in self.g:
            raise GraphError(f"no object {obj_id!r} in the graph")
        d = self.g.nodes[obj_id]
        return ObjectNode(obj_id, d.get("category", ""), d.get("role", ""), d.get("state", "upright"),
                          dict(d.get("attributes", {})))

    def objects(self, role: str | None = None) -> list[ObjectNode]:
        """Return objects sorted by id, optionally only those with ``role``."""
        out = [self.object(n) for n in sorted(self.g.nodes)]
        return [o for o in out if role is None or o.role == role]

    def relations(self, relation: str | None = None) -> list[Relation]:
        """Return relations sorted, optionally only of one kind."""
        out = sorted(Relation(u, k, v) for u, v, k in self.g.edges(keys=True))
        return [r for r in out if relation is None or r.relation == relation]

    def has_relation(self, subject: str, relation: str, obj: str) -> bool:
        """True if the relation (or its inverse form) is in the graph."""
        if self.g.has_edge(subject, obj, key=relation):
            return True
        if relation in INVERSE and self.g.has_edge(obj, subject, key=INVERSE[relation]):
            return True
        return relation in SYMMETRIC and self.g.has_edge(obj, subject, key=relation)

    @property
    def support_id(self) -> str | None:
        """Id of the support (table) node, or None."""
        nodes = self.g.nodes  # as objects("support")[0].id, without building every node (the expert asks per test)
        return next((n for n in sorted(nodes) if nodes[n].get("role", "") == "support"), None)

    def parent(self, obj_id: str) -> tuple[str, str] | None:
        """Return ``(relation, parent_id)`` of the object's ``on``/``in`` support, or None."""
        for _, v, k in sorted(self.g.out_edges(obj_id, keys=True)):
            if k in SUPPORT_RELATIONS:
                return (k, v)
        return None

    def children(self, obj_id: str) -> list[tuple[str, str]]:
        """Return ``(relation, child_id)`` for objects on or in this one."""
        return sorted((k, u) for u, _, k in self.g.in_edges(obj_id, keys=True) if k in SUPPORT_RELATIONS)

    def support_order(self) -> list[str]:
        """Object ids ordered so that every parent comes before what rests on or in it."""
        sub = nx.DiGraph()
        sub.add_nodes_from(sorted(self.g.nodes))
        sub.add_edges_from((v, u) for u, v, k in self.g.edges(keys=True) if k in SUPPORT_RELATIONS)
        try:
            return list(nx.lexicographical_topological_sort(sub))
        except nx.NetworkXUnfeasible as exc:
            raise GraphError("on/in relations form a cycle; remove one of them") from exc

    # ----------------------------------------------------------------- validation
    def validate(self, catalog: Catalog | None = None) -> list[Problem]:
        """Return every problem of the graph (empty when valid)."""
        cat = catalog or load_catalog()
        probs: list[Problem] = []
        nodes = self.g.nodes
        for n in sorted(nodes):
            d = nodes[n]
            if d.get("category") not in cat:
                close = ", ".join(cat.closest(str(d.get("category")))) or "see `scenegen catalog`"
                probs.append(Problem("unknown_category",
                                     f"{n}: unknown category {d.get('category')!r} (closest: {close})", (n,)))
            if d.get("role") not in ROLES:
                probs.append(Problem("bad_role", f"{n}: role {d.get('role')!r} is not one of {ROLES}", (n,)))
            if d.get("state", "upright") not in STATES:
                probs.append(Problem("bad_state", f"{n}: state {d.get('state')!r} is not one of {STATES}", (n,)))
            for key in d.get("attributes", {}):
                if key not in ATTRIBUTE_KEYS:
                    probs.append(Problem("bad_attribute", f"{n}: unknown attribute {key!r}", (n,)))
            color = d.get("attributes", {}).get("color")
            if color is not None and color not in cat.colors:
                probs.append(Problem("bad_attribute", f"{n}: unknown colour {color!r}", (n,)))
        supports = [o.id for o in self.objects("support")]
        if len(supports) != 1:
            probs.append(Problem("support_count",
                                 f"a scene needs exactly one support (table) node, found {len(supports)}",
                                 tuple(supports)))
        probs += self._relation_problems(cat)
        probs += self._support_problems(supports)
        probs += self._goal_problems(cat)
        return probs

    def _category(self, cat: Catalog, n: str):
        name = self.g.nodes[n].get("category")
        return cat.categories.get(name)

    def _relation_problems(self, cat: Catalog) -> list[Problem]:
        probs: list[Problem] = []
        rels = self.relations()
        for r in rels:
            if r.relation not in RELATIONS:
                probs.append(Problem("bad_relation", f"unknown relation {r.relation!r} ({r.subject} -> {r.object})",
                                     (r.subject, r.object)))
            if r.subject == r.object:
                probs.append(Problem("self_relation", f"{r.subject} {r.relation} itself", (r.subject,)))
            probs += self._relation_kind_problems(cat, r.subject, r.relation, r.object, "")
        canon = {_canon_dir(r) for r in rels if r.relation in INVERSE}
        seen: set[frozenset] = set()
        for a, rel, b in sorted(canon):
            key = frozenset((a, b, rel))
            if (b, rel, a) in canon and key not in seen:
                seen.add(key)
                probs.append(Problem("contradiction", f"{a} {rel} {b} and {b} {rel} {a} cannot both hold", (a, b)))
        pairs = {frozenset((r.subject, r.object)): set() for r in rels}
        for r in rels:
            pairs[frozenset((r.subject, r.object))].add(r.relation)
        for pair, kinds in sorted(pairs.items(), key=lambda kv: sorted(kv[0])):
            ids = tuple(sorted(pair))
            if {"near", "far_from"} <= kinds:
                probs.append(Problem("contradiction", f"{ids[0]} and {ids[-1]} are both near and far_from", ids))
            if len(ids) == 2 and len(kinds & {"on", "in"}) and self._mutual_support(*ids):
                probs.append(Problem("contradiction", f"{ids[0]} and {ids[1]} rest on/in each other", ids))
        return probs

    def _mutual_support(self, a: str, b: str) -> bool:
        ab = any(self.g.has_edge(a, b, key=k) for k in SUPPORT_RELATIONS)
        ba = any(self.g.has_edge(b, a, key=k) for k in SUPPORT_RELATIONS)
        return ab and ba

    def _relation_kind_problems(self, cat: Catalog, s: str, rel: str, o: str, where: str) -> list[Problem]:
        oc = self._category(cat, o)
        nodes = self.g.nodes
        if oc is None or s == o:
            return []
        if rel == "in" and not oc.container:
            return [Problem("not_container", f"{where}{s} in {o}: a {oc.display} is not a container", (s, o))]
        same_stack = oc.stackable and nodes[s].get("category") == oc.name
        if rel == "on" and not (oc.support or same_stack or nodes[o].get("role") == "support"):
            return [Problem("not_support", f"{where}{s} on {o}: nothing can rest on a {oc.display}", (s, o))]
        return []

    def _support_problems(self, supports: list[str]) -> list[Problem]:
        probs: list[Problem] = []
        sub = nx.DiGraph()
        sub.add_nodes_from(self.g.nodes)
        sub.add_edges_from((u, v) for u, v, k in self.g.edges(keys=True) if k in SUPPORT_RELATIONS)
        for cyc in sorted(sorted(c) for c in nx.simple_cycles(sub) if len(c) > 1):
            probs.append(Problem("cycle", f"on/in relations form a cycle: {' -> '.join(cyc)}", tuple(cyc)))
        for n in sorted(self.g.nodes):
            if n in supports:
                if sub.out_degree(n):
                    probs.append(Problem("support_resting", f"{n} is the support but rests on something", (n,)))
                continue
            parents = sorted(sub.successors(n))
            if len(parents) > 1:
                probs.append(Problem("multiple_supports", f"{n} rests on/in several objects: {parents}",
                                     (n, *parents)))
            reach = nx.descendants(sub, n)
            if not any(s in reach for s in supports):
                probs.append(Problem("no_support_path", f"{n} has no on/in path down to the table", (n,)))
        return probs

    def _goal_problems(self, cat: Catalog) -> list[Problem]:
        probs: list[Problem] = []
        if not self.goals:
            probs.append(Problem("no_goal", "the task has no goal; add at least one goal"))
        for gl in self.goals:
            text = f"goal {gl.subject} {gl.predicate}{' ' + gl.object if gl.object else ''}"
            missing = [n for n in (gl.subject, gl.object) if n is not None and n not in self.g]
            if missing:
                probs.append(Problem("goal_absent", f"{text}: names absent object(s) {missing}", tuple(missing)))
                continue
            if gl.predicate in STATES:
                if gl.object is not None:
                    probs.append(Problem("bad_goal", f"{text}: a state goal takes no object", (gl.subject,)))
                elif self.g.nodes[gl.subject].get("state", "upright") == gl.predicate:
                    probs.append(Problem("goal_already_true", f"{text}: already {gl.predicate} at the start",
                                         (gl.subject,)))
                continue
            if gl.predicate not in RELATIONS or gl.object is None:
                probs.append(Problem("bad_goal", f"{text}: needs a relation and an object", (gl.subject,)))
                continue
            if gl.subject == gl.object:
                probs.append(Problem("self_relation", f"{text}: an object cannot relate to itself", (gl.subject,)))
                continue
            probs += self._relation_kind_problems(cat, gl.subject, gl.predicate, gl.object, "goal ")
            probs += self._slot_problems(gl, text)
            if self.has_relation(gl.subject, gl.predicate, gl.object):
                probs.append(Problem("goal_already_true", f"{text}: already true in the initial scene",
                                     (gl.subject, gl.object)))
            if gl.predicate in SUPPORT_RELATIONS and self._rests_on(gl.object, gl.subject):
                probs.append(Problem("goal_cycle", f"{text}: {gl.object} rests on/in {gl.subject}",
                                     (gl.subject, gl.object)))
        return probs

    def _slot_problems(self, gl: Goal, text: str) -> list[Problem]:
        if gl.slot is None:
            return []
        kind = self.g.nodes[gl.object].get("category")
        if gl.predicate != "in" or kind not in COMPARTMENTS:
            return [Problem("bad_slot", f"{text}: only an 'in' goal into a receptacle with compartments "
                                        f"({', '.join(COMPARTMENTS)}) names a slot", (gl.subject, gl.object))]
        if gl.slot not in SLOT_NAMES[:COMPARTMENTS[kind]]:
            return [Problem("bad_slot", f"{text}: slot {gl.slot!r} is not one of a {kind}'s "
                                        f"{', '.join(SLOT_NAMES[:COMPARTMENTS[kind]])}", (gl.subject, gl.object))]
        return []

    def _support_tree(self) -> nx.DiGraph:
        sub = nx.DiGraph()
        sub.add_nodes_from(self.g.nodes)
        sub.add_edges_from((u, v) for u, v, k in self.g.edges(keys=True) if k in SUPPORT_RELATIONS)
        return sub

    def _rests_on(self, a: str, b: str) -> bool:
        """True if ``a`` rests (directly or not) on/in ``b``."""
        sub = self._support_tree()
        return b in nx.descendants(sub, a)

    def check(self, catalog: Catalog | None = None) -> SceneGraph:
        """Validate and return self.

        Raises:
            GraphError: listing every problem (``err.problems``).

        """
        probs = self.validate(catalog)
        if probs:
            lines = "; ".join(str(p) for p in probs)
            raise GraphError(f"invalid scene graph ({len(probs)} problem(s)): {lines}", probs)
        return self

    # ----------------------------------------------------------------- serialisation
    def to_dict(self, with_meta: bool = True) -> dict:
        """Return the canonical JSON-ready dict (objects, relations and goals sorted)."""
        out = {
            "schema_version": SCHEMA_VERSION,
            "instruction": self.instruction,
            "objects": [o.to_dict() for o in self.objects()],
            "relations": [{"subject": r.subject, "relation": r.relation, "object": r.object}
                          for r in self.relations()],
            "goals": [g.to_dict() for g in self.goals],
        }
        if self.instructions:
            out["instructions"] = list(self.instructions)
        if with_meta and self.meta:
            out["meta"] = self.meta
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """Serialise to JSON."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Any) -> SceneGraph:
        """Build a graph from a dict produced by :meth:`to_dict` (or an LLM).

        Raises:
            GraphError: the data does not match the schema (the message names where).

        """
        if isinstance(data, dict) and data.get("schema_version") not in (None, SCHEMA_VERSION):
            raise GraphError(f"scene graph schema_version {data.get('schema_version')!r} is not supported "
                             f"(this is version {SCHEMA_VERSION}); regenerate the graph")
        err = schema_error(data)
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "<root>"
            raise GraphError(f"scene graph JSON does not match the schema at {where}: {err.message[:200]}")
        sg = cls(data["instruction"], meta=data.get("meta"), instructions=data.get("instructions", ()))
        for o in data["objects"]:
            sg.add_object(o["id"], o["category"], o["role"], o.get("state", "upright"), o.get("attributes"))
        for r in data["relations"]:
            sg.add_relation(r["subject"], r["relation"], r["object"])
        for gl in data["goals"]:
            sg.add_goal(gl["subject"], gl["predicate"], gl.get("object"), gl.get("slot"))
        return sg

    @classmethod
    def from_json(cls, text: str | bytes) -> SceneGraph:
        """Parse JSON text.

        Raises:
            GraphError: the text is not JSON or does not match the schema.

        """
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise GraphError(f"scene graph is not valid JSON ({str(exc)[:120]}); check the file") from None
        return cls.from_dict(data)

    def content_hash(self) -> str:
        """SHA-256 (hex) of the canonical content, excluding ``meta``; order-independent."""
        return content_hash(self.to_dict(with_meta=False))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SceneGraph) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"SceneGraph({self.instruction!r}, {len(self)} objects, {len(self.goals)} goals)"
