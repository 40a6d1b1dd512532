"""The scene graph's vocabulary (roles, relations, states) and its JSON schema.

:data:`JSON_SCHEMA` is published as ``docs/scene_graph.schema.json`` (a test keeps the two equal);
:func:`schema_error` checks data against it. :mod:`scenegen.graph` re-exports every name.
"""

from __future__ import annotations

import functools
from typing import Any

SCHEMA_VERSION = 1
ROLES = ("support", "target", "receptacle", "distractor", "background")
RELATIONS = ("on", "in", "left_of", "right_of", "in_front_of", "behind", "near", "far_from")
STATES = ("upright", "inverted", "lying")
SLOT_NAMES = ("A", "B", "C", "D", "E", "F")
"""Names of a receptacle's compartments (slots), in the order its builder lays them out."""
COMPARTMENTS = {"sorter": 4}
"""Categories whose receptacle has named compartments -> the fewest compartments every instance has."""

_ID = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"}
JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://scenegen.dev/schema/scene_graph.schema.json",
    "title": "scenegen SceneGraph",
    "type": "object",
    "required": ["schema_version", "instruction", "objects", "relations", "goals"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "instruction": {"type": "string", "maxLength": 2000},
        "instructions": {"type": "array", "maxItems": 32, "items": {"type": "string", "maxLength": 2000}},
        "objects": {
            "type": "array", "maxItems": 256,
            "items": {
                "type": "object", "required": ["id", "category", "role"], "additionalProperties": False,
                "properties": {
                    "id": _ID,
                    "category": {"type": "string", "minLength": 1, "maxLength": 64},
                    "role": {"enum": list(ROLES)},
                    "state": {"enum": list(STATES)},
                    "attributes": {
                        "type": "object", "additionalProperties": False,
                        "properties": {
                            "color": {"type": "string", "maxLength": 32},
                            "material": {"type": "string", "maxLength": 32},
                            "size": {"enum": ["small", "medium", "large"]},
                            "scale": {"type": "number", "minimum": 0.0, "maximum": 1.0},
                            "instance_seed": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
                        },
                    },
                },
            },
        },
        "relations": {
            "type": "array", "maxItems": 2048,
            "items": {
                "type": "object", "required": ["subject", "relation", "object"], "additionalProperties": False,
                "properties": {"subject": _ID, "relation": {"enum": list(RELATIONS)}, "object": _ID},
            },
        },
        "goals": {
            "type": "array", "maxItems": 64,
            "items": {
                "type": "object", "required": ["subject", "predicate"], "additionalProperties": False,
                "properties": {
                    "subject": _ID,
                    "predicate": {"enum": list(RELATIONS + STATES)},
                    "object": {"anyOf": [_ID, {"type": "null"}]},
                    "slot": {"enum": list(SLOT_NAMES)},
                },
            },
        },
        "meta": {"type": "object"},
    },
}


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema  # imported lazily: it costs ~0.15 s at start-up

    return jsonschema.Draft202012Validator(JSON_SCHEMA)


def schema_error(data: Any) -> Any:
    """The most relevant ``jsonschema`` error of ``data`` against :data:`JSON_SCHEMA`, or None when it matches."""
    import jsonschema

    return jsonschema.exceptions.best_match(_validator().iter_errors(data))
