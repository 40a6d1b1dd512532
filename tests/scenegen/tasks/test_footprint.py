"""Other objects as turned boxes or cylinders for the flip's dry run (scenegen.tasks.footprint, issue 19)."""

import math
import pickle
from types import SimpleNamespace

import numpy as np
import pybullet as p

from scenegen.rotations import axis_angle_quat, quat_matrix
from scenegen.scene import Pose
from scenegen.tasks import flipplan, grasps
from scenegen.tasks.footprint import Shape, box_shape, footprint, inside, shape_body
from scenegen.tasks.slices import surface_points
from tests.scenegen.tasks.test_slices import _cuboid


def _turned(size, yaw, at=(0.0, 0.0, 0.0)):
    verts, faces = _cuboid(size)
    rot = quat_matrix(axis_angle_quat((0.0, 0.0, 1.0), yaw))
    return surface_points(verts, faces) @ rot.T + np.asarray(at)


def _cylinder(r, h, n=48):
    a = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
    ring = np.stack([r * np.cos(a), r * np.sin(a)], axis=1)
    return np.concatenate([np.column_stack([ring, np.full(n, z)]) for z in (0.0, h)])


def test_a_turned_box_gets_a_turned_rectangle_much_tighter_than_its_world_box():
    # tier-3 flip_mugs scene 2134293e5764 (seed 0): a 31 x 24 cm box turned by 73 degrees had a 33 x 38 cm world box
    pts = _turned((0.31, 0.235, 0.176), math.radians(73), (0.73, -0.08, 0.088))
    s = footprint(pts, 0.005)
    assert s.radius is None
    assert s.area() < 1.1 * (0.32 * 0.245)
    assert s.area() < 0.75 * float(np.prod(np.ptp(pts[:, :2], axis=0)))
    assert np.all(inside(s, pts))  # every point of the box is in its prism
    lo, hi = s
    corner = np.array([lo[0] + 0.01, lo[1] + 0.01, 0.05])  # the world box's empty corner
    assert not inside(s, corner[None])[0]
    assert inside((lo, hi), corner[None])[0]  # a plain box still counts as its box


def test_a_round_object_gets_a_circle():
    pts = _cylinder(0.037, 0.25) + np.array([0.3, 0.2, 0.0])
    s = footprint(pts, 0.005)
    assert s.radius is not None and abs(s.radius - 0.042) < 0.002
    assert np.allclose(s.centre, (0.3, 0.2), atol=0.002)
    assert np.all(inside(s, pts))
    assert not inside(s, np.array([[0.3 + 0.035, 0.2 + 0.035, 0.1]]))[0]  # the square's corner is outside
    assert not inside(s, np.array([[0.3, 0.2, 0.3]]))[0]  # above it


def test_a_shape_is_its_world_box_too_and_pickles():
    pts = _turned((0.2, 0.05, 0.1), 0.5)
    s = footprint(pts, 0.0, within=(np.full(3, -0.05), np.full(3, 0.05)))
    lo, hi = s
    assert np.all(lo >= -0.05) and np.all(hi <= 0.05)
    t = pickle.loads(pickle.dumps(s))
    assert isinstance(t, Shape) and t.yaw == s.yaw and np.allclose(t.half, s.half) and np.allclose(t[0], lo)
    b = box_shape(np.zeros(3), np.ones(3))
    assert np.allclose(b.half, 0.5) and b.yaw == 0.0 and b.area() == 1.0


def test_shape_bodies_match_the_prisms():
    c = p.connect(p.DIRECT)
    try:
        rect = footprint(_turned((0.3, 0.05, 0.1), math.radians(40), (0.5, 0.0, 0.05)), 0.0)
        disc = footprint(_cylinder(0.04, 0.2) + np.array([0.0, 0.5, 0.0]), 0.0)
        probe = p.createMultiBody(0.0, p.createCollisionShape(p.GEOM_SPHERE, radius=0.001, physicsClientId=c), -1,
                                  [0, 0, 0], physicsClientId=c)
        for shape in (rect, disc, (np.array([0.0, -0.6, 0.0]), np.array([0.1, -0.5, 0.1]))):
            body = shape_body(p, c, shape)
            rng = np.random.default_rng(0)
            lo, hi = (np.asarray(v) for v in shape)
            for q in rng.uniform(lo - 0.03, hi + 0.03, size=(60, 3)):
                p.resetBasePositionAndOrientation(probe, q.tolist(), [0, 0, 0, 1], physicsClientId=c)
                touching = bool(p.getClosestPoints(probe, body, 0.0, physicsClientId=c))
                d = p.getClosestPoints(probe, body, 0.01, physicsClientId=c)
                if d and abs(d[0][8]) < 0.003:
                    continue  # on the surface: either answer
                assert touching == bool(inside(shape, q[None])[0]), q
    finally:
        p.disconnect(c)


def test_other_boxes_give_a_turned_box_one_prism(monkeypatch):
    mesh = _cuboid((0.31, 0.235, 0.176))
    monkeypatch.setattr(grasps, "grasp_mesh", lambda asset: mesh)
    q = axis_angle_quat((0.0, 0.0, 1.0), math.radians(73))
    loose = (np.array([0.5, -0.3, -0.01]), np.array([0.95, 0.15, 0.2]))
    world = SimpleNamespace(assets={"box_1": object(), "mug_1": object()}, objects=lambda: ["box_1", "mug_1"],
                            pose=lambda n: Pose((0.73, -0.08, 0.088), q), aabb=lambda n: loose)
    (s,) = flipplan.other_boxes(world, "mug_1")
    assert isinstance(s, Shape) and s.radius is None
    assert abs(math.cos(2 * (s.yaw - math.radians(73)))) > 0.99 or abs(math.sin(2 * (s.yaw - math.radians(73)))) > 0.99
