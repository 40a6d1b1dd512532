"""Word tables of the offline designer: verbs, numbers, spatial phrases, clutter, groups.

Everything here is plain data plus two small helpers: :func:`tokenize` (case,
punctuation, contractions and politeness removed; clause breaks kept as ``","``) and
:func:`extract_clutter` (the requested number of distractors, removed from the text).
"""

from __future__ import annotations

import re

from scenegen.errors import PromptError

SEP = ","
"""Token that marks a clause break (commas, full stops, semicolons)."""

MAX_COUNT = 20
"""Largest count of one kind of object a prompt may ask for."""
MAX_CLUTTER = 30
"""Largest number of distractors a prompt may ask for."""
MAX_PROMPT_CHARS = 2000
"""Longest prompt any designer accepts (longer ones are refused before any parsing or request)."""

NUMBERS: dict[str, int] = {
    w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split())
}
NUMBERS.update({"single": 1, "pair": 2, "couple": 2, "few": 3, "several": 3, "dozen": 12, "many": 6})

ARTICLES_DEF = frozenset({"the", "this", "that", "these", "those", "its", "their", "my", "your"})
ARTICLES_INDEF = frozenset({"a", "an", "some", "any"})
QUANT_ALL = frozenset({"all", "every", "each", "both"})
NEW_WORDS = frozenset({"another", "other", "second", "third", "more", "extra"})
PRONOUNS = frozenset({"it", "them", "they", "both"})

SIZES: dict[str, str] = {
    "small": "small", "little": "small", "tiny": "small", "mini": "small", "smaller": "small",
    "smallest": "small", "medium": "medium", "mid": "medium", "midsize": "medium", "large": "large",
    "big": "large", "huge": "large", "larger": "large", "bigger": "large", "biggest": "large",
    "largest": "large", "giant": "large",
}
COLOR_SYNONYMS: dict[str, str] = {
    "grey": "gray", "gold": "yellow", "golden": "yellow", "violet": "purple", "transparent": "clear",
    "navy": "blue", "crimson": "red", "beige": "brown", "tan": "brown", "wooden": "wood", "steel": "silver",
}
MATERIALS: dict[str, str] = {
    "plastic": "plastic", "ceramic": "ceramic", "porcelain": "ceramic", "metal": "metal",
    "metallic": "metal", "glass": "glass", "cardboard": "cardboard", "paper": "cardboard",
    "rubber": "rubber", "foam": "foam",
}
IGNORED_ADJECTIVES = frozenset(
    "empty full dirty clean old new shiny same remaining whole fresh ripe round square tall short "
    "long thin thick heavy light dark bright pale plain striped spotted nearby closest nearest "
    "only single".split())
FILLERS = frozenset(
    "please kindly carefully gently quickly slowly just now also too then thanks okay ok "
    "robot finally first firstly secondly lastly afterwards me us".split())
POLITE_PHRASES: tuple[tuple[str, ...], ...] = tuple(tuple(p.split()) for p in (
    "can you", "could you", "would you mind", "would you", "will you", "i want you to",
    "i need you to", "i would like you to", "go ahead and", "let us", "try to", "you should",
    "you need to", "help me", "for me", "thank you", "after that", "and then", "once done",
))
SEPARATORS = frozenset({SEP, "and", "then"})

# Verb families. MOVE needs a destination; PICK may leave it to a later clause.
_VERB_BASES: dict[str, str] = {
    **{v: "move" for v in "put place move drop set bring transfer insert throw toss position "
       "relocate carry slide push shift load deposit store hang stick".split()},
    **{v: "pick" for v in "pick take grab lift remove get fetch retrieve grasp".split()},
    "stack": "stack", "pile": "stack",
    "flip": "flip", "turn": "turn", "invert": "invert", "upend": "invert", "stand": "stand",
    "right": "stand", "lay": "lay", "knock": "topple", "tip": "topple", "topple": "topple",
    **{v: "sort" for v in "sort separate organize organise group arrange".split()},
    **{v: "gather" for v in "gather collect tidy consolidate".split()},
}


def _forms(verb: str) -> set[str]:
    """Return simple inflections of a verb (``put``, ``puts``, ``putting``, ``placed``)."""
    out = {verb, verb + "s", verb + "es"}
    if verb.endswith("e"):
        out |= {verb[:-1] + "ing", verb + "d"}
    elif (len(verb) <= 4 and len(verb) >= 3 and verb[-1] not in "aeiouwxy"
          and verb[-2] in "aeiou" and verb[-3] not in "aeiou"):
        out |= {verb + verb[-1] + "ing", verb + verb[-1] + "ed"}
    else:
        out |= {verb + "ing", verb + "ed"}
    return out


VERBS: dict[str, tuple[str, str]] = {}
"""Inflected verb form -> (family, base form)."""
for _base, _fam in _VERB_BASES.items():
    for _f in _forms(_base):
        VERBS.setdefault(_f, (_fam, _base))
VERBS.update({"took": ("pick", "take"), "got": ("pick", "get"), "threw": ("move", "throw"),
              "brought": ("move", "bring"), "laid": ("lay", "lay"), "stood": ("stand", "stand")})

# Spatial phrases, longest first when matching. "to" alone is resolved by the object's flags.
SPATIAL: tuple[tuple[tuple[str, ...], str], ...] = tuple(sorted(
    ((tuple(p.split()), rel) for p, rel in (
        ("in", "in"), ("into", "in"), ("inside", "in"), ("inside of", "in"), ("within", "in"),
        ("in to", "in"), ("on", "on"), ("onto", "on"), ("on to", "on"), ("upon", "on"), ("atop", "on"),
        ("on top of", "on"), ("over", "on"), ("to the top of", "on"),
        ("next to", "near"), ("beside", "near"), ("besides", "near"), ("by", "near"), ("near", "near"),
        ("near to", "near"), ("nearby", "near"), ("close to", "near"), ("closer to", "near"),
        ("alongside", "near"), ("adjacent to", "near"), ("right next to", "near"),
        ("to the left of", "left_of"), ("left of", "left_of"), ("on the left of", "left_of"),
        ("to the left side of", "left_of"), ("on the left side of", "left_of"),
        ("to the right of", "right_of"), ("right of", "right_of"), ("on the right of", "right_of"),
        ("to the right side of", "right_of"), ("on the right side of", "right_of"),
        ("in front of", "in_front_of"), ("to the front of", "in_front_of"),
        ("behind", "behind"), ("in back of", "behind"), ("to the back of", "behind"),
        ("at the back of", "behind"),
        ("away from", "far_from"), ("far from", "far_from"), ("far away from", "far_from"),
        ("farther from", "far_from"), ("further from", "far_from"),
        ("to", "to"), ("toward", "to"), ("towards", "to"),
    )), key=lambda kv: -len(kv[0])))
SOURCES: tuple[tuple[tuple[str, ...], str], ...] = tuple(sorted(
    ((tuple(p.split()), rel) for p, rel in (
        ("from", "from"), ("out of", "in"), ("from inside", "in"), ("from in", "in"),
        ("off", "on"), ("off of", "on"), ("from on", "on"), ("from on top of", "on"),
        ("out from", "in"), ("from within", "in"),
    )), key=lambda kv: -len(kv[0])))
RELATIVE_MARKERS: tuple[tuple[tuple[str, ...], str], ...] = tuple(sorted(((tuple(p.split()), p) for p in (
    "that is", "which is", "that are", "which are", "that s", "thats", "currently", "sitting",
    "resting", "located", "that sits", "that rests", "which sits", "that is currently",
    "which is currently", "that are currently", "already", "that is already", "which is already",
    "that lies", "lying",
)), key=lambda kv: -len(kv[0])))
# Orientation phrases after the object: (words, kind) with kind upright | invert | over | lying.
ORIENTATIONS: tuple[tuple[tuple[str, ...], str], ...] = tuple(sorted(
    ((tuple(p.split()), k) for p, k in (
        ("upright", "upright"), ("right side up", "upright"), ("the right way up", "upright"),
        ("right way up", "upright"), ("up", "up"), ("upside down", "invert"), ("over", "over"),
        ("down", "down"), ("on its side", "lying"), ("on their sides", "lying"),
        ("on their side", "lying"), ("flat", "lying"),
    )), key=lambda kv: -len(kv[0])))
EACH_OTHER: tuple[tuple[tuple[str, ...], str], ...] = tuple(sorted(((tuple(p.split()), p) for p in (
    "on top of each other", "on top of one another", "on each other", "on one another",
    "into a tower", "in a tower", "into a pile", "in a pile", "into a stack", "in a stack",
    "one on top of the other", "together",
)), key=lambda kv: -len(kv[0])))
IGNORED_TAILS: tuple[tuple[tuple[str, ...], str], ...] = tuple((tuple(p.split()), p) for p in (
    "by color", "by colour", "by type", "by kind", "by size", "by category", "if you can",
    "one by one", "one at a time", "please", "as well", "nearby", "around", "scattered around",
    "in the scene", "in view", "for now", "right now", "if possible",
))

# "... in the bowl on the left": a side with no reference object, ignored at the end of a step.
DANGLING_SIDES: tuple[tuple[tuple[str, ...], str], ...] = tuple(sorted(
    ((tuple(f"{prep} the {side}{tail}".split()), side) for prep in ("on", "to", "at")
     for side in ("left", "right", "front", "back") for tail in ("", " side", " hand side")),
    key=lambda kv: -len(kv[0])))

# Group words -> catalog group names (or category names) they cover.
GROUPS: dict[str, tuple[str, ...]] = {
    "fruit": ("fruit",), "fruits": ("fruit",), "vegetable": ("vegetable",), "vegetables": ("vegetable",),
    "veggies": ("vegetable",), "veg": ("vegetable",), "produce": ("fruit", "vegetable"),
    "food": ("fruit", "vegetable", "food"), "groceries": ("fruit", "vegetable", "food", "bottles_cans"),
    "tool": ("tools",), "tools": ("tools",), "toy": ("toys",), "toys": ("toys",),
    "kitchenware": ("kitchenware",), "utensils": ("spoon", "fork", "spatula", "knife"),
    "cutlery": ("spoon", "fork", "knife"), "silverware": ("spoon", "fork", "knife"), "hardware": ("hardware",),
    "electronics": ("electronics",), "gadgets": ("electronics",), "devices": ("electronics",),
    "stationery": ("office",),
    "parts": ("hardware",), "fasteners": ("hardware",), "drinks": ("bottles_cans",),
    "beverages": ("bottles_cans",),
}
GROUP_DEFAULT_COUNT = 3
"""Objects created for a group word without a count (one per category, cycling)."""

# Clutter phrases: (regex over the normalised text, distractor count or None = read group 1).
CLUTTER_PATTERNS: tuple[tuple[re.Pattern, int | None], ...] = tuple(
    (re.compile(p), c) for p, c in (
        (r"\b(?:with|and|among|amid|plus) (?:no|zero) (?:clutter|distractors?|distractor objects?|"
         r"other objects?|extra objects?)\b", 0),
        (r"\b(?:on|at|from|across) (?:a|an|the) (?:clean|empty|tidy|clear|bare) "
         r"(?:table|desk|counter|workbench|tabletop)\b", 0),
        (r"\b(?:with|and|among|amid|plus|add|between) (?:a |an )?(\w+|a few|a couple of) (?:other |more |extra |"
         r"random )?(?:distractors?|distractor objects?|clutter objects?|random objects?|other objects?|"
         r"extra objects?|objects? of clutter|clutter items?|distracting objects?)"
         r"(?: around| nearby| on the table| scattered around)?\b", None),
        (r"\b(?:with|and|in|among|amid) (?:a lot of|lots of|heavy|much|plenty of|a lot|loads of) "
         r"(?:clutter|distractors)\b", 8),
        (r"\b(?:with|and|in|among|amid) (?:some|a bit of|a little|light|moderate|little) "
         r"(?:clutter|distractors)\b", 4),
        (r"\b(?:on|at|from|across|in) (?:a|an|the) (?:cluttered|messy|busy|crowded|untidy) "
         r"(?:table|desk|counter|workbench|tabletop|scene)\b", 6),
        (r"\b(?:a|an|the) (?:cluttered|messy|busy|crowded|untidy) (?=table|desk|counter|workbench|tabletop)",
         6),
        (r"\b(?:with|and|amid|among) (?:clutter|distractors)\b", 3),
    ))


def _count_word(text: str) -> int | None:
    if text.strip() in ("a", "an"):
        return 1
    words = [w for w in text.split() if w not in ("a", "an", "of")]
    if len(words) == 1:
        w = words[0]
        if w.isdigit():
            return int(w)
        return NUMBERS.get(w)
    return None


def normalize(prompt: str) -> str:
    """Lower-case the prompt, expand contractions and turn punctuation into clause breaks."""
    s = prompt.lower().replace("\u2019", "'").replace("\u2018", "'")
    s = re.sub(r"\b(it|that|what|there)'s\b", r"\1 is", s)
    s = re.sub(r"\blet's\b", "let us", s)
    s = re.sub(r"\b(i|you|we)'d\b", r"\1 would", s)
    s = re.sub(r"'(?:s|d|ll|re|ve|m)\b", "", s)
    s = re.sub(r"[-_/]", " ", s)
    s = re.sub(r"[.;:!?,]+", f" {SEP} ", s)
    s = re.sub(r"[^a-z0-9, ]", " ", s)
    return " ".join(s.split())


def extract_clutter(text: str) -> tuple[str, int | None]:
    """Remove every clutter request from normalised text; return (text, largest count or None).

    Raises:
        PromptError: a clutter count is not a number or is too large.

    """
    best: int | None = None
    for _ in range(8):
        text, count = _extract_one(text)
        if count is None:
            break
        best = count if best is None else max(best, count)
    return text, best


def _extract_one(text: str) -> tuple[str, int | None]:
    for pattern, fixed in CLUTTER_PATTERNS:
        m = pattern.search(text)
        if not m:
            continue
        if fixed is None:
            count = _count_word(m.group(1))
            if count is None:
                raise PromptError(f"cannot read the number of distractors in '{m.group(0)}'; "
                                  "write it as a number, e.g. 'with 4 distractors'")
        else:
            count = fixed
        if count > MAX_CLUTTER:
            raise PromptError(f"{count} distractors asked for; at most {MAX_CLUTTER} are supported")
        keep = "the " if pattern.pattern.endswith("(?=table|desk|counter|workbench|tabletop)") else " "
        return " ".join((text[:m.start()] + keep + text[m.end():]).split()), count
    return text, None


def check_prompt_length(prompt: str) -> str:
    """Return ``prompt`` if it is at most :data:`MAX_PROMPT_CHARS` long (every designer calls this first).

    Raises:
        PromptError: the prompt is longer (a task is a sentence or two, not a document).

    """
    if isinstance(prompt, str) and len(prompt) > MAX_PROMPT_CHARS:
        raise PromptError(f"the prompt is {len(prompt)} characters long; at most {MAX_PROMPT_CHARS} are supported. "
                          "Describe one task in a sentence or two, e.g. 'put the banana in the bowl'")
    return prompt


def tokenize(prompt: str) -> tuple[list[str], int | None]:
    """Normalise a prompt into tokens (politeness and fillers removed) and a clutter count.

    Raises:
        PromptError: the prompt is empty, longer than :data:`MAX_PROMPT_CHARS`, or its clutter
            request is unreadable.

    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise PromptError("the prompt is empty; describe a task, e.g. 'put the banana in the bowl'")
    check_prompt_length(prompt)
    text, clutter = extract_clutter(normalize(prompt))
    words = text.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        hit = next((p for p in POLITE_PHRASES if tuple(words[i:i + len(p)]) == p), None)
        if hit is not None:
            # "and then" / "after that" are clause breaks; the rest is politeness.
            if hit in (("and", "then"), ("after", "that"), ("once", "done")):
                out.append(SEP)
            i += len(hit)
            continue
        w = words[i]
        if w == "then":
            out.append(SEP)
        elif w not in FILLERS:
            out.append(w)
        i += 1
    # Collapse repeated clause breaks and trim them at the ends.
    tokens: list[str] = []
    for w in out:
        if w == SEP and (not tokens or tokens[-1] == SEP):
            continue
        tokens.append(w)
    while tokens and tokens[-1] in (SEP, "and"):
        tokens.pop()
    if not tokens:
        raise PromptError(f"the prompt {prompt.strip()!r} names no task; describe one, "
                          "e.g. 'put the banana in the bowl'")
    return tokens, clutter
