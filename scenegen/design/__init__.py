"""Prompt -> scene graphs: the offline rules designer, the variation sampler and the registry."""

from scenegen.design.registry import design, get_designer, register_designer
from scenegen.design.rules import RulesDesigner, parse
from scenegen.design.variation import variants

__all__ = ["RulesDesigner", "design", "get_designer", "parse", "register_designer", "variants"]
