"""Shared fixtures."""

from __future__ import annotations

import os

import pytest

# MuJoCo picks its OpenGL backend when first imported: headless EGL for mujoco.Renderer in tests.
os.environ.setdefault("MUJOCO_GL", "egl")

from scenegen.catalog import load_catalog
from scenegen.graph import SceneGraph


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture
def banana_bowl() -> SceneGraph:
    """A minimal valid graph: banana and bowl on the table, goal banana in bowl."""
    g = SceneGraph("put the banana in the bowl")
    g.add_object("table", "table", "support")
    g.add_object("banana_1", "banana", "target", attributes={"color": "yellow"})
    g.add_object("bowl_1", "bowl", "receptacle", attributes={"color": "blue"})
    g.add_relation("banana_1", "on", "table")
    g.add_relation("bowl_1", "on", "table")
    g.add_goal("banana_1", "in", "bowl_1")
    return g
