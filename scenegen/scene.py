"""The :class:`Scene`: a SceneGraph with an Asset per node, poses, robot, cameras, lights.

Poses are ``(position xyz, quaternion xyzw)`` in the world frame: +z up, the table top
at ``table_height``, the robot base at the origin looking along +x over the table.
Relations are read in the robot's view frame: ``left_of`` = larger y, ``right_of`` =
smaller y, ``in_front_of`` = smaller x (closer to the robot), ``behind`` = larger x.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from scenegen.graph import SceneGraph, content_hash

SCENE_SCHEMA_VERSION = 1


@dataclass
class Pose:
    """A rigid pose: position (m) and quaternion (x, y, z, w)."""

    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)

    def to_list(self) -> list:
        """Return ``[[x, y, z], [qx, qy, qz, qw]]``."""
        return [list(self.position), list(self.orientation)]

    @classmethod
    def from_list(cls, data: list) -> Pose:
        """Inverse of :meth:`to_list`."""
        return cls(tuple(float(x) for x in data[0]), tuple(float(x) for x in data[1]))


@dataclass
class Camera:
    """A pinhole camera looking from ``eye`` at ``target``.

    ``eye``, ``target`` and ``up`` are in the world frame for a fixed camera, and in the frame
    of the robot link ``link`` for a camera riding on the robot (the wrist camera).
    """

    name: str
    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)
    fov_deg: float = 60.0
    """Vertical field of view."""
    width: int = 128
    height: int = 128
    near: float = 0.01
    far: float = 5.0
    link: str | None = None
    """Robot link the camera is attached to (wrist camera), or None for a fixed camera."""

    def intrinsics(self) -> list[list[float]]:
        """3x3 pinhole intrinsics matrix K for this resolution and fov."""
        import math

        fy = 0.5 * self.height / math.tan(math.radians(self.fov_deg) / 2)
        return [[fy, 0.0, self.width / 2], [0.0, fy, self.height / 2], [0.0, 0.0, 1.0]]


@dataclass
class Light:
    """A directional light for the TinyRenderer."""

    direction: tuple[float, float, float] = (0.4, -0.4, 1.0)
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    ambient: float = 0.45
    diffuse: float = 0.6
    specular: float = 0.1


@dataclass
class Scene:
    """A scene ready to build: graph, assets per node, poses, robot, cameras and lights."""

    id: str
    """Content hash of the scene (graph, assets, poses, robot)."""
    graph: SceneGraph
    assets: dict[str, str]
    """Node id -> asset id (the support/table included)."""
    poses: dict[str, Pose]
    """Node id -> initial pose from the layout."""
    robot: str = "panda"
    robot_base: Pose = field(default_factory=lambda: Pose((0.0, 0.0, 0.0)))
    table_height: float = 0.0
    cameras: list[Camera] = field(default_factory=list)
    lights: list[Light] = field(default_factory=lambda: [Light()])
    settled: dict[str, Pose] | None = None
    """Node id -> pose after physics settling (None until settled)."""
    seed: int = 0
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return {
            "schema_version": SCENE_SCHEMA_VERSION,
            "id": self.id,
            "graph": self.graph.to_dict(),
            "assets": dict(sorted(self.assets.items())),
            "poses": {k: v.to_list() for k, v in sorted(self.poses.items())},
            "robot": self.robot,
            "robot_base": self.robot_base.to_list(),
            "table_height": self.table_height,
            "cameras": [asdict(c) for c in self.cameras],
            "lights": [asdict(li) for li in self.lights],
            "settled": None if self.settled is None else {k: v.to_list() for k, v in sorted(self.settled.items())},
            "seed": self.seed,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Scene:
        """Inverse of :meth:`to_dict`."""
        return cls(
            id=d["id"], graph=SceneGraph.from_dict(d["graph"]), assets=dict(d["assets"]),
            poses={k: Pose.from_list(v) for k, v in d["poses"].items()},
            robot=d["robot"], robot_base=Pose.from_list(d["robot_base"]), table_height=d["table_height"],
            cameras=[Camera(**{**c, "eye": tuple(c["eye"]), "target": tuple(c["target"]), "up": tuple(c["up"])})
                     for c in d["cameras"]],
            lights=[Light(**{**li, "direction": tuple(li["direction"]), "color": tuple(li["color"])})
                    for li in d["lights"]],
            settled=None if d["settled"] is None else {k: Pose.from_list(v) for k, v in d["settled"].items()},
            seed=d["seed"], meta=d.get("meta", {}),
        )

    def compute_id(self) -> str:
        """Content hash over graph, assets, initial poses, robot and cameras (not settled poses)."""
        d = self.to_dict()
        for k in ("id", "settled", "meta"):
            d.pop(k)
        return content_hash(d)
