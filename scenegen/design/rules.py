"""The embedded offline designer: English task prompt -> base SceneGraph, no network.

:func:`parse` builds the *base* graph of a prompt: the table, the objects the prompt
names (targets, receptacles, landmarks, sources and explicit distractors) with the
attributes it fixes, their initial ``on``/``in`` placements, and the goals. The
variation sampler (:mod:`scenegen.design.variation`) then adds distractors and varies
attributes. :class:`RulesDesigner` ties both together behind the Designer protocol.

The pipeline inside: :mod:`~scenegen.design.lexicon` (normalise, tokens, clutter) ->
:mod:`~scenegen.design.parser` (clauses of noun phrases) -> :mod:`~scenegen.design.builder`
(nodes, placements, goals, validation).

Examples:
    >>> g = parse("put the banana in the bowl")
    >>> [(gl.subject, gl.predicate, gl.object) for gl in g.goals]
    [('banana_1', 'in', 'bowl_1')]

"""

from __future__ import annotations

from scenegen.catalog import Catalog, load_catalog
from scenegen.design import lexicon as lx
from scenegen.design.builder import Builder
from scenegen.design.parser import Parser
from scenegen.errors import PromptError
from scenegen.graph import SceneGraph
from scenegen.graph_schema import schema_error

_LISTS = ("objects", "relations", "goals")


def parse(prompt: str, catalog: Catalog | None = None) -> SceneGraph:
    """Parse a prompt into its base scene graph (table, named objects, goals; no extra clutter).

    The requested number of distractors, if the prompt gives one ("with 4 distractors",
    "on a cluttered table"), is stored in ``graph.meta["clutter"]`` for the variation sampler.

    Args:
        prompt: An English task, e.g. ``"put the apple in the bowl and the cup on the plate"``.
        catalog: The object catalog (default: :func:`scenegen.catalog.load_catalog`).

    Returns:
        A validated :class:`SceneGraph`.

    Raises:
        PromptError: unknown words, impossible or ambiguous tasks, empty prompts (one line).

    """
    cat = catalog or load_catalog()
    tokens, clutter = lx.tokenize(prompt)
    clauses = Parser(tokens, cat).parse()
    if not clauses:
        raise PromptError("the prompt names no task; describe one, e.g. 'put the banana in the bowl'")
    b = Builder(prompt, cat)
    for k, c in enumerate(clauses):
        b.clause(c, clauses[k - 1] if k else None)
    return check_schema(b.finish(clutter))


def check_schema(graph: SceneGraph) -> SceneGraph:
    """Return ``graph`` if its JSON matches the graph schema, so every designed graph can be stored and reloaded.

    Raises:
        PromptError: naming what the schema refuses, e.g. ``80 goals where a scene graph holds at most 64``.

    """
    err = schema_error(graph.to_dict())
    if err is None:
        return graph
    path = list(err.absolute_path)
    limit = err.validator_value if err.validator == "maxItems" else None
    if len(path) == 1 and path[0] in _LISTS and limit is not None:
        raise PromptError(f"the prompt asks for {len(err.instance)} {path[0]} where a scene graph holds at most "
                          f"{limit}; ask for fewer objects or split the task into several prompts")
    where = "/".join(str(p) for p in path) or "<root>"
    raise PromptError(f"the designed scene graph does not match the schema at {where}: {err.message[:200]}; "
                      "simplify the prompt")


class RulesDesigner:
    """The embedded rule-based designer (offline, deterministic); implements ``Designer``."""

    name = "rules"

    def __init__(self, catalog: Catalog | None = None) -> None:
        self.catalog = catalog

    def design(self, prompt: str, n: int, seed: int = 0, *, clutter: int | None = None,
               extra_clutter: int = 0) -> list[SceneGraph]:
        """Return ``n`` valid graphs with distinct hashes for ``prompt``.

        ``clutter`` (distractors per graph, instead of the prompt's count or the random 1-3) and
        ``extra_clutter`` (added to that count) go to :func:`scenegen.design.variation.variants`;
        the instructions stay the prompt's words.

        Raises:
            PromptError: the prompt cannot be understood or names an impossible task.

        """
        from scenegen.design.variation import variants

        base = parse(prompt, self.catalog)
        out = variants(base, n, seed, catalog=self.catalog, clutter=clutter, extra_clutter=extra_clutter)
        for g in out:
            check_schema(g)  # distractors may push a large base graph over the schema's limits
            g.meta["designer"] = self.name
        return out
