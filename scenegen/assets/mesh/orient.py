"""Orientation of a mesh in the asset frame: its up axis to ``+z``, its long horizontal axis to ``+x``.

:func:`orient_z_up` turns a given up axis (:data:`UP_AXES`) to ``+z``; :func:`align_long_axis`
turns the principal horizontal axis onto ``+x`` (generated meshes, :mod:`scenegen.assets.mesh.cleanup`),
:func:`turn_long_side_to_x` only makes the quarter turn that puts the longer bounding-box side on
``+x`` (user meshes, :mod:`scenegen.assets.library`: a modelled object is usually square to its axes).
"""

from __future__ import annotations

import math

import numpy as np
import trimesh

from scenegen.errors import AssetError

UP_AXES = ("x", "y", "z", "-x", "-y", "-z")
"""Names of the axes a source mesh may use as 'up'."""


def up_rotation(up: str) -> np.ndarray:
    """Homogeneous rotation taking the ``up`` axis of a mesh to ``+z`` (right-handed, no mirror).

    ``"y"`` is the glTF / OBJ-viewer convention (y up, -z forward): it maps to a +90°
    turn about ``x`` (y -> z, z -> -y).

    Raises:
        AssetError: ``up`` is not one of :data:`UP_AXES`.

    """
    if up not in UP_AXES:
        raise AssetError(f"unknown up axis {up!r}; use one of {', '.join(UP_AXES)}")
    half = math.pi / 2
    table = {
        "z": (0.0, (1, 0, 0)), "-z": (math.pi, (1, 0, 0)),
        "y": (half, (1, 0, 0)), "-y": (-half, (1, 0, 0)),
        "x": (-half, (0, 1, 0)), "-x": (half, (0, 1, 0)),
    }
    angle, axis = table[up]
    rot = trimesh.transformations.rotation_matrix(angle, axis)
    return np.round(rot, 12)


def orient_z_up(mesh: trimesh.Trimesh, up: str = "z") -> trimesh.Trimesh:
    """Return a copy of ``mesh`` rotated so that its ``up`` axis becomes ``+z``."""
    out = mesh.copy()
    if up != "z":
        out.apply_transform(up_rotation(up))
    return out


def principal_yaw(mesh: trimesh.Trimesh) -> float:
    """Angle (radians) about ``z`` of the mesh's principal horizontal axis (area-weighted)."""
    centers = mesh.triangles_center[:, :2]
    w = mesh.area_faces
    if w.sum() <= 0:
        return 0.0
    mean = (centers * w[:, None]).sum(axis=0) / w.sum()
    d = centers - mean
    cov = (d * w[:, None]).T @ d / w.sum()
    vals, vecs = np.linalg.eigh(cov)
    if vals[1] - vals[0] <= 1e-9 * max(vals[1], 1e-30):
        return 0.0  # round in plan: no preferred direction
    ax = vecs[:, 1]
    return float(math.atan2(ax[1], ax[0]))


def turn_long_side_to_x(mesh: trimesh.Trimesh, rel_tol: float = 1e-6) -> bool:
    """Turn ``mesh`` (in place) a quarter turn about ``z`` when its bounding box is longer in ``y`` than in ``x``.

    Args:
        mesh: the mesh, turned in place.
        rel_tol: ``y`` must exceed ``x`` by more than this fraction.

    Returns:
        Whether it was turned (by +90 degrees).

    """
    ext = mesh.extents
    if ext[1] > ext[0] * (1 + rel_tol):
        mesh.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, (0, 0, 1)))
        return True
    return False


def align_long_axis(mesh: trimesh.Trimesh) -> tuple[trimesh.Trimesh, float]:
    """Turn ``mesh`` about ``z`` so its long horizontal axis is ``+x``.

    The principal axis of the horizontal surface distribution is turned onto ``x``; if the
    bounding box is then still longer in ``y`` a further quarter turn is made
    (:func:`turn_long_side_to_x`).

    Returns:
        ``(mesh, yaw_degrees)``; the mesh is a new object.

    """
    yaw = -principal_yaw(mesh)
    if abs(yaw) > math.pi / 2:  # the axis has no sign: take the smaller turn
        yaw -= math.copysign(math.pi, yaw)
    out = mesh.copy()
    out.apply_transform(trimesh.transformations.rotation_matrix(yaw, (0, 0, 1)))
    if turn_long_side_to_x(out):
        yaw += math.pi / 2
    yaw_deg = (math.degrees(yaw) + 180.0) % 360.0 - 180.0
    return out, round(yaw_deg, 6)
