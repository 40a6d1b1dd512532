"""Primitive collision proxies: a box, a cylinder along an axis or a sphere, from a builder's spec."""

from __future__ import annotations

import numpy as np
import trimesh

from scenegen.errors import AssetError

PRIMITIVES = ("box", "cylinder", "sphere")

AXIS_RPY = {"z": (0.0, 0.0, 0.0), "x": (0.0, np.pi / 2, 0.0), "y": (-np.pi / 2, 0.0, 0.0)}
"""Roll-pitch-yaw turning a z-axis cylinder onto each axis."""


def axis_rotation(axis: str) -> np.ndarray:
    """4x4 rotation turning the z axis onto ``axis`` (``x``, ``y`` or ``z``)."""
    if axis not in AXIS_RPY:
        raise AssetError(f"cylinder axis {axis!r} is unknown; use x, y or z")
    return trimesh.transformations.euler_matrix(*AXIS_RPY[axis], axes="sxyz")


def primitive_mesh(spec: dict, center: np.ndarray) -> trimesh.Trimesh:
    """Mesh of a primitive spec (box / cylinder along its ``axis``, z by default / sphere) centred on ``center``."""
    kind = spec.get("type")
    try:
        if kind == "box":
            m = trimesh.creation.box(extents=[float(x) for x in spec["extents"]])
        elif kind == "cylinder":
            m = trimesh.creation.cylinder(radius=float(spec["radius"]), height=float(spec["height"]),
                                          sections=48)
            m.apply_transform(axis_rotation(spec.get("axis", "z")))
        elif kind == "sphere":
            m = trimesh.creation.icosphere(subdivisions=3, radius=float(spec["radius"]))
        else:
            raise AssetError(f"unknown collision primitive {kind!r}; use one of {', '.join(PRIMITIVES)}")
    except (KeyError, TypeError, ValueError) as exc:
        raise AssetError(f"collision primitive {spec} is malformed ({exc}); give its sizes") from None
    m.apply_translation(center)
    return m
