"""The front camera's framing of the task zone (issue 13: the smallest target covers ~100 px at 128 x 128)."""

import math

import numpy as np
import pytest

from scenegen.errors import ConfigError
from scenegen.layout.compose import SceneConfig
from scenegen.scene import Camera
from scenegen.sim.camera import (
    DEFAULT_TASK_ZONE,
    FRAME_MARGIN,
    FRONT_ELEVATION_DEG,
    FRONT_FOV_DEG,
    default_cameras,
    frame_zone,
    view_matrix,
)
from scenegen.sim.robots import PANDA


def _pixel(cam: Camera, point) -> np.ndarray:
    """Image coordinates (x right, y down) of a world point seen by a fixed camera."""
    v = view_matrix(np.asarray(cam.eye, float), np.asarray(cam.target, float), np.asarray(cam.up, float))
    x, y, z = (v @ np.array([*point, 1.0]))[:3]
    f = 0.5 * cam.height / math.tan(math.radians(cam.fov_deg) / 2)
    return np.array([cam.width / 2 + f * x / -z, cam.height / 2 - f * y / -z])


def _flat_rect_px(cam: Camera, corner, dx: float, dy: float) -> float:
    """Pixels covered by a flat dx x dy (m) rectangle on the table with one corner at ``corner``."""
    c = np.asarray(corner, float)
    a, b, d = _pixel(cam, c), _pixel(cam, c + [dx, 0, 0]), _pixel(cam, c + [0, dy, 0])
    u, w = b - a, d - a
    return abs(u[0] * w[1] - u[1] * w[0])


def _front(**kw) -> Camera:
    return default_cameras(PANDA, **kw)[0]


def test_widened_zone_fits_the_image_and_fills_it():
    cam = _front()
    x0, y0, x1, y1 = DEFAULT_TASK_ZONE
    m = FRAME_MARGIN
    px = np.array([_pixel(cam, (x, y, z)) for x in (x0 - m, x1 + m) for y in (y0 - m, y1 + m) for z in (0.0, 0.08)])
    edge = 0.025 * cam.width  # frame_zone keeps the corners inside the central 95%
    assert px.min() >= edge - 0.5 and px.max() <= cam.width - edge + 0.5
    # the least distance: the widest corners touch the 95% border (within the 5 mm search step)
    assert px[:, 0].min() < edge + 1.5 and px[:, 0].max() > cam.width - edge - 1.5


def test_a_marker_at_the_far_edge_covers_a_hundred_pixels():
    """A 12 x 1.5 cm marker lying anywhere on the zone's far (robot-side) edge, either way round."""
    cam = _front()
    x0, y0, _, y1 = DEFAULT_TASK_ZONE
    for y in (y0, 0.0, y1 - 0.12):
        assert _flat_rect_px(cam, (x0, y, 0.0), 0.015, 0.12) >= 100
        assert _flat_rect_px(cam, (x0, y, 0.0), 0.12, 0.015) >= 100
    # the old framing (65 deg, 40 deg fov, 5 cm margin) gave it about 67 pixels
    old = _front(fov_deg=40.0, elevation_deg=65.0, margin=0.05)
    assert _flat_rect_px(old, (x0, 0.0, 0.0), 0.015, 0.12) < 75


def test_far_edge_is_nearly_as_large_as_near_edge():
    cam = _front()
    x0, _, x1, _ = DEFAULT_TASK_ZONE
    far, near = (_flat_rect_px(cam, (x, 0.0, 0.0), 0.01, 0.01) for x in (x0, x1))
    assert 0.75 <= far / near < 1.0


def test_camera_stands_across_the_bench_looking_down_at_the_zone_centre():
    cam = _front()
    x0, y0, x1, y1 = DEFAULT_TASK_ZONE
    assert cam.target[:2] == pytest.approx(((x0 + x1) / 2, (y0 + y1) / 2))
    d = np.asarray(cam.target) - np.asarray(cam.eye)
    assert cam.eye[0] > x1 and cam.eye[1] == 0.0
    assert math.degrees(math.atan2(-d[2], -d[0])) == pytest.approx(FRONT_ELEVATION_DEG, abs=0.1)
    assert cam.fov_deg == FRONT_FOV_DEG and cam.link is None


def test_scene_config_defaults_are_the_camera_defaults():
    cfg = SceneConfig()
    assert (cfg.front_fov_deg, cfg.front_elevation_deg, cfg.frame_margin) == (FRONT_FOV_DEG, FRONT_ELEVATION_DEG,
                                                                             FRAME_MARGIN)


def test_wrist_camera_is_unchanged():
    wrist = default_cameras(PANDA)[1]
    assert (wrist.name, wrist.link, wrist.fov_deg) == ("wrist", PANDA.camera_link, 70.0)
    assert (wrist.eye, wrist.target, wrist.up) == (PANDA.wrist_eye, PANDA.wrist_target, PANDA.wrist_up)


@pytest.mark.parametrize("kw", [{"zone": (0.6, -0.1, 0.4, 0.1)}, {"zone": (0.4, 0.1, 0.6, 0.1)},
                                {"elevation_deg": 90.0}, {"elevation_deg": 2.0}, {"fov_deg": 5.0}])
def test_bad_zone_or_angles_raise(kw):
    args = {"zone": DEFAULT_TASK_ZONE, **kw}
    with pytest.raises(ConfigError):
        frame_zone(args.pop("zone"), **args)
