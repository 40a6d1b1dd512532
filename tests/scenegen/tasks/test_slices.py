"""A long object lying diagonally is boxed as a row of slabs for the flip's dry run (issue 19)."""

import math
from types import SimpleNamespace

import numpy as np

from scenegen.rotations import axis_angle_quat, quat_matrix
from scenegen.scene import Pose
from scenegen.tasks import flipplan, grasps
from scenegen.tasks.footprint import inside
from scenegen.tasks.slices import KEEP_AREA, slice_boxes, surface_points


def _cuboid(size):
    """A box mesh of 8 corners and 12 triangles centred on the origin."""
    s = np.asarray(size, dtype=float) / 2
    verts = np.array([[x, y, z] for x in (-s[0], s[0]) for y in (-s[1], s[1]) for z in (-s[2], s[2])])
    faces = [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6], [0, 2, 6],
             [0, 6, 4], [1, 5, 7], [1, 7, 3]]
    return verts, np.array(faces)


def _inside(pts, boxes, tol=1e-9):
    return np.any([np.all((pts >= lo - tol) & (pts <= hi + tol), axis=1) for lo, hi in boxes], axis=0)


def test_surface_points_fill_the_triangles_between_far_corners():
    verts, faces = _cuboid((0.3, 0.03, 0.03))
    pts = surface_points(verts, faces, 0.01)
    assert len(pts) > 20 * len(verts)
    t = np.sort(pts[:, 0])
    assert float(np.max(np.diff(t))) <= 0.01 + 1e-9  # no gap along the length
    assert np.all(np.abs(pts) <= np.asarray((0.15, 0.015, 0.015)) + 1e-9)  # all on the box


def test_a_diagonal_handle_is_boxed_as_slabs_covering_it():
    # tier-3 flip_mugs scene 917b867ca422 (seed 0): a hammer lying at 45 degrees got a 25 x 27 cm box
    verts, faces = _cuboid((0.3, 0.03, 0.03))
    rot = quat_matrix(axis_angle_quat((0.0, 0.0, 1.0), math.pi / 4))
    pts = surface_points(verts, faces) @ rot.T + np.array([0.5, 0.0, 0.015])
    boxes = slice_boxes(pts, 0.005)
    assert len(boxes) > 3
    assert np.all(_inside(pts, boxes))  # every surface point lies in a box
    whole = np.ptp(pts[:, :2], axis=0).prod()
    assert sum(float(np.prod((hi - lo)[:2])) for lo, hi in boxes) < KEEP_AREA * whole
    corner = np.array([pts[:, 0].max(), pts[:, 1].min(), 0.015])  # the whole box's empty corner
    assert not _inside(corner[None], boxes)[0]


def test_a_compact_or_axis_aligned_object_keeps_one_box():
    for size, yaw in (((0.08, 0.08, 0.1), 0.6), ((0.3, 0.03, 0.03), 0.0)):
        verts, faces = _cuboid(size)
        rot = quat_matrix(axis_angle_quat((0.0, 0.0, 1.0), yaw))
        pts = surface_points(verts, faces) @ rot.T
        boxes = slice_boxes(pts, 0.005)
        assert len(boxes) == 1
        assert np.allclose(boxes[0][0], pts.min(axis=0) - 0.005) and np.allclose(boxes[0][1], pts.max(axis=0) + 0.005)


def test_other_boxes_fit_a_diagonal_neighbour_inside_the_engine_box(monkeypatch):
    # a straight handle lying diagonally: its turned rectangle (scenegen.tasks.footprint) is tighter than the slabs
    mesh = _cuboid((0.3, 0.03, 0.03))
    monkeypatch.setattr(grasps, "grasp_mesh", lambda asset: mesh)
    q = axis_angle_quat((0.0, 0.0, 1.0), math.pi / 4)
    loose = (np.array([0.3, -0.2, -0.01]), np.array([0.7, 0.2, 0.04]))
    world = SimpleNamespace(assets={"hammer_1": object(), "mug_1": object()}, objects=lambda: ["hammer_1", "mug_1"],
                            pose=lambda n: Pose((0.5, 0.0, 0.015), q), aabb=lambda n: loose)
    boxes = flipplan.other_boxes(world, "mug_1")
    assert all(np.all(lo >= loose[0]) and np.all(hi <= loose[1]) for lo, hi in boxes)
    area = sum(b.area() for b in boxes)
    slabs = slice_boxes(surface_points(*mesh) @ quat_matrix(q).T + [0.5, 0.0, 0.015], flipplan.BOX_GROW)
    assert len(slabs) > 3 and area < sum(float(np.prod((hi - lo)[:2])) for lo, hi in slabs)
    corner = np.array([[0.6, -0.1, 0.015]])  # the whole box's empty corner
    assert not any(inside(b, corner)[0] for b in boxes)


def test_other_boxes_keep_the_slabs_of_a_bent_object(monkeypatch):
    # an L lying diagonally: the slabs cover less of the table than any one rectangle around it
    a, fa = _cuboid((0.3, 0.03, 0.03))
    b, fb = _cuboid((0.03, 0.3, 0.03))
    mesh = (np.concatenate([a + [0.15, 0.0, 0.0], b + [0.0, 0.15, 0.0]]), np.concatenate([fa, fb + 8]))
    monkeypatch.setattr(grasps, "grasp_mesh", lambda asset: mesh)
    q = axis_angle_quat((0.0, 0.0, 1.0), math.pi / 4)
    loose = (np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0]))
    world = SimpleNamespace(assets={"l_1": object()}, objects=lambda: ["l_1"], pose=lambda n: Pose((0, 0, 0), q),
                            aabb=lambda n: loose)
    boxes = flipplan.object_boxes(world, "l_1")
    assert len(boxes) > 3 and all(b.yaw == 0.0 and b.radius is None for b in boxes)


def test_a_slab_without_surface_is_left_out():
    # two small triangles 30 cm apart along a diagonal: the slabs between them hold no point
    tri = np.array([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0], [0.0, 0.01, 0.01]])
    pts = np.concatenate([tri, tri + [0.21, 0.21, 0.0]])
    boxes = slice_boxes(surface_points(pts, np.array([[0, 1, 2], [3, 4, 5]])), 0.005)
    assert 2 <= len(boxes) < 10 and np.all(_inside(pts, boxes))
