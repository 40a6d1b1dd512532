"""How faithful a collision proxy is: a sphere dropped into it, against the visual mesh.

:func:`drop_test` loads the proxy's convex parts as a fixed PyBullet body (through a URDF, the
way assets are loaded), drops a sphere from above, lets it come to rest and compares the
height it rests at with the height it would rest at on the visual mesh itself at the same
spot (:func:`rest_height`, exact: the sphere lowered until it first touches the mesh or the
ground). A proxy whose parts bridge a cavity holds the sphere too high (a positive error); one
with gaps lets it sink (negative).

Bullet keeps a collision margin around convex meshes (about 1 mm): a shape collides as if it were
that much larger, the visual mesh's own too (on a wall of slope ``a`` a sphere rests ``margin / sin a``
higher, 11 mm in a cup tapering by 5 degrees). The test measures the margin (the same sphere on a
flat slab loaded the same way) and compares with the sphere grown by it on the visual mesh: what
the visual mesh itself would give in the simulator.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from scenegen.errors import AssetError


def _distance(mesh: trimesh.Trimesh, point: np.ndarray) -> float:
    _, dist, _ = trimesh.proximity.closest_point(mesh, point[None, :])
    return float(dist[0])


def rest_height(mesh: trimesh.Trimesh, x: float, y: float, radius: float, ground: float = 0.0) -> float:
    """Centre height of a sphere at ``(x, y)`` lowered from above until it touches ``mesh`` or the ground.

    Sphere tracing: each step lowers the sphere by its clearance, which the distance to the
    surface bounds, so it never passes through a wall.
    """
    z = float(mesh.bounds[1][2]) + radius + 1e-3
    for _ in range(2000):
        clear = min(_distance(mesh, np.array([x, y, z])), z - ground) - radius
        if clear < 1e-6:
            return z
        z -= clear
    return z


@dataclass(frozen=True)
class Drop:
    """One sphere dropped on a proxy."""

    x: float
    """Where it came to rest (m, asset frame)."""
    y: float
    """Where it came to rest (m, asset frame)."""
    z: float
    """Height of its centre at rest on the proxy (m)."""
    true_z: float
    """Height its centre would rest at on the visual mesh at the same ``(x, y)``, the margin included (m)."""
    radius: float
    """Sphere radius (m)."""
    margin: float = 0.0
    """How high (m) the simulator rests the same sphere above a flat mesh surface (its collision margin)."""

    @property
    def error(self) -> float:
        """``z - true_z`` (m): positive when the proxy holds the sphere too high."""
        return self.z - self.true_z


def cavity_drops(visual: trimesh.Trimesh, cavity_point, fractions: tuple[float, ...] = (0.2, 0.5, 0.9, 1.2),
                 ) -> list[tuple[float, float, float]]:
    """Drops into a container: spheres above its cavity point sized to fractions of its inner half-width.

    The half-width is the distance from the cavity's axis to the nearest wall (16 horizontal rays)
    three quarters of the way up from the cavity point to the top, so the larger spheres come to
    rest on the walls or the rim, the smallest on the floor; a small sphere is also dropped off
    the axis, towards a corner.
    """
    c = np.asarray(cavity_point, dtype=float).copy()
    c[2] += 0.75 * (float(visual.bounds[1][2]) - c[2])
    ang = np.linspace(0.0, 2 * np.pi, 16, endpoint=False)
    dirs = np.column_stack([np.cos(ang), np.sin(ang), np.zeros_like(ang)])
    loc, _, _ = visual.ray.intersects_location(np.tile(c, (len(dirs), 1)), dirs, multiple_hits=False)
    if len(loc) == 0:
        raise AssetError("cavity_drops: no wall around the cavity point")
    half = float(np.linalg.norm(loc[:, :2] - c[:2], axis=1).min())
    drops = [(float(c[0]), float(c[1]), f * half) for f in fractions]
    drops.append((float(c[0] + 0.35 * half), float(c[1] + 0.35 * half), min(fractions) * half))
    return drops


def _urdf(folder: Path, parts: list[trimesh.Trimesh]) -> Path:
    from scenegen.assets.model_urdf import obj_text

    lines = ['<?xml version="1.0"?>', '<robot name="proxy">', '  <link name="base">',
             '    <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>']
    for i, part in enumerate(parts):
        (folder / f"part_{i:03d}.obj").write_text(obj_text(part, normals=False))
        lines += ['    <collision><origin xyz="0 0 0" rpy="0 0 0"/>',
                  f'      <geometry><mesh filename="part_{i:03d}.obj" scale="1 1 1"/></geometry></collision>']
    lines += ["  </link>", "</robot>", ""]
    path = folder / "proxy.urdf"
    path.write_text("\n".join(lines))
    return path


def _rest(p, client: int, x: float, y: float, z0: float, r: float, seconds: float, timestep: float) -> tuple:
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=client)
    ball = p.createMultiBody(0.05, shape, basePosition=[x, y, z0], physicsClientId=client)
    p.changeDynamics(ball, -1, lateralFriction=0.6, restitution=0.0, rollingFriction=1e-4,
                     linearDamping=0.3, physicsClientId=client)
    for _ in range(int(seconds / timestep)):
        p.stepSimulation(physicsClientId=client)
    pos, _ = p.getBasePositionAndOrientation(ball, physicsClientId=client)
    p.removeBody(ball, physicsClientId=client)
    return tuple(float(v) for v in pos)


def drop_test(parts: list[trimesh.Trimesh], visual: trimesh.Trimesh, drops: list[tuple[float, float, float]],
              seconds: float = 3.0, timestep: float = 1.0 / 240.0) -> list[Drop]:
    """Drop spheres on a proxy, one at a time, and measure where each comes to rest.

    Args:
        parts: the proxy's convex parts (asset frame: bottom centre at the origin, on the ground).
        visual: the visual mesh in the same frame.
        drops: ``(x, y, radius)`` of each sphere; it starts above the object's top.
        seconds: simulated time each sphere is given to come to rest.
        timestep: physics step (the worlds' default).

    Returns:
        One :class:`Drop` per sphere.

    Raises:
        AssetError: the proxy has no parts.

    """
    import pybullet as p

    if not parts:
        raise AssetError("drop_test needs at least one collision part")
    client = p.connect(p.DIRECT)
    out = []
    try:
        p.setGravity(0, 0, -9.81, physicsClientId=client)
        p.setTimeStep(timestep, physicsClientId=client)
        plane = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=client)
        p.createMultiBody(0, plane, physicsClientId=client)
        slab = trimesh.creation.box(extents=(1.0, 1.0, 0.02))
        slab.apply_translation((50.0, 0.0, 0.01))           # far from the proxy
        with tempfile.TemporaryDirectory(prefix="scenegen-drop-") as tmp:
            p.loadURDF(str(_urdf(Path(tmp), parts)), useFixedBase=True, physicsClientId=client)
            (Path(tmp) / "slab").mkdir()
            p.loadURDF(str(_urdf(Path(tmp) / "slab", [slab])), useFixedBase=True, physicsClientId=client)
        top = float(visual.bounds[1][2])
        margins: dict[float, float] = {}
        for x, y, r in drops:
            if r not in margins:
                margins[r] = _rest(p, client, 50.0, 0.0, 0.02 + r + 0.005, r, seconds, timestep)[2] - 0.02 - r
            px, py, pz = _rest(p, client, x, y, top + r + 0.005, r, seconds, timestep)
            true_z = rest_height(visual, px, py, r + margins[r], ground=-margins[r])
            out.append(Drop(px, py, pz, true_z, float(r), margins[r]))
    finally:
        p.disconnect(client)
    return out
