"""Token stream -> clauses: a small hand-written parser for tabletop task prompts.

A clause is ``[verb] objects [from/out of X] [spatial phrase Y] [orientation] [with Z]``.
A clause without a verb reuses the previous verb ("put the apple in the bowl and the
cup on the plate"). Noun phrases carry counts, colours, sizes, materials, group words
("the fruit"), pronouns ("it", "them") and relative clauses ("the apple that is in the
bowl"). The result is plain data; :mod:`scenegen.design.rules` turns it into a graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scenegen.catalog import Catalog
from scenegen.design import lexicon as lx
from scenegen.errors import PromptError

_PARTICLES = frozenset({"up", "down", "away", "back", "there", "here", "out", "together"})
_STRUCTURE = frozenset({lx.SEP, "and", "then", "with", "of", "from", "off", "out"}) | set(lx.VERBS)


@dataclass
class NP:
    """A noun phrase: what the prompt names, before it is resolved to graph nodes."""

    head: str
    """``noun``, ``group``, ``pronoun`` or ``each_other``."""
    word: str
    """The words as written (for messages)."""
    category: str | None = None
    """Catalog category of a ``noun`` head."""
    noun: str = ""
    """The head noun in its singular form ("coffee mug"), to tell synonyms apart."""
    groups: tuple[str, ...] = ()
    """Catalog groups (or categories) of a ``group`` head."""
    plural: bool = False
    """The phrase names several objects."""
    count: int | None = None
    """Explicit count ("three apples"), or None."""
    quant_all: bool = False
    """Quantified with all/every/each."""
    definite: bool = False
    """Introduced by "the" (may refer to an object named before)."""
    new: bool = False
    """Introduced by a/an/another: always a new object."""
    attrs: dict = field(default_factory=dict)
    """Attributes fixed by the prompt: color, size, material."""
    where: tuple[str, NP] | None = None
    """Initial placement from a relative clause: (relation, other phrase)."""


@dataclass
class Clause:
    """One step of the task."""

    verb: str
    """Verb family: move, pick, stack, flip, turn, invert, stand, lay, topple, sort, gather."""
    verb_word: str
    """The verb as written (base form)."""
    subjects: list[NP]
    """What the step acts on."""
    source: NP | None = None
    """Where the subjects start ("out of the bowl")."""
    source_rel: str = "from"
    """``in``, ``on`` or ``from`` (decided by the source's flags)."""
    dest: tuple[str, NP] | None = None
    """Destination: (relation word or ``to``, phrase)."""
    orient: str | None = None
    """Orientation word: upright, invert, over, lying, up, down."""
    chain: bool = False
    """"on top of each other" / "together": the subjects relate to one another."""
    extras: list[NP] = field(default_factory=list)
    """Objects named with "with" (explicit distractors)."""
    elided: bool = False
    """The verb was left out and copied from the previous clause."""


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class Parser:
    """Parse tokens from :func:`scenegen.design.lexicon.tokenize` into clauses."""

    def __init__(self, tokens: list[str], catalog: Catalog) -> None:
        self.t = tokens
        self.i = 0
        self.cat = catalog
        self.phrases: dict[tuple[str, ...], tuple[str, bool]] = {
            tuple(w.split()): v for w, v in catalog.words.items()}
        self.max_len = max(len(p) for p in self.phrases)
        self.singular: dict[str, str] = {}
        for c in catalog:
            for pl in c.plurals:
                self.singular[pl] = max(c.synonyms, key=lambda s, pl=pl: (_common_prefix(s, pl), -len(s)))

    # ------------------------------------------------------------------ helpers
    def tok(self, k: int = 0) -> str | None:
        """Token at offset ``k`` or None past the end."""
        j = self.i + k
        return self.t[j] if 0 <= j < len(self.t) else None

    def _match(self, phrases, at: int | None = None):
        """Return (phrase, value) of the longest phrase starting at ``at`` (no advance)."""
        j = self.i if at is None else at
        for words, val in phrases:
            if tuple(self.t[j:j + len(words)]) == words:
                return words, val
        return None

    def _take(self, phrases) -> object | None:
        hit = self._match(phrases)
        if hit is None:
            return None
        self.i += len(hit[0])
        return hit[1]

    def _noun_at(self, j: int) -> tuple[int, str, bool] | None:
        """Longest catalog phrase at index ``j``: (length, category, plural)."""
        for n in range(min(self.max_len, len(self.t) - j), 0, -1):
            hit = self.phrases.get(tuple(self.t[j:j + n]))
            if hit:
                return n, hit[0], hit[1]
        return None

    def _color(self, w: str | None) -> str | None:
        if w is None:
            return None
        w = lx.COLOR_SYNONYMS.get(w, w)
        return w if w in self.cat.colors else None

    def _modifier_or_noun(self, j: int) -> bool:
        """True if the token at ``j`` can continue a noun phrase (adjective or noun)."""
        w = self.t[j] if j < len(self.t) else None
        if w is None:
            return False
        return bool(w in lx.SIZES or self._color(w) or w in lx.MATERIALS or w in lx.IGNORED_ADJECTIVES
                    or w in lx.GROUPS or self._noun_at(j))

    def np_start(self, j: int | None = None) -> bool:
        """True if a noun phrase can start at index ``j``."""
        j = self.i if j is None else j
        w = self.t[j] if j < len(self.t) else None
        if w is None or w in _STRUCTURE or self._match(lx.SPATIAL, j) or self._match(lx.SOURCES, j):
            return False
        return True

    def _end(self) -> bool:
        return self.tok() is None or self.tok() == lx.SEP

    # ------------------------------------------------------------------ clauses
    def parse(self) -> list[Clause]:
        """Parse every clause of the prompt."""
        clauses: list[Clause] = []
        while self.i < len(self.t):
            while self.tok() in lx.SEPARATORS:
                self.i += 1
            if self.tok() is None:
                break
            clauses.append(self.clause(clauses[-1] if clauses else None))
        return clauses

    def clause(self, prev: Clause | None) -> Clause:
        """Parse one clause; ``prev`` supplies an elided verb."""
        w = self.tok()
        verb = lx.VERBS.get(w or "")
        if verb is not None:
            self.i += 1
            family, base = verb
        else:
            if prev is None:
                raise PromptError(f"no task verb found (the prompt starts with '{w}'); start with a verb "
                                  "such as put, place, move, stack, flip, sort or gather")
            nxt = self.tok(1)
            if w not in lx.GROUPS and not self._noun_at(self.i) and not self._modifier_or_noun(self.i) \
                    and nxt in lx.ARTICLES_DEF | lx.ARTICLES_INDEF:
                raise PromptError(f"unknown verb '{w}'; use put, place, move, stack, flip, sort or gather")
            family, base = prev.verb, prev.verb_word
        c = Clause(family, base, [], elided=verb is None)
        if verb is not None and self.tok() in ("up", "down", "out", "away") \
                and self.tok(1) not in (None, lx.SEP, "and") \
                and not self._match(lx.SPATIAL) and not self._match(lx.SOURCES):
            self.i += 1
        if self.tok() == "over" and self.np_start(self.i + 1) and family in ("turn", "flip", "topple"):
            c.orient = "over"
            self.i += 1
        if self.np_start():
            c.subjects = self.np_list()
        else:
            c.subjects = [NP("pronoun", "it", plural=True)]
        self._tail(c)
        return c

    def np_list(self) -> list[NP]:
        """Parse ``NP (and|, NP)*``."""
        nps = [self.np()]
        while self.tok() in ("and", lx.SEP):
            j = self.i + 1
            if self.t[j:j + 1] == ["and"]:
                j += 1
            if j >= len(self.t) or not self.np_start(j) or self.t[j] in lx.VERBS:
                break
            self.i = j
            nps.append(self.np())
        return nps

    def _tail(self, c: Clause) -> None:
        while True:
            if self.tok() == lx.SEP and c.dest is None and c.source is None \
                    and (self._match(lx.SPATIAL, self.i + 1) or self._match(lx.SOURCES, self.i + 1)):
                self.i += 1  # "put the banana, in the bowl"
            if self._end():
                return
            w = self.tok()
            if w == "and":
                return
            if self._take(lx.IGNORED_TAILS) is not None:
                continue
            if self._orientation(c):
                continue
            side = self._match(lx.DANGLING_SIDES)
            if side is not None and self.tok(len(side[0])) in (None, lx.SEP, "and"):
                self.i += len(side[0])
                continue
            if self._take(lx.EACH_OTHER) is not None:
                c.chain = True
                continue
            src = self._take(lx.SOURCES)
            if src is not None:
                c.source, c.source_rel = self.np(), str(src)
                continue
            rel = self._take(lx.SPATIAL)
            if rel is not None:
                np = self.np()
                if c.dest is None:
                    c.dest = (str(rel), np)
                elif np.category == "table" and rel in ("on", "to"):
                    pass  # "... in the bowl on the table": already so
                elif c.dest[1].where is None:
                    c.dest[1].where = (str(rel), np)
                else:
                    raise PromptError(f"too many places for '{c.dest[1].word}'; give one destination")
                continue
            if w == "with" and self.np_start(self.i + 1):
                self.i += 1
                c.extras += self.np_list()
                continue
            if w in _PARTICLES:
                self.i += 1
                continue
            rest = " ".join(x for x in self.t[self.i:] if x != lx.SEP)
            raise PromptError(f"could not understand '{rest}'; use phrases like 'in the bowl', "
                              "'on the plate', 'next to the cup' or 'to the left of the box'")

    def _orientation(self, c: Clause) -> bool:
        hit = self._match(lx.ORIENTATIONS)
        if hit is None:
            return False
        words, kind = hit
        after = self.tok(len(words))
        if kind in ("up", "down", "over") and after is not None and after not in (lx.SEP, "and") \
                and self.np_start(self.i + len(words)):
            return False
        self.i += len(words)
        if kind in ("up", "down") and c.verb not in ("stand", "lay", "turn"):
            return True
        c.orient = str(kind)
        return True

    # ------------------------------------------------------------------ noun phrases
    def np(self) -> NP:
        """Parse one noun phrase (raises PromptError naming an unknown word)."""
        start = self.i
        p = NP("noun", "")
        while (w := self.tok()) is not None:
            hit = self._noun_at(self.i)
            if hit and hit[0] > 1 and w not in lx.NUMBERS and not w.isdigit():
                break
            nxt = self.tok(1)
            if w in lx.ARTICLES_DEF:
                p.definite = True
            elif w in ("a", "an") and nxt in lx.NUMBERS and nxt not in ("one",):
                p.count = lx.NUMBERS[nxt]
                self.i += 1
                if self.tok(1) == "of":
                    self.i += 1
            elif w in lx.ARTICLES_INDEF:
                p.new = True
            elif w in lx.QUANT_ALL and (w != "both" or self._modifier_or_noun(self.i + 1)
                                        or self.tok(1) in lx.ARTICLES_DEF | {"of"}):
                p.quant_all = True
                p.count = 2 if w == "both" else p.count
                if nxt == "of":
                    self.i += 1
            elif w in lx.NEW_WORDS:
                p.new = True
            elif w.isdigit() or (w in lx.NUMBERS and self._modifier_or_noun(self.i + 1)):
                p.count = int(w) if w.isdigit() else lx.NUMBERS[w]
                if nxt == "of":
                    self.i += 1
            elif w in lx.SIZES:
                p.attrs["size"] = lx.SIZES[w]
            elif self._color(w) and (not self._noun_at(self.i) or self._modifier_or_noun(self.i + 1)):
                p.attrs["color"] = self._color(w)
            elif w in lx.MATERIALS and (not self._noun_at(self.i) or self._modifier_or_noun(self.i + 1)):
                p.attrs["material"] = lx.MATERIALS[w]
            elif w in lx.IGNORED_ADJECTIVES and self._modifier_or_noun(self.i + 1):
                pass
            else:
                break
            self.i += 1
        self._head(p, start)
        if p.count is not None and not 1 <= p.count <= lx.MAX_COUNT:
            raise PromptError(f"'{p.word}': counts must be between 1 and {lx.MAX_COUNT}, got {p.count}")
        if self._take(lx.RELATIVE_MARKERS) is not None:
            rel = self._take(lx.SPATIAL)
            if rel is None:
                rel = self._take(lx.SOURCES)
            if rel is None:
                raise PromptError(f"'{p.word} ...': say where it is, e.g. 'that is in the bowl'")
            p.where = (str(rel), self.np())
        return p

    def _head(self, p: NP, start: int) -> None:
        w = self.tok()
        modified = self.i > start
        noun = self._noun_at(self.i)
        if w is None or w == lx.SEP:
            before = " ".join(self.t[max(0, start - 2):self.i]) or "the prompt"
            raise PromptError(f"'{before}' is not followed by an object; name one, e.g. 'the banana'")
        if w in lx.PRONOUNS and not modified:
            p.head, p.word, p.plural = "pronoun", w, w != "it"
            self.i += 1
            return
        if noun and (noun[0] > 1 or w not in lx.GROUPS):
            if self._noun_at(self.i + noun[0]) and self.t[self.i + noun[0]] not in lx.VERBS:
                self.i += noun[0]  # a noun used as a modifier ("the toolbox bin"): the last noun is the head
                return self._head(p, start)
            n, p.category, p.plural = noun
            head = " ".join(self.t[self.i:self.i + n])
            p.noun = self.singular.get(head, head) if p.plural else head
            self.i += n
        elif w in lx.GROUPS:
            p.head, p.groups = "group", lx.GROUPS[w]
            p.plural = w not in ("tool", "toy", "vegetable") or (p.count or 1) > 1
            self.i += 1
        elif w not in _STRUCTURE and self.i + 1 < len(self.t) and self._modifier_or_noun(self.i + 1):
            self.i += 1  # an unknown adjective before a known noun ("the dirty mug")
            return self._head(p, start)
        else:
            self._unknown(w)
        p.word = " ".join(x for x in self.t[start:self.i])
        if p.count is not None and p.count > 1:
            p.plural = True
        elif p.quant_all and p.count is None:
            p.plural = True

    def _unknown(self, w: str) -> None:
        if w in lx.VERBS or w in _STRUCTURE or self._match(lx.SPATIAL) or self._match(lx.SOURCES):
            raise PromptError(f"expected an object before '{w}'; name what to move, e.g. 'the banana'")
        close = self.cat.closest(w) or self.cat.closest(w.rstrip("s"))
        hint = f"closest categories: {', '.join(close)}" if close else "no close category"
        raise PromptError(f"unknown object '{w}' ({hint}); run `scenegen catalog` to list known objects")
