"""Inputs of the fuzz campaign (:mod:`fuzz`): junk values, JSON mutations, prompts and mesh files.

Everything is drawn from a ``random.Random`` seeded by (category, case index), so a case can be
rerun alone and a campaign resumed after a killed case starts at the same input.
"""

from __future__ import annotations

import copy
import json
import math
import random
import struct
from typing import Any

JUNK: list[Any] = [None, True, False, 0, -1, 1, 2**70, -(2**70), 0.5, -0.0, 1e308, -1e308, 1e-320, math.nan,
                   math.inf, -math.inf, "", "x", "../../etc/passwd", "/etc/passwd", "\x00", "\u202e\u0000\ud7ff",
                   "x" * 5000, [], [1], [None], [[[]]], ["a", 1, None], {}, {"a": 1}, {"": None}, [math.nan] * 3,
                   [0, 0, 0, 0], [1e308, 0, 0], list(range(100))]
"""Values that break code which trusts its input's types or ranges."""

WORDS = ["put", "place", "stack", "move", "set", "sort", "take", "gather", "the", "a", "an", "and", "then", "in",
         "on", "into", "onto", "next to", "left of", "right of", "behind", "in front of", "out of", "with",
         "distractors", "cluttered", "table", "please", "all", "every", "two", "three", "20", "-3", "1e9"]
COLORS = ["red", "blue", "green", "yellow", "black", "white", "purple", "orange", "wood", "pink"]
RELATIONS = ["in", "on", "next to", "left of", "right of", "behind", "in front of"]


def junk(rng: random.Random) -> Any:
    """One junk value (a fresh copy, so a mutation never changes :data:`JUNK`)."""
    return copy.deepcopy(rng.choice(JUNK))


# --------------------------------------------------------------------------- JSON mutations
def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys / indices) into nested dicts and lists."""
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data[:12]):
            out += _paths(v, (*prefix, i))
    return out


def _parent(data: Any, path: tuple) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


def mutate(data: Any, rng: random.Random, ops: int = 1, numeric_bias: float = 0.3) -> Any:
    """A copy of JSON-like ``data`` with ``ops`` random edits: a value replaced by junk, a key dropped,
    a list emptied, doubled or cut, a number pushed out of range, a key added."""
    data = copy.deepcopy(data)
    for _ in range(ops):
        paths = [p for p in _paths(data) if p]
        if not paths:
            return junk(rng)
        path = rng.choice(paths)
        parent, key = _parent(data, path), path[-1]
        value = parent[key]
        roll = rng.random()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and roll < numeric_bias:
            parent[key] = rng.choice([math.nan, math.inf, -math.inf, 1e308, -1e308, value * 1e6, -value, 0,
                                      value + rng.uniform(-1, 1), 2**63])
        elif roll < 0.55:
            parent[key] = junk(rng)
        elif roll < 0.7 and isinstance(parent, dict):
            del parent[key]
        elif roll < 0.8 and isinstance(value, list):
            parent[key] = rng.choice([[], value * rng.randint(2, 40), value[: len(value) // 2], value[::-1]])
        elif roll < 0.9 and isinstance(parent, dict):
            parent[rng.choice(["extra", "id", "schema_version", "meta", "x" * 300])] = junk(rng)
        else:
            parent[key] = rng.choice([str(value), [value], {"v": value}])
    return data


def deep_json(depth: int) -> str:
    """JSON text nested ``depth`` lists deep (blows a naive recursive parser)."""
    return "[" * depth + "]" * depth


def to_text(data: Any, rng: random.Random) -> str | bytes:
    """``data`` as JSON text, sometimes damaged: truncated, non-UTF-8, wrapped in prose, or very deep."""
    text = json.dumps(data)
    roll = rng.random()
    if roll < 0.08:
        return text[: rng.randint(0, len(text))]
    if roll < 0.12:
        return text.encode() + b"\xff\xfe\x80"
    if roll < 0.15:
        return deep_json(rng.choice([100, 5000, 200_000]))
    if roll < 0.18:
        return "here you go:\n```json\n" + text + "\n```"
    return text


# --------------------------------------------------------------------------- prompts
def prompt(rng: random.Random, categories: list[str], graspable: list[str], containers: list[str]) -> str:
    """A prompt: sensible, grammatical, damaged, soup, unicode junk, very long, huge numbers, empty or cluttered."""
    kind = rng.randrange(10)
    if kind >= 8:
        what = rng.choice(graspable).replace("_", " ")
        where = rng.choice(containers).replace("_", " ")
        extra = rng.choice(["", " with 3 distractors", " on a cluttered table", " and then the apple in the bowl"])
        return f"{rng.choice(['put', 'place', 'move'])} the {rng.choice(COLORS + [''])} {what} in the {where}{extra}"

    def phrase() -> str:
        count = rng.choice(["the", "a", "two", "3", "all the", "20", "the " + rng.choice(COLORS)])
        return f"{count} {rng.choice(categories).replace('_', ' ')}"

    def clause() -> str:
        verb = rng.choice(["put", "place", "move", "stack", "set"])
        return f"{verb} {phrase()} {rng.choice(RELATIONS)} {phrase()}"

    if kind == 0:
        return " and ".join(clause() for _ in range(rng.randint(1, 3)))
    if kind == 1:
        text = list(clause())
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(text) + 1)
            op = rng.random()
            if op < 0.4:
                text.insert(i, chr(rng.randrange(32, 0x2FFF)))
            elif op < 0.8 and text:
                del text[min(i, len(text) - 1)]
            else:
                text.insert(i, rng.choice([",", ".", " and ", " with 4 distractors", "'s", "-", "!"]))
        return "".join(text)
    if kind == 2:
        return " ".join(rng.choice(WORDS + categories) for _ in range(rng.randint(1, 40)))
    if kind == 3:
        return "".join(chr(rng.choice([rng.randrange(0, 0x20), rng.randrange(0x80, 0xD7FF),
                                       rng.randrange(0xE000, 0x10FFFF)])) for _ in range(rng.randint(1, 300)))
    if kind == 4:
        return (clause() + ". ") * rng.choice([10, 50, 100, 1000, 4000])
    if kind == 5:
        n = rng.choice(["10", "999999999999", "-4", "0", "1e9", "twenty thousand", "3.5", "2**70"])
        return f"put {n} {rng.choice(categories)} {rng.choice(RELATIONS)} the bowl"
    if kind == 6:
        return rng.choice(["", " ", "\n\t", ".", "...", "and", "the", "please", "?!"])
    return f"{clause()} with {rng.choice([0, 1, 4, 30, 31, 1000, -2])} distractors on a cluttered table"


# --------------------------------------------------------------------------- meshes
BOX_OBJ = ("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
           "f 1 3 2\nf 1 4 3\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\nf 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\n"
           "f 4 1 5\nf 4 5 8\n")


def mesh_file(rng: random.Random) -> tuple[str, bytes]:
    """A (suffix, bytes) mesh file: random bytes, a damaged box OBJ, NaN or huge vertices, flat, open, or fine."""
    kind = rng.randrange(10)
    lines = BOX_OBJ.splitlines()
    if kind == 0:
        return rng.choice([".obj", ".stl", ".ply", ".glb"]), rng.randbytes(rng.randint(0, 4000))
    if kind == 1:
        return ".obj", "\n".join(rng.sample(lines, rng.randint(0, len(lines)))).encode()
    if kind == 2:
        bad = rng.choice(["nan", "inf", "1e300", "-1e300", "1e-300", "x"])
        return ".obj", BOX_OBJ.replace("v 1 1 1", f"v {bad} 1 1").encode()
    if kind == 3:
        return ".obj", BOX_OBJ.replace("f 1 3 2", f"f 1 3 {rng.choice([0, 99, -50, 2**40])}").encode()
    if kind == 4:
        return ".obj", BOX_OBJ.replace(" 1\n", " 0\n").encode()  # flat
    if kind == 5:
        return ".obj", "\n".join(lines[:-2]).encode()  # open box
    if kind == 6:
        scale = rng.choice([1e-9, 1e-4, 1.0, 1e4, 1e9])
        return ".obj", "\n".join(" ".join(["v"] + [str(float(x) * scale) for x in ln.split()[1:]])
                                 if ln.startswith("v ") else ln for ln in lines).encode()
    if kind == 7:  # binary STL whose triangle count lies
        count = struct.pack("<I", rng.choice([0, 1, 10**9]))
        return ".stl", b"\x00" * 80 + count + rng.randbytes(50 * rng.randint(0, 3))
    if kind == 8:
        return ".ply", b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nend_header\n" + rng.randbytes(60)
    return ".obj", BOX_OBJ.encode()
