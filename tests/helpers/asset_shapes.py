"""Hand-made meshes and PyBullet helpers shared by the asset tests."""

from __future__ import annotations

import numpy as np
import trimesh

from scenegen.assets.procedural import ProceduralMesh


def _frame(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """Move a mesh so its bbox bottom centre is the origin."""
    lo, hi = mesh.bounds
    mesh.apply_translation([-(lo[0] + hi[0]) / 2, -(lo[1] + hi[1]) / 2, -lo[2]])
    return mesh


def box_pm(extents=(0.06, 0.05, 0.04)) -> ProceduralMesh:
    m = _frame(trimesh.creation.box(extents=extents))
    return ProceduralMesh(m, {"extents": list(extents)}, primitive={"type": "box", "extents": list(extents)})


def cylinder_pm(radius=0.033, height=0.11, primitive=True) -> ProceduralMesh:
    m = _frame(trimesh.creation.cylinder(radius=radius, height=height, sections=32))
    prim = {"type": "cylinder", "radius": radius, "height": height} if primitive else None
    return ProceduralMesh(m, {"radius": radius, "height": height}, primitive=prim)


def sphere_pm(radius=0.03) -> ProceduralMesh:
    m = _frame(trimesh.creation.icosphere(subdivisions=3, radius=radius))
    return ProceduralMesh(m, {"radius": radius}, primitive={"type": "sphere", "radius": radius})


def annulus_pm(r_min=0.0075, r_max=0.02, height=0.005) -> ProceduralMesh:
    m = _frame(trimesh.creation.annulus(r_min=r_min, r_max=r_max, height=height, sections=32))
    return ProceduralMesh(m, {"r_min": r_min, "r_max": r_max, "height": height})


def bowl_mesh(radius=0.075, height=0.065, wall=0.008, sections=48) -> trimesh.Trimesh:
    """A thick-walled bowl revolved from a closed profile (watertight, open cavity)."""
    base = radius * 0.55
    prof = np.array([(0.0, 0.0), (base, 0.0), (radius, height), (radius - wall, height),
                     (base - wall * 0.6, wall), (0.0, wall)])
    return _frame(trimesh.creation.revolve(prof, sections=sections))


def bowl_pm(**kw) -> ProceduralMesh:
    return ProceduralMesh(bowl_mesh(**kw), {"kind": "bowl"}, cavity=True)


def bin_mesh(extents=(0.26, 0.2, 0.12), wall=0.008) -> trimesh.Trimesh:
    """An open-top bin built by hand: floor slab plus four wall slabs, fused into one solid."""
    x, y, z = extents
    slabs = [((x, y, wall), (0, 0, wall / 2)),
             ((wall, y, z), (-(x - wall) / 2, 0, z / 2)), ((wall, y, z), ((x - wall) / 2, 0, z / 2)),
             ((x, wall, z), (0, -(y - wall) / 2, z / 2)), ((x, wall, z), (0, (y - wall) / 2, z / 2))]
    boxes = [trimesh.creation.box(extents=e, transform=trimesh.transformations.translation_matrix(c))
             for e, c in slabs]
    return _frame(trimesh.boolean.union(boxes))


def bin_pm(**kw) -> ProceduralMesh:
    return ProceduralMesh(bin_mesh(**kw), {"kind": "bin"}, cavity=True)


def mug_pm() -> ProceduralMesh:
    """The procedural mug (a hand-made one with a torus handle makes CoACD over-segment)."""
    from scenegen.assets.procedural import build_mesh
    from scenegen.catalog import load_catalog

    return build_mesh(load_catalog().get("mug"), np.random.default_rng(0), {}, 5000)


# ---------------------------------------------------------------- PyBullet helpers

def bullet_client():
    import pybullet as p
    cid = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=cid)
    p.setTimeStep(1 / 240, physicsClientId=cid)
    return p, cid


def add_plane(p, cid, friction=0.8):
    col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[2, 2, 0.05], physicsClientId=cid)
    body = p.createMultiBody(0, col, basePosition=[0, 0, -0.05], physicsClientId=cid)
    p.changeDynamics(body, -1, lateralFriction=friction, physicsClientId=cid)
    return body


def load_asset(p, cid, asset, pos=(0, 0, 0), fixed=False):
    return p.loadURDF(str(asset.urdf_path), basePosition=list(pos), useFixedBase=fixed,
                      flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid)


def link_vertices(p, cid, body, asset):
    """World coordinates of the visual mesh's vertices at the body's current pose."""
    pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)  # the inertial frame
    info = p.getDynamicsInfo(body, -1, physicsClientId=cid)
    inv_pos, inv_orn = p.invertTransform(info[3], info[4])
    lpos, lorn = p.multiplyTransforms(pos, orn, inv_pos, inv_orn)
    rot = np.array(p.getMatrixFromQuaternion(lorn)).reshape(3, 3)
    verts = trimesh.load(asset.file(asset.visual), force="mesh").vertices
    return verts @ rot.T + np.array(lpos)


def drop_test(asset, height=0.05, seconds=1.0):
    """Drop an asset from ``height`` above a plane.

    Returns:
        (horizontal drift of the centre of mass, final linear speed, max speed, lowest point z,
        largest tilt of the up axis in degrees).
    """
    p, cid = bullet_client()
    try:
        add_plane(p, cid)
        body = load_asset(p, cid, asset, pos=(0, 0, height))
        start = np.array(p.getBasePositionAndOrientation(body, physicsClientId=cid)[0])
        vmax = 0.0
        for _ in range(int(seconds * 240)):
            p.stepSimulation(physicsClientId=cid)
            v = np.linalg.norm(p.getBaseVelocity(body, physicsClientId=cid)[0])
            vmax = max(vmax, v)
        pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
        v = np.linalg.norm(p.getBaseVelocity(body, physicsClientId=cid)[0])
        low = float(link_vertices(p, cid, body, asset)[:, 2].min())
        up = np.array(p.getMatrixFromQuaternion(orn)).reshape(3, 3)[:, 2]
        tilt = float(np.degrees(np.arccos(np.clip(up[2], -1, 1))))
        drift = float(np.linalg.norm(np.array(pos)[:2] - start[:2]))
        return drift, float(v), vmax, low, tilt
    finally:
        p.disconnect(cid)


def deepest_point(p, cid, body, lo, hi, n=21):
    """xy of a point at the bottom of the cavity of ``body``, seen from above.

    Of the downward ray hits in the lowest quarter of the depth, the one nearest to their
    centroid (so a flat floor gives its middle, not a corner).
    """
    xs = np.linspace(lo[0], hi[0], n + 2)[1:-1]
    ys = np.linspace(lo[1], hi[1], n + 2)[1:-1]
    starts = [[x, y, hi[2] + 0.05] for x in xs for y in ys]
    ends = [[x, y, lo[2] - 0.01] for x in xs for y in ys]
    hits = p.rayTestBatch(starts, ends, physicsClientId=cid)
    pts = np.array([h[3] for h in hits if h[0] == body])
    zmin = pts[:, 2].min()
    low = pts[pts[:, 2] <= zmin + 0.25 * max(0.0, hi[2] - zmin)]
    centre = low[:, :2].mean(axis=0)
    best = low[np.argmin(np.linalg.norm(low[:, :2] - centre, axis=1))]
    return float(best[0]), float(best[1])


def cavity_test(asset, radius=0.01, seconds=1.0):
    """Drop a small sphere into a fixed container; return its final position and the cavity test verdict."""
    p, cid = bullet_client()
    try:
        add_plane(p, cid)
        body = load_asset(p, cid, asset, fixed=True)
        ex = np.array(asset.extents)
        lo, hi = np.array([-ex[0] / 2, -ex[1] / 2, 0.0]), np.array([ex[0] / 2, ex[1] / 2, ex[2]])
        cx, cy = deepest_point(p, cid, body, lo, hi)
        col = p.createCollisionShape(p.GEOM_SPHERE, radius=radius, physicsClientId=cid)
        ball = p.createMultiBody(0.01, col, basePosition=[cx, cy, hi[2] + 0.02], physicsClientId=cid)
        for _ in range(int(seconds * 240)):
            p.stepSimulation(physicsClientId=cid)
        pos = np.array(p.getBasePositionAndOrientation(ball, physicsClientId=cid)[0])
        inside = bool(np.all(pos[:2] > lo[:2]) and np.all(pos[:2] < hi[:2]) and lo[2] < pos[2] < hi[2])
        return pos, inside, (lo, hi)
    finally:
        p.disconnect(cid)


# ---------------------------------------------------------------- CoACD stand-ins (run in the child process)

def coacd_segfault(vertices, faces, settings):
    import os
    import signal

    os.kill(os.getpid(), signal.SIGSEGV)


def coacd_hang(vertices, faces, settings):
    import time

    time.sleep(60)


def coacd_error(vertices, faces, settings):
    raise RuntimeError("synthetic failure")
