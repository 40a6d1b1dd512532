"""The flip's dry run rejects poses whose arm links come near another object's box (scenegen.tasks.armclear)."""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pytest

from scenegen.rotations import down_quat, quat_matrix
from scenegen.sim.control import ArmController, IKTwin
from scenegen.sim.world import World
from scenegen.tasks import flipplan
from scenegen.tasks.armclear import ARM_MARGIN, Obstacles, arm_links
from scenegen.tasks.config import EpisodeConfig
from scenegen.tasks.flipplan import plan_flip
from scenegen.tasks.swingcheck import reaches
from tests.helpers.export_scenes import golden_scene
from tests.helpers.scene_assets import cache_dir
from tests.scenegen.tasks.test_flipplan import BASE, TABLE, _Ctrl, _mug, _off_of


@pytest.fixture(scope="module")
def ctrl(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    with World.build(scene, lookup) as w, IKTwin(w) as twin:
        yield ArmController(w, EpisodeConfig(image_keys=(), render_max_faces=0), twin=twin)


def _path(ctrl):
    """Two hand poses 10 and 15 cm below the home pose, pointing down."""
    rot = quat_matrix(down_quat(ctrl.home_yaw))
    home = np.asarray(ctrl.home_pos, dtype=float)
    return [(home - [0.0, 0.0, 0.10], rot), (home - [0.0, 0.0, 0.15], rot)]


def _link_box(ctrl, link, half=0.01, shift=(0.0, 0.0, 0.0)):
    """A small box at a twin link's world position (as the twin is posed now), shifted by ``shift``."""
    c = np.asarray(p.getLinkState(ctrl.twin.robot, link, physicsClientId=ctrl.twin.client)[4]) + shift
    return c - half, c + half


def test_the_arm_links_are_every_link_below_the_first_arm_joint(ctrl):
    links = arm_links(ctrl.twin, ctrl)
    assert ctrl.ee_link in links and set(ctrl.arm_joints) <= links
    assert all(j in links for j in ctrl.finger_joints)


def test_a_box_at_the_forearm_fails_the_dry_run_and_one_far_off_does_not(ctrl):
    path = _path(ctrl)
    assert reaches(ctrl, path, home=True)
    elbow = ctrl.arm_joints[3]  # the twin is posed at the path's last pose now
    near, far = _link_box(ctrl, elbow), _link_box(ctrl, elbow, shift=(0.0, 0.6, -0.3))
    bodies = p.getNumBodies(physicsClientId=ctrl.twin.client)
    assert not reaches(ctrl, path, home=True, obstacles=[near])
    assert reaches(ctrl, path, home=True, obstacles=[far])
    assert p.getNumBodies(physicsClientId=ctrl.twin.client) == bodies  # the boxes leave the shared twin


def test_the_margin_counts_from_the_links_surface(ctrl):
    reaches(ctrl, _path(ctrl), home=True)
    lo, hi = _link_box(ctrl, ctrl.arm_joints[3], shift=(0.0, 0.0, 0.3))  # well above the elbow
    with Obstacles(ctrl.twin, ctrl, [(lo, hi)], margin=1.0) as probe:  # its distance from the nearest link
        cp = min((cp for cp in p.getClosestPoints(ctrl.twin.robot, probe.bodies[0], 1.0,
                                                  physicsClientId=ctrl.twin.client) if cp[3] in probe.links),
                 key=lambda cp: cp[8])
    gap, toward = cp[8], np.asarray(cp[7])  # the normal on the box points at the arm
    assert gap > 4 * ARM_MARGIN
    for left, want in ((0.5 * ARM_MARGIN, True), (2.0 * ARM_MARGIN, False)):
        move = toward * (gap - left)  # brought to ``left`` from the arm
        with Obstacles(ctrl.twin, ctrl, [(lo + move, hi + move)]) as obs:
            assert obs.near() is want, (left, gap)


def test_a_plan_whose_arm_keeps_clear_is_preferred(monkeypatch):
    # without the arm check every approach is reached; with it, only those within 95 degrees of the line out
    def fake(ctrl, path, *a, obstacles=None, **k):
        return obstacles is None or _off_of(path) <= 95.0

    monkeypatch.setattr(flipplan, "reaches", fake)
    hg, verts = _mug(off_deg=110.0)  # sideways: flipped without a turn, were the arm not checked
    far = [(np.array([-0.5, -0.5, TABLE]), np.array([-0.45, -0.45, 0.1]))]
    assert plan_flip(_Ctrl(), hg, verts, BASE, 0.08, 0.2, TABLE).turn is None
    plan = plan_flip(_Ctrl(), hg, verts, BASE, 0.08, 0.2, TABLE, boxes=far)
    assert plan.reached and plan.turn is not None  # turned to an approach whose arm keeps clear
    moved, _ = flipplan.rotated(hg, verts, plan.turn[1])
    assert abs(math.degrees(flipplan._off(moved, BASE))) <= 95.0


def test_a_flip_whose_arm_comes_near_a_neighbour_is_not_reached(monkeypatch):
    # tier-2 flip_mugs scene 04528831ff2a (seed 0): the unchecked flip knocked the upright mug beside it over
    monkeypatch.setattr(flipplan, "reaches", lambda ctrl, path, *a, obstacles=None, **k: obstacles is None)
    hg, verts = _mug(off_deg=100.0)
    far = [(np.array([-0.5, -0.5, TABLE]), np.array([-0.45, -0.45, 0.1]))]
    assert plan_flip(_Ctrl(), hg, verts, BASE, 0.08, 0.2, TABLE).reached  # no other object: nothing to keep off
    plan = plan_flip(_Ctrl(), hg, verts, BASE, 0.08, 0.2, TABLE, boxes=far)
    assert not plan.reached and plan.yaw is None
