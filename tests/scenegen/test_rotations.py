"""scenegen.rotations against scipy's Rotation (scalar-last quaternions, extrinsic xyz roll-pitch-yaw)."""

import math

import numpy as np
from scipy.spatial.transform import Rotation

from scenegen.rotations import (
    axis_angle_quat,
    down_quat,
    matrix_to_quat,
    matrix_to_rpy,
    quat_conj,
    quat_matrix,
    quat_mul,
    quat_to_rpy,
    quat_wxyz,
    rpy_to_matrix,
    yaw_of,
)

RNG = np.random.default_rng(0)
QUATS = [tuple(q) for q in Rotation.random(200, random_state=1).as_quat()] + [
    (0.0, 0.0, 0.0, 1.0), (1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0),
    axis_angle_quat((1.0, 0.0, 0.0), math.pi / 2), axis_angle_quat((0.0, 0.0, 1.0), -math.pi / 2),
]


def _same_rotation(q, r):
    assert np.allclose(quat_matrix(q), r.as_matrix(), atol=1e-12)


def test_quat_matrix_is_scipys():
    for q in QUATS:
        _same_rotation(q, Rotation.from_quat(q))


def test_quat_matrix_normalises():
    q = QUATS[3]
    assert np.allclose(quat_matrix(tuple(3.0 * v for v in q)), quat_matrix(q), atol=1e-12)
    assert np.array_equal(quat_matrix((0.0, 0.0, 0.0, 0.0)), np.eye(3))


def test_quat_mul_composes_like_scipy():
    for a, b in zip(QUATS[:50], QUATS[50:100], strict=True):
        _same_rotation(quat_mul(a, b), Rotation.from_quat(a) * Rotation.from_quat(b))
        _same_rotation(quat_mul(a, quat_conj(a)), Rotation.identity())


def test_axis_angle_quat_is_scipys_rotvec():
    for _ in range(50):
        axis = RNG.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = float(RNG.uniform(-math.pi, math.pi))
        _same_rotation(axis_angle_quat(tuple(axis), angle), Rotation.from_rotvec(axis * angle))


def test_quat_wxyz_is_scalar_first_and_unit():
    for q in QUATS[:50]:
        w, x, y, z = quat_wxyz(tuple(2.0 * v for v in q))
        assert np.allclose((x, y, z, w), q) and math.isclose(w * w + x * x + y * y + z * z, 1.0)


def test_matrix_to_quat_round_trips_with_w_non_negative():
    for q in QUATS:
        got = matrix_to_quat(Rotation.from_quat(q).as_matrix())
        assert got[3] >= 0
        want = Rotation.from_quat(q).as_quat()
        assert np.allclose(got, want, atol=1e-9) or np.allclose(got, -want, atol=1e-9)


def test_rpy_is_scipys_extrinsic_xyz():
    for q in QUATS[:-6]:  # away from gimbal lock
        r = Rotation.from_quat(q)
        rpy = quat_to_rpy(q)
        assert np.allclose(rpy, r.as_euler("xyz"), atol=1e-9)
        assert np.allclose(rpy_to_matrix(rpy), r.as_matrix(), atol=1e-12)
        assert np.allclose(matrix_to_rpy(r.as_matrix()), rpy, atol=1e-9)
        m4 = np.eye(4)
        m4[:3, :3] = r.as_matrix()
        assert np.allclose(matrix_to_rpy(m4), rpy, atol=1e-9)


def test_rpy_at_gimbal_lock_puts_the_turn_in_yaw():
    for pitch in (math.pi / 2, -math.pi / 2):
        r = Rotation.from_euler("xyz", (0.0, pitch, 0.7))
        roll, p, yaw = quat_to_rpy(tuple(r.as_quat()))
        assert roll == 0.0 and math.isclose(p, pitch, abs_tol=1e-6)
        assert np.allclose(rpy_to_matrix((roll, p, yaw)), r.as_matrix(), atol=1e-6)


def test_down_quat_points_down_and_yaw_of_reads_it_back():
    for yaw in np.linspace(-3.0, 3.0, 13):
        q = down_quat(float(yaw))
        _same_rotation(q, Rotation.from_euler("z", yaw) * Rotation.from_euler("x", math.pi))
        assert np.allclose(quat_matrix(q)[:, 2], (0.0, 0.0, -1.0), atol=1e-12)
        assert math.isclose(yaw_of(q), yaw, abs_tol=1e-12)


def test_layout_formulas_are_pinned():
    # layout poses (and so scene hashes) go through these exact floating-point formulas
    q = quat_mul(axis_angle_quat((0.0, 0.0, 1.0), 0.3), axis_angle_quat((1.0, 0.0, 0.0), math.pi / 2))
    assert q == (0.6991667342497077, 0.10566871683993562, 0.10566871683993563, 0.6991667342497078)
    assert quat_matrix(q)[0].tolist() == [0.955336489125606, -5.551115123125784e-17, 0.2955202066613396]
