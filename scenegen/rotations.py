"""Rotations, one implementation each: quaternions, matrices, roll-pitch-yaw, axis-angle.

Quaternions are ``(x, y, z, w)`` tuples, scalar last, as PyBullet (and scipy's
``Rotation.from_quat``) have them; :func:`quat_wxyz` converts to the scalar-first order of
MuJoCo and USD. Roll, pitch, yaw are fixed-axis angles (``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``),
the URDF/SDF convention. Matrices are 3x3 numpy arrays acting on column vectors.

Layout poses (and so scene hashes) go through :func:`quat_matrix`, :func:`quat_mul` and
:func:`axis_angle_quat`: their floating-point formulas must not change.
"""

from __future__ import annotations

import math

import numpy as np

Quat = tuple[float, float, float, float]


def quat_matrix(q: tuple[float, ...] | np.ndarray) -> np.ndarray:
    """Rotation matrix of a quaternion ``(x, y, z, w)`` (need not be unit: it is normalised)."""
    x, y, z, w = (float(v) for v in q)
    n = x * x + y * y + z * z + w * w
    s = 2.0 / n if n > 0 else 0.0
    return np.array([
        [1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
        [s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)],
        [s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)],
    ])


def quat_mul(a: tuple[float, ...], b: tuple[float, ...]) -> Quat:
    """Hamilton product ``a * b`` of two ``(x, y, z, w)`` quaternions (apply b, then a)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def quat_conj(q: tuple[float, ...]) -> Quat:
    """Conjugate ``(-x, -y, -z, w)``: the inverse rotation of a unit quaternion."""
    return (-q[0], -q[1], -q[2], q[3])


def axis_angle_quat(axis: tuple[float, float, float], angle: float) -> Quat:
    """Quaternion of a rotation by ``angle`` radians about a unit ``axis``."""
    s = math.sin(angle / 2)
    return (axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2))


def quat_wxyz(q: tuple[float, ...]) -> Quat:
    """Quaternion ``(x, y, z, w)`` -> normalised, scalar-first ``(w, x, y, z)`` (MuJoCo, USD)."""
    x, y, z, w = (float(v) for v in q)
    n = math.sqrt(x * x + y * y + z * z + w * w) or 1.0
    return (w / n, x / n, y / n, z / n)


def matrix_to_quat(m: np.ndarray) -> Quat:
    """Rotation matrix (3x3) -> unit quaternion ``(x, y, z, w)`` with ``w >= 0``."""
    t = np.trace(m)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        w, x, y, z = (m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        w, x, y, z = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        w, x, y, z = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s
    q = np.array([x, y, z, w]) / np.linalg.norm([x, y, z, w])
    if q[3] < 0:
        q = -q
    return tuple(float(v) for v in q)  # type: ignore[return-value]


def _matrix_rpy(r: np.ndarray) -> tuple[float, float, float]:
    pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    if abs(r[2, 0]) < 1 - 1e-9:
        roll = math.atan2(r[2, 1], r[2, 2])
        yaw = math.atan2(r[1, 0], r[0, 0])
    else:  # gimbal lock: put the whole turn in yaw
        roll = 0.0
        yaw = math.atan2(-r[0, 1], r[1, 1])
    return (roll, pitch, yaw)


def quat_to_rpy(q: tuple[float, ...]) -> tuple[float, float, float]:
    """Quaternion ``(x, y, z, w)`` -> fixed-axis ``(roll, pitch, yaw)``; at gimbal lock the whole turn is yaw."""
    return _matrix_rpy(quat_matrix(q))


def matrix_to_rpy(m: np.ndarray) -> tuple[float, float, float]:
    """Rotation matrix (3x3, or the top-left of a 4x4) -> fixed-axis ``(roll, pitch, yaw)``.

    Goes through :func:`matrix_to_quat`, so a matrix that is slightly off orthogonal is cleaned first.
    """
    return quat_to_rpy(matrix_to_quat(np.asarray(m)[:3, :3]))


def rpy_to_matrix(rpy: tuple[float, float, float]) -> np.ndarray:
    """Rotation matrix of fixed-axis ``(roll, pitch, yaw)`` (URDF/SDF convention)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def yaw_of(q: tuple[float, ...]) -> float:
    """Heading of the body's x axis in the world xy plane (the yaw of a downward gripper)."""
    r = quat_matrix(q)
    return math.atan2(r[1, 0], r[0, 0])


def down_quat(yaw: float) -> Quat:
    """Quaternion of a gripper pointing down (-z), turned by ``yaw`` about the world z axis: ``Rz(yaw) Rx(pi)``."""
    h = yaw / 2
    return (math.cos(h), math.sin(h), 0.0, 0.0)
