"""The :class:`Scene`: a SceneGraph with an Asset per node, poses, robot, cameras, lights.

Poses are ``(position xyz, quaternion xyzw)`` in the world frame: +z up, the table top
at ``table_height``, the robot base at the origin looking along +x over the table.
Relations are read in the robot's view frame: ``left_of`` = larger y, ``right_of`` =
smaller y, ``in_front_of`` = smaller x (closer to the robot), ``behind`` = larger x.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from scenegen.errors import GraphError, PackError
from scenegen.graph import SceneGraph, content_hash

SCENE_SCHEMA_VERSION = 1
WORLD_BOUND = 100.0
"""Every position loaded from ``scene.json`` lies within this many metres of the origin on each axis."""
QUAT_TOLERANCE = 1e-2
"""A loaded quaternion's norm must be within this of 1."""


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
    def from_dict(cls, d: Any) -> Scene:
        """Inverse of :meth:`to_dict`, validating every field on the way.

        Raises:
            PackError: ``scene field <where>: <what is wrong>`` for the first bad field: a missing
                key, a wrong type, a non-finite or out-of-world position, a quaternion that is not unit
                length, a bad camera or light, or a graph that does not match its schema.

        """
        f = _Fields(d)
        table_height = f.number(d["table_height"], "table_height", -10.0, 10.0)
        graph, assets = f.graph(d["graph"]), f.names(d["assets"], "assets")
        poses = f.poses(d["poses"], "poses")
        settled = None if d["settled"] is None else f.poses(d["settled"], "settled")
        nodes = {o.id for o in graph.objects()}
        for where, keys in (("assets", assets), ("poses", poses), ("settled", settled)):
            if keys is not None and set(keys) != nodes:
                odd = sorted(set(keys) ^ nodes)[0]
                f.fail(where, f"must name exactly the graph's objects ({odd!r} is "
                       f"{'extra' if odd in keys else 'missing'})")
        return cls(
            id=f.name(d["id"], "id"), graph=graph, assets=assets, poses=poses, robot=f.name(d["robot"], "robot"),
            robot_base=f.pose(d["robot_base"], "robot_base"), table_height=table_height,
            cameras=[f.camera(c, f"cameras/{i}") for i, c in enumerate(f.list(d["cameras"], "cameras"))],
            lights=[f.light(li, f"lights/{i}") for i, li in enumerate(f.list(d["lights"], "lights"))],
            settled=settled, seed=f.integer(d["seed"], "seed"), meta=f.mapping(d.get("meta", {}), "meta"),
        )

    def compute_id(self) -> str:
        """Content hash over graph, assets, initial poses, robot and cameras (not settled poses)."""
        d = self.to_dict()
        for k in ("id", "settled", "meta"):
            d.pop(k)
        return content_hash(d)


_REQUIRED = ("id", "graph", "assets", "poses", "robot", "robot_base", "table_height", "cameras", "lights",
             "settled", "seed")


class _Fields:
    """Checks of one ``scene.json`` dict; each method returns the clean value or raises a PackError naming the field."""

    def __init__(self, d: Any) -> None:
        if not isinstance(d, dict):
            self.fail("<root>", f"must be a JSON object, not {type(d).__name__}")
        missing = [k for k in _REQUIRED if k not in d]
        if missing:
            self.fail(missing[0], "is missing")
        if d.get("schema_version", SCENE_SCHEMA_VERSION) != SCENE_SCHEMA_VERSION:
            self.fail("schema_version", f"{d.get('schema_version')!r} is not supported (this is version "
                      f"{SCENE_SCHEMA_VERSION}); regenerate the pack")

    @staticmethod
    def fail(where: str, what: str) -> None:
        raise PackError(f"scene field {where} {what}")

    def mapping(self, v: Any, where: str) -> dict:
        if not isinstance(v, dict):
            self.fail(where, f"must be a JSON object, not {type(v).__name__}")
        return v

    def list(self, v: Any, where: str) -> list:
        if not isinstance(v, list):
            self.fail(where, f"must be a list, not {type(v).__name__}")
        return v

    def name(self, v: Any, where: str) -> str:
        if not isinstance(v, str) or not 0 < len(v) <= 256:
            self.fail(where, f"= {_short(v)} must be a non-empty string")
        return v

    def names(self, v: Any, where: str) -> dict[str, str]:
        return {self.name(k, f"{where} key"): self.name(x, f"{where}/{k}") for k, x in self.mapping(v, where).items()}

    def number(self, v: Any, where: str, low: float = -math.inf, high: float = math.inf) -> float:
        """``v`` unchanged (an int stays an int, so the scene's bytes and hash survive a round trip)."""
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high:
            self.fail(where, f"= {_short(v)} must be a finite number in [{low:g}, {high:g}]")
        return v

    def integer(self, v: Any, where: str, low: int = -2**63, high: int = 2**63) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            self.fail(where, f"= {_short(v)} must be an integer in {low}..{high}")
        return v

    def vector(self, v: Any, where: str, n: int, bound: float = WORLD_BOUND) -> tuple:
        if not isinstance(v, (list, tuple)) or len(v) != n:
            self.fail(where, f"= {_short(v)} must be a list of {n} numbers")
        return tuple(self.number(x, f"{where}/{i}", -bound, bound) for i, x in enumerate(v))

    def pose(self, v: Any, where: str) -> Pose:
        if not isinstance(v, (list, tuple)) or len(v) != 2:
            self.fail(where, f"= {_short(v)} must be [[x, y, z], [qx, qy, qz, qw]]")
        position = tuple(float(x) for x in self.vector(v[0], f"{where}/position", 3))
        quat = tuple(float(x) for x in self.vector(v[1], f"{where}/orientation", 4, 1.0 + QUAT_TOLERANCE))
        norm = math.sqrt(sum(q * q for q in quat))
        if abs(norm - 1.0) > QUAT_TOLERANCE:
            self.fail(f"{where}/orientation", f"= {_short(v[1])} must be a unit quaternion (its norm is {norm:.3g})")
        return Pose(position, quat)

    def poses(self, v: Any, where: str) -> dict[str, Pose]:
        return {self.name(k, f"{where} key"): self.pose(p, f"{where}/{k}") for k, p in self.mapping(v, where).items()}

    def graph(self, v: Any) -> SceneGraph:
        try:
            return SceneGraph.from_dict(v)
        except GraphError as exc:
            self.fail("graph", f"is not a valid scene graph ({exc.one_line()[:200]})")
        raise AssertionError("unreachable")  # pragma: no cover

    def _known(self, v: Any, where: str, kind: type) -> dict:
        d = self.mapping(v, where)
        unknown = sorted(set(d) - {f.name for f in fields(kind)})
        if unknown:
            self.fail(f"{where}/{unknown[0]}", f"is not a {kind.__name__} field")
        return d

    def camera(self, v: Any, where: str) -> Camera:
        c = self._known(v, where, Camera)
        if "name" not in c or "eye" not in c or "target" not in c:
            self.fail(where, "needs name, eye and target")
        near = self.number(c.get("near", 0.01), f"{where}/near", 1e-6, 100.0)
        far = self.number(c.get("far", 5.0), f"{where}/far", near * (1 + 1e-9), 1e4)
        link = c.get("link")
        eye, target = self.vector(c["eye"], f"{where}/eye", 3), self.vector(c["target"], f"{where}/target", 3)
        up = self.vector(c.get("up", (0.0, 0.0, 1.0)), f"{where}/up", 3)
        if max(abs(a - b) for a, b in zip(eye, target, strict=True)) < 1e-6 or max(map(abs, up)) < 1e-6:
            self.fail(where, "must have eye != target and a non-zero up vector")
        return Camera(
            name=self.name(c["name"], f"{where}/name"), eye=eye, target=target, up=up,
            fov_deg=self.number(c.get("fov_deg", 60.0), f"{where}/fov_deg", 1.0, 179.0),
            width=self.integer(c.get("width", 128), f"{where}/width", 1, 4096),
            height=self.integer(c.get("height", 128), f"{where}/height", 1, 4096),
            near=near, far=far, link=None if link is None else self.name(link, f"{where}/link"))

    def light(self, v: Any, where: str) -> Light:
        li = self._known(v, where, Light)
        out = {k: self.number(li[k], f"{where}/{k}", -1e3, 1e3) for k in ("ambient", "diffuse", "specular") if k in li}
        for k in ("direction", "color"):
            if k in li:
                out[k] = self.vector(li[k], f"{where}/{k}", 3, 1e3)
        return Light(**out)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
