"""The robot's meshes for the exporters: visual parts with their material colours, placed visuals.

A robot visual mesh (an OBJ with a material library) is split into one part per material;
each part carries one colour: the material's diffuse colour times the mean of its texture
(the Panda's meshes sample a small colour palette). Formats without per-vertex colours
(MJCF) or with one material per mesh (USD) draw the robot from these parts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenegen.errors import ExportError
from scenegen.export._common import pose_matrix
from scenegen.export._robot import UrdfModel, model_link_poses, parse_urdf
from scenegen.scene import Pose


@dataclass(frozen=True)
class VisualPart:
    """One single-material piece of a robot link's visual mesh."""

    link: str
    """URDF link the part belongs to."""
    name: str
    """Unique name: ``<link>_v<visual>_<material>``."""
    vertices: np.ndarray
    """Nx3 vertices in the link frame (the visual's origin and scale applied)."""
    faces: np.ndarray
    """Mx3 triangle indices."""
    rgba: tuple[float, float, float, float]
    """Colour of the part's material."""


@dataclass(frozen=True)
class RobotVisual:
    """One visual mesh of the robot placed in the world."""

    link: str
    """URDF link the mesh belongs to."""
    mesh: Path
    """Mesh file on disk."""
    transform: np.ndarray
    """4x4 world transform of the mesh (scale included)."""


def _load(path: Path, **kw):
    import trimesh

    try:
        return trimesh.load(str(path), **kw)
    except Exception as exc:  # trimesh raises many types for broken files
        raise ExportError(f"cannot read robot mesh {path} ({exc}); reinstall the robot's files") from None


def _material_rgba(geom) -> tuple[float, float, float, float]:
    from trimesh.visual.color import uv_to_color

    mat = getattr(geom.visual, "material", None)
    diffuse = getattr(mat, "diffuse", None)
    rgba = np.asarray(diffuse if diffuse is not None else (230, 230, 230, 255), dtype=float)[:4] / 255.0
    image, uv = getattr(mat, "image", None), getattr(geom.visual, "uv", None)
    if image is not None and uv is not None and len(uv):
        rgba = rgba * np.asarray(uv_to_color(uv, image), dtype=float)[:, :4].mean(axis=0) / 255.0
    return tuple(round(float(c), 4) for c in rgba)  # type: ignore[return-value]


@functools.lru_cache(maxsize=64)
def _mesh_parts(path: str, mtime: float) -> tuple[tuple[np.ndarray, np.ndarray, tuple], ...]:
    import trimesh

    loaded = _load(Path(path), process=False, group_material=True)
    geoms = list(loaded.geometry.values()) if isinstance(loaded, trimesh.Scene) else [loaded]
    return tuple((np.asarray(g.vertices, dtype=float), np.asarray(g.faces, dtype=np.int64), _material_rgba(g))
                 for g in geoms if len(g.faces))


def visual_parts(model: UrdfModel) -> list[VisualPart]:
    """Every link's visual meshes as single-material parts in the link frame.

    Raises:
        ExportError: a mesh is missing or unreadable.

    """
    out = []
    for link in model.links.values():
        for k, vis in enumerate(link.visuals):
            if not vis.mesh.is_file():
                raise ExportError(f"robot mesh {vis.mesh} is missing; reinstall the robot's files")
            m = vis.origin @ np.diag([*vis.scale, 1.0])
            for i, (v, f, rgba) in enumerate(_mesh_parts(str(vis.mesh), vis.mesh.stat().st_mtime)):
                out.append(VisualPart(link.name, f"{link.name}_v{k}_{i:02d}", v @ m[:3, :3].T + m[:3, 3], f, rgba))
    return out


def robot_visuals(urdf: Path, base: Pose, q: dict[str, float]) -> list[RobotVisual]:
    """The robot's visual meshes placed at joint positions ``q`` (forward kinematics of the URDF)."""
    model = parse_urdf(urdf)
    poses = model_link_poses(model, pose_matrix(base), q)
    return [RobotVisual(link.name, vis.mesh, poses[link.name] @ vis.origin @ np.diag([*vis.scale, 1.0]))
            for link in model.links.values() for vis in link.visuals]


@functools.lru_cache(maxsize=64)
def _robot_mesh_cached(path: str, mtime: float):
    mesh = _load(Path(path), force="mesh")
    try:
        mesh.visual = mesh.visual.to_color()  # palette textures -> vertex colours (small, fast to write)
    except Exception:  # noqa: BLE001 - a mesh without usable texture keeps its visual
        pass
    return mesh


def robot_mesh(path: Path):
    """Load a robot visual mesh with vertex colours (cached per process; a copy is returned).

    Raises:
        ExportError: the mesh cannot be read.

    """
    if not path.is_file():
        raise ExportError(f"cannot read robot mesh {path} (missing); reinstall the robot's files")
    return _robot_mesh_cached(str(path), path.stat().st_mtime).copy()
