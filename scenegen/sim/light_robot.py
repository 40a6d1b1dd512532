"""A render-light copy of a robot: same joints, inertia and collision, low-poly visuals.

PyBullet's TinyRenderer costs grow with the triangle count, and the stock Panda's visual
meshes hold about 100k triangles. :func:`light_robot` writes a copy of the robot's URDF
whose visual meshes are replaced by a coarse convex hull of each link's collision mesh
(at most ``HULL_VERTICES`` vertices, about 600 triangles for the whole Panda), registers
it as ``<name>_light`` and returns that spec. Physics is unchanged: joints, limits,
inertials, contact settings and collision geometry are the original ones.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from scenegen.errors import ConfigError
from scenegen.fileio import publish_dir
from scenegen.sim.light_assets import write_obj
from scenegen.sim.robots import RobotSpec, get_robot, register_robot

_LOCK = threading.Lock()
HULL_VERTICES = 32
"""Most vertices of each link's visual hull."""
_MESH = re.compile(r'filename="([^"]+)"')


def _resolve_mesh(ref: str, urdf_dir: Path) -> Path:
    rel = ref.split("://", 1)[1] if ref.startswith("package://") else ref
    path = Path(rel)
    return path if path.is_absolute() else (urdf_dir / path)


def coarse_hull(mesh_path: Path, out: Path, max_vertices: int = HULL_VERTICES) -> Path:
    """Write the convex hull of (a farthest-point subset of) a mesh's vertices as an OBJ file."""
    import numpy as np
    import trimesh

    mesh = trimesh.load(mesh_path, force="mesh", process=False)
    pts = np.unique(np.asarray(mesh.vertices, dtype=float).round(6), axis=0)
    if len(pts) > max_vertices:
        chosen = [int(np.argmax(pts[:, 2]))]
        dist = np.linalg.norm(pts - pts[chosen[0]], axis=1)
        while len(chosen) < max_vertices:
            i = int(np.argmax(dist))
            chosen.append(i)
            dist = np.minimum(dist, np.linalg.norm(pts - pts[i], axis=1))
        pts = pts[chosen]
    hull = trimesh.convex.convex_hull(pts)
    write_obj(out, hull.vertices, hull.faces)
    return out


def _light_urdf_text(text: str, urdf_dir: Path, hulls: dict[str, str]) -> str:
    """Swap each ``<visual>`` mesh for the link's collision mesh (or its coarse hull), with absolute paths."""
    links = re.split(r"(?=<link\s)", text)
    out = []
    for chunk in links:
        col = re.search(r"<collision>.*?</collision>", chunk, flags=re.S)
        col_mesh = _MESH.search(col.group(0)).group(1) if col and _MESH.search(col.group(0)) else None

        def visual(m: re.Match, col_mesh: str | None = col_mesh) -> str:
            body = m.group(0)
            if col_mesh is not None:
                body = _MESH.sub(f'filename="{hulls.get(col_mesh, col_mesh)}"', body)
            return body

        chunk = re.sub(r"<visual>.*?</visual>", visual, chunk, flags=re.S)
        out.append(chunk)
    joined = "".join(out)
    return _MESH.sub(lambda m: f'filename="{_resolve_mesh(m.group(1), urdf_dir).as_posix()}"', joined)


def light_robot(name: str | RobotSpec) -> RobotSpec:
    """Return (registering on first use) the render-light copy of a robot.

    The URDF is written once per content and source folder into the system temporary folder (it names the
    source's meshes by absolute path, so a copy made from another install, since removed, is not reused).

    Raises:
        ConfigError: the robot is unknown or its URDF cannot be read.

    """
    spec = get_robot(name)
    if spec.name.endswith("_light"):
        return spec
    light_name = f"{spec.name}_light"
    src = spec.urdf_path().resolve()  # the copy names its meshes by absolute path: the real one, not a link's
    try:
        text = src.read_text()
    except OSError as exc:
        raise ConfigError(f"robot {spec.name}: cannot read {src} ({exc}); fix RobotSpec.urdf") from None
    # the source's folder is in the key: a copy written from another install names that install's meshes
    digest = hashlib.sha256(f"{HULL_VERTICES}:{src.parent}:{text}".encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "scenegen_light_robots" / f"{light_name}_{digest}"
    path = folder / "robot.urdf"

    def fill(tmpdir: Path) -> None:
        hulls: dict[str, str] = {}
        for k, ref in enumerate(sorted(set(_MESH.findall(text)))):
            src_mesh = _resolve_mesh(ref, src.parent)
            if src_mesh.suffix.lower() in (".obj", ".stl") and src_mesh.is_file():
                coarse_hull(src_mesh, tmpdir / f"hull_{k:02d}.obj")
                hulls[ref] = (folder / f"hull_{k:02d}.obj").as_posix()
        (tmpdir / "robot.urdf").write_text(_light_urdf_text(text, src.parent, hulls))

    with _LOCK:
        if not path.is_file():  # another process may publish it first: its copy is kept
            publish_dir(folder, fill, keep_existing=lambda f: (f / "robot.urdf").is_file())
        return register_robot(replace(spec, name=light_name, urdf=str(path)), overwrite=True)
