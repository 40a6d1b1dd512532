"""Prompt text and reply parsing of the LLM designer (pure functions, no network).

The system prompt carries the graph's JSON Schema and the catalog's vocabulary, so a
server that ignores ``response_format`` still knows the exact shape to produce. The
reply is treated as data only: fenced or bare JSON is parsed, normalised (category
synonyms mapped to catalog names, a stray ``meta`` dropped) and validated; every
problem is returned as text to send back to the model.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from scenegen.catalog import Catalog
from scenegen.errors import GraphError
from scenegen.graph import JSON_SCHEMA, RELATIONS, ROLES, SCHEMA_VERSION, STATES, SceneGraph

MAX_REPLY_CHARS = 200_000
"""Replies longer than this are rejected unparsed (a runaway generation)."""
MAX_PROBLEMS_SENT = 20
"""At most this many problems go back to the model in one repair message."""

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)

EXAMPLE: dict[str, Any] = {
    "schema_version": SCHEMA_VERSION,
    "instruction": "put the banana in the bowl",
    "objects": [
        {"id": "table", "category": "table", "role": "support"},
        {"id": "banana_1", "category": "banana", "role": "target", "attributes": {"color": "yellow"}},
        {"id": "bowl_1", "category": "bowl", "role": "receptacle", "attributes": {"color": "blue"}},
        {"id": "mug_1", "category": "mug", "role": "distractor", "attributes": {"color": "red"}},
    ],
    "relations": [
        {"subject": "banana_1", "relation": "on", "object": "table"},
        {"subject": "bowl_1", "relation": "on", "object": "table"},
        {"subject": "mug_1", "relation": "on", "object": "table"},
        {"subject": "mug_1", "relation": "left_of", "object": "bowl_1"},
    ],
    "goals": [{"subject": "banana_1", "predicate": "in", "object": "bowl_1"}],
}
"""A valid graph shown to the model as an example of the expected answer."""


def llm_schema() -> dict:
    """The graph's JSON Schema as sent to the model: no ``$schema``/``$id``/``meta`` keys."""
    schema = copy.deepcopy(JSON_SCHEMA)
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    schema["properties"].pop("meta", None)
    return schema


def response_format() -> dict:
    """The ``response_format`` argument asking for structured output against the schema."""
    return {"type": "json_schema", "json_schema": {"name": "scene_graph", "schema": llm_schema(), "strict": False}}


def _flags(cat: Any) -> str:
    flags = [f for f in ("container", "support", "graspable", "stackable") if getattr(cat, f)]
    return f"{cat.name} ({', '.join(flags)})" if flags else cat.name


def system_prompt(catalog: Catalog) -> str:
    """Instructions, vocabulary, JSON Schema and an example for the model."""
    categories = "; ".join(_flags(c) for c in sorted(catalog, key=lambda c: c.name))
    return "\n".join([
        "You design table-top scenes for robot manipulation. Given a task, answer with ONE JSON object:",
        "a scene graph matching the JSON Schema below. Answer with data only: no prose, no code, no markdown.",
        "",
        "Rules:",
        '- Exactly one object has role "support": the table (category "table"); it rests on nothing.',
        '- Every other object has exactly one "on" or "in" relation, and following them leads down to the table.',
        '- "in" needs a container as its object; "on" needs a support (or the table).',
        "- Roles: target = what the task moves; receptacle = where it goes; distractor = other objects;"
        " background = decoration.",
        "- Goals say what the robot must make true: a relation (subject, predicate, object) or a state"
        " (subject, predicate, object null). A goal must not already hold in the initial scene.",
        "- Ids use lowercase letters, digits and underscores and start with a letter, e.g. banana_1.",
        "- instruction: one short imperative sentence for the robot, the same for every proposal of a task.",
        "",
        "Vocabulary (use these words exactly):",
        f"- categories (flags): {categories}",
        f"- relations: {', '.join(RELATIONS)}",
        f"- goal predicates: {', '.join(RELATIONS + STATES)}",
        f"- roles: {', '.join(ROLES)}",
        f"- states: {', '.join(STATES)}",
        f"- colours: {', '.join(sorted(catalog.colors))}",
        "- sizes: small, medium, large",
        "",
        "JSON Schema:",
        json.dumps(llm_schema(), separators=(",", ":")),
        "",
        'Example answer for "put the banana in the bowl":',
        json.dumps(EXAMPLE, separators=(",", ":")),
    ])


def describe_distractors(graph: SceneGraph) -> str:
    """``"red mug, apple"``: the distractors of a graph in words (``"none"`` if none)."""
    words = []
    for o in graph.objects("distractor"):
        color = o.attributes.get("color")
        words.append(f"{color} {o.category}" if color else o.category)
    return ", ".join(sorted(words)) or "none"


def user_prompt(prompt: str, proposal: int, previous: list[SceneGraph]) -> str:
    """The user message for proposal ``proposal`` (0-based) given earlier accepted graphs."""
    text = f"Task: {prompt.strip()}\nDesign the scene graph for this task."
    if proposal > 0:
        used = "; ".join(f"[{describe_distractors(g)}]" for g in previous) or "[none yet]"
        text += (f"\nThis is proposal {proposal + 1}. Earlier proposals used these distractors: {used}. "
                 "Keep the same task, target, receptacle and goals, but choose a different set of distractor "
                 "objects (other categories, colours, counts or spatial relations).")
    return text


def repair_prompt(problems: list[str]) -> str:
    """The follow-up message that sends the problems of the last answer back to the model."""
    shown = problems[:MAX_PROBLEMS_SENT]
    more = f"\n(and {len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
    return ("Your scene graph is not valid. Problems:\n" + "\n".join(f"- {p}" for p in shown) + more +
            "\nFix every problem and answer with the complete corrected scene graph as one JSON object only.")


def extract_json_text(text: str) -> str:
    """Strip markdown fences and surrounding prose; return the text of the JSON object."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else text.strip()


def _normalise(data: dict, catalog: Catalog) -> dict:
    if set(data) == {"scene_graph"} and isinstance(data["scene_graph"], dict):
        data = data["scene_graph"]
    data = dict(data)
    data.setdefault("schema_version", SCHEMA_VERSION)
    data.pop("meta", None)
    objects = data.get("objects")
    if isinstance(objects, list):
        fixed = []
        for o in objects:
            if isinstance(o, dict) and isinstance(o.get("category"), str) and o["category"] not in catalog:
                hit = catalog.lookup(o["category"].replace("_", " "))
                o = {**o, "category": hit[0]} if hit else o
            fixed.append(o)
        data["objects"] = fixed
    return data


def parse_reply(text: str | None, catalog: Catalog) -> tuple[SceneGraph | None, list[str]]:
    """Parse and validate a model reply.

    Returns:
        ``(graph, [])`` for a valid graph, else ``(None or the invalid graph, problems)``.

    """
    if text is None or not text.strip():
        return None, ["the reply was empty; answer with the scene graph as one JSON object"]
    if len(text) > MAX_REPLY_CHARS:
        return None, [f"the reply is {len(text)} characters long (limit {MAX_REPLY_CHARS}); answer with a "
                      "compact scene graph"]
    try:
        data = json.loads(extract_json_text(text))
    except json.JSONDecodeError as exc:
        return None, [f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                      "answer with one JSON object and nothing else"]
    except RecursionError:
        return None, ["the reply is nested too deeply to parse; answer with a flat scene graph object"]
    if not isinstance(data, dict):
        return None, [f"the reply is a JSON {type(data).__name__}, not an object with keys schema_version, "
                      "instruction, objects, relations, goals"]
    try:
        graph = SceneGraph.from_dict(_normalise(data, catalog))
    except GraphError as exc:
        return None, [" ".join(str(exc).split())]
    problems = [str(p) for p in graph.validate(catalog)]
    return graph, problems
