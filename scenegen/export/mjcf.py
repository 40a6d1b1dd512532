"""MJCF (MuJoCo) export: one free body per object, convex collision geoms, explicit inertia.

Per object: a ``<body>`` at its pose with a ``<freejoint>``, an explicit ``<inertial>`` (mass,
centre of mass, full inertia tensor), the visual mesh as a non-colliding geom (group 1) and one
collision geom per collision element of the asset's URDF (group 3): a convex mesh per CoACD /
hull part, or the native box / cylinder / sphere when the asset uses a primitive proxy, exactly
as PyBullet simulates it. The table is a static body (no joint) with its box collider, and a
ground plane lies 0.75 m below the table top, as in :class:`scenegen.sim.world.WorldConfig`.

Contact settings, tuned so that objects settled in PyBullet stay put in MuJoCo (the
cross-simulator agreement test: every object within 5 mm and 2 degrees after 1 s):

* ``timestep 0.001``, ``implicitfast`` integrator, elliptic friction cones, ``impratio 10``
  and ``noslip_iterations 20`` (static friction without the slow creep of soft contacts),
  ``multiccd`` (several contact points between flat faces; MuJoCo 4 has it on by default);
* collision geoms ``condim 6`` (sliding, torsional and rolling friction, like PyBullet's
  spinning and rolling friction), ``solref 0.004 1`` (stiff, critically damped),
  ``solimp 0.95 0.99 0.001``;
* ``margin 0.001`` on mesh and cylinder geoms: PyBullet pads those shapes with a 1 mm
  collision margin, so settled objects rest 1 mm above their support; the same margin in
  MuJoCo keeps them at that height instead of dropping (and tilting) by a millimetre;
* friction ``"mu 0.001 0.003"`` (slide, torsion, roll) where mu is the asset's lateral
  friction and torsion / roll are the packs' spinning and rolling friction
  (:data:`scenegen.assets.model_urdf.SPINNING_FRICTION`, ``ROLLING_FRICTION``). MuJoCo
  combines two geoms' friction with ``max``, PyBullet with a product, so sliding objects slide
  less in MuJoCo; resting objects are unaffected.

The scene's fixed cameras (``front``) are MuJoCo cameras in the world body with the scene's pose,
vertical field of view and resolution. With ``with_robot=True`` the robot is added by
:func:`scenegen.export._mjcf_robot.attach_robot`: compiled from its URDF by MuJoCo, drawn with
its visual meshes and materials, one position actuator per joint, a ``home`` keyframe, and the
cameras riding on its links (``wrist``). This needs ``mujoco``; without the robot the exporter
writes plain XML and needs nothing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.assets.model_urdf import ROLLING_FRICTION, SPINNING_FRICTION
from scenegen.export._camera import export_cameras
from scenegen.export._common import (
    GROUND_BELOW_TABLE,
    CollisionShape,
    ExportObject,
    collision_shapes,
    copy_assets,
    fmt,
    inertia_matrix,
    prepare_out_dir,
    scene_objects,
    visual_texture,
)
from scenegen.export._mjcf_robot import attach_robot, camera_element_attrs
from scenegen.export._robot import robot_info
from scenegen.rotations import matrix_to_quat, quat_wxyz
from scenegen.scene import Light, Scene

TIMESTEP = 0.001
"""Simulation timestep (s)."""
SOLREF = "0.004 1"
"""Contact time constant (s) and damping ratio of collision geoms."""
SOLIMP = "0.95 0.99 0.001"
"""Contact impedance of collision geoms."""
MARGIN = 0.001
"""Collision margin (m) of mesh and cylinder geoms: PyBullet inflates those shapes by 1 mm, so
objects settled there rest 1 mm above their support; MuJoCo keeps them at the same height."""
MARGIN_KINDS = ("mesh", "cylinder")
"""Collision shapes PyBullet pads with a margin (its boxes and spheres keep their exact surface)."""
IMPRATIO = 10.0
"""Friction-to-normal impedance ratio: high values make static friction stiff (no creep)."""
NOSLIP_ITERATIONS = 20
"""Iterations of the no-slip solver pass: removes the creep of soft friction (resting objects stay put)."""
CONDIM = 6
"""Contact dimensionality: normal, 2 sliding, torsional and 2 rolling friction directions."""
TORSION, ROLL = SPINNING_FRICTION, ROLLING_FRICTION
"""Torsional and rolling friction coefficients added to the asset's sliding friction (the packs' values)."""
OFFSCREEN = 1024
"""Offscreen framebuffer side (pixels): ``mujoco.Renderer`` images up to this size (or a camera's)."""


def _collision_class(default: ET.Element) -> None:
    vis = ET.SubElement(default, "default", {"class": "visual"})
    ET.SubElement(vis, "geom", contype="0", conaffinity="0", group="1", density="0")
    col = ET.SubElement(default, "default", {"class": "collision"})
    ET.SubElement(col, "geom", group="3", condim=str(CONDIM), solref=SOLREF, solimp=SOLIMP, margin="0",
                  rgba="0.5 0.5 0.5 1")


def _asset_elements(asset_el: ET.Element, obj: ExportObject, done: set[str]) -> None:
    a = obj.asset
    if a.id in done:
        return
    done.add(a.id)
    tex = visual_texture(a)
    if tex:
        ET.SubElement(asset_el, "texture", name=f"{a.id}_tex", type="2d", file=f"{obj.asset_rel}/{tex}")
        ET.SubElement(asset_el, "material", name=f"{a.id}_mat", texture=f"{a.id}_tex", rgba="1 1 1 1")
    else:
        ET.SubElement(asset_el, "material", name=f"{a.id}_mat", rgba=fmt(*a.rgba))
    # "shell" inertia: visual meshes need not be closed; the body's inertia is explicit anyway.
    ET.SubElement(asset_el, "mesh", name=f"{a.id}_visual", file=f"{obj.asset_rel}/{a.visual}", inertia="shell")
    for k, shape in enumerate(collision_shapes(a)):
        if shape.kind == "mesh":
            ET.SubElement(asset_el, "mesh", name=f"{a.id}_c{k:03d}", file=f"{obj.asset_rel}/{shape.mesh}",
                          scale=fmt(*shape.size))


def _collision_geom(body: ET.Element, obj: ExportObject, k: int, shape: CollisionShape) -> None:
    attrs = {"class": "collision", "name": f"{obj.node}_c{k:03d}", "type": shape.kind,
             "friction": fmt(obj.asset.friction, TORSION, ROLL)}
    if shape.kind in MARGIN_KINDS:
        attrs["margin"] = fmt(MARGIN)
    if shape.kind == "box":
        attrs["size"] = fmt(*(v / 2 for v in shape.size))
    elif shape.kind == "cylinder":
        attrs["size"] = fmt(shape.size[0], shape.size[1] / 2)
    elif shape.kind == "sphere":
        attrs["size"] = fmt(shape.size[0])
    else:
        attrs["mesh"] = f"{obj.asset.id}_c{k:03d}"
    if not np.allclose(shape.origin, np.eye(4)):
        attrs["pos"] = fmt(*shape.origin[:3, 3])
        attrs["quat"] = fmt(*quat_wxyz(matrix_to_quat(shape.origin[:3, :3])))
    ET.SubElement(body, "geom", attrs)


def _body(world: ET.Element, obj: ExportObject) -> None:
    a = obj.asset
    body = ET.SubElement(world, "body", name=obj.node, pos=fmt(*obj.pose.position),
                         quat=fmt(*quat_wxyz(obj.pose.orientation)))
    if not obj.static:
        ET.SubElement(body, "freejoint", name=obj.node)
        i = inertia_matrix(a)
        ET.SubElement(body, "inertial", pos=fmt(*a.com), mass=fmt(a.mass),
                      fullinertia=fmt(i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]))
    ET.SubElement(body, "geom", {"class": "visual", "name": f"{obj.node}_visual", "type": "mesh",
                                 "mesh": f"{a.id}_visual", "material": f"{a.id}_mat"})
    for k, shape in enumerate(collision_shapes(a)):
        _collision_geom(body, obj, k, shape)


def _lights(world: ET.Element, scene: Scene) -> None:
    """The scene's directional lights, without shadows like the PyBullet previews.

    ``Light.direction`` points towards the light; a scene without lights gets one from above.
    """
    for k, light in enumerate(scene.lights or [Light((0.0, 0.0, 1.0))]):
        d = np.asarray(light.direction, dtype=float)
        d = d / (np.linalg.norm(d) or 1.0)
        ET.SubElement(world, "light", name=f"light_{k}", pos=fmt(*(3.0 * d)), dir=fmt(*(-d)), directional="true",
                      castshadow="false", ambient=fmt(*(light.ambient * np.asarray(light.color))),
                      diffuse=fmt(*(light.diffuse * np.asarray(light.color))),
                      specular=fmt(*(light.specular * np.asarray(light.color))))


def build_mjcf(scene: Scene, objects: list[ExportObject]) -> ET.Element:
    """The MJCF tree of a scene's objects (no robot)."""
    root = ET.Element("mujoco", model=f"scene_{scene.id[:12]}")
    ET.SubElement(root, "compiler", angle="radian", autolimits="true")
    opt = ET.SubElement(root, "option", timestep=fmt(TIMESTEP), integrator="implicitfast", cone="elliptic",
                        impratio=fmt(IMPRATIO), noslip_iterations=str(NOSLIP_ITERATIONS))
    ET.SubElement(opt, "flag", multiccd="enable")
    side = max([OFFSCREEN, *(max(c.width, c.height) for c in scene.cameras)])
    ET.SubElement(ET.SubElement(root, "visual"), "global", offwidth=str(side), offheight=str(side))
    _collision_class(ET.SubElement(root, "default"))
    asset_el = ET.SubElement(root, "asset")
    ET.SubElement(asset_el, "texture", name="ground_tex", type="2d", builtin="checker", width="256",
                  height="256", rgb1="0.82 0.82 0.82", rgb2="0.7 0.7 0.7")
    ET.SubElement(asset_el, "material", name="ground_mat", texture="ground_tex", texrepeat="8 8")
    world = ET.SubElement(root, "worldbody")
    _lights(world, scene)
    ET.SubElement(world, "geom", {"class": "collision", "name": "ground", "type": "plane", "size": "0 0 0.05",
                                  "pos": fmt(0, 0, scene.table_height - GROUND_BELOW_TABLE),
                                  "material": "ground_mat", "group": "0", "friction": fmt(1.0, TORSION, ROLL)})
    done: set[str] = set()
    for obj in objects:
        _asset_elements(asset_el, obj, done)
        _body(world, obj)
    for cam in export_cameras(scene, with_robot=False):
        attrs = camera_element_attrs(cam)
        ET.SubElement(world, "camera", name=cam.name, pos=fmt(*attrs["pos"]), quat=fmt(*attrs["quat"]),
                      fovy=fmt(attrs["fovy"]), resolution=fmt(*attrs["resolution"]))
    return root


def export_mjcf(scene: Scene, assets: Mapping[str, Asset], out_dir: str | Path, with_robot: bool = False) -> Path:
    """Export a scene as an MJCF file ``scene.xml`` loadable with ``mujoco.MjModel.from_xml_path``.

    Args:
        scene: the scene (settled poses used when present).
        assets: asset id -> Asset with its folder on disk.
        out_dir: folder to write.
        with_robot: attach the robot (compiled from its URDF by MuJoCo; needs ``mujoco``).

    Returns:
        Path of ``scene.xml``.

    """
    out = prepare_out_dir(out_dir)
    objects = scene_objects(scene, assets)
    copy_assets(objects, out)
    root = build_mjcf(scene, objects)
    ET.indent(root)
    path = out / "scene.xml"
    ET.ElementTree(root).write(path, encoding="unicode")
    if with_robot:
        attach_robot(path, robot_info(scene), out, [c for c in export_cameras(scene, True) if c.link])
    return path
