"""glTF export: the scene as one binary ``scene.glb`` for viewers (colours and textures, no physics).

One glTF node per object, named by its node id, with the object's pose as the node transform
and its visual mesh (PBR material: the asset's texture as base colour texture, or its colour as
base colour factor). With ``with_robot=True`` the robot's visual meshes come along at the home
pose as static nodes ``robot/<link>``. Textures are embedded in the ``.glb``, so the file alone
is self-contained.

The scene's cameras are glTF perspective cameras (``yfov``, ``aspectRatio``, ``znear``, ``zfar``)
on nodes ``camera/<name>``; glTF cameras look along -z with +y up, as the scene's. A camera riding
on a robot link is exported with the robot, placed where the link is at the home pose.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.errors import ExportError
from scenegen.export._camera import ExportCamera, export_cameras
from scenegen.export._common import ExportObject, pose_matrix, prepare_out_dir, scene_objects, visual_texture
from scenegen.export._robot import link_poses, robot_info
from scenegen.export._robot_mesh import robot_mesh, robot_visuals
from scenegen.scene import Scene

GLB_JSON = 0x4E4F534A
"""Chunk type of a GLB's JSON chunk."""


def _load(path: Path):
    import trimesh

    try:
        mesh = trimesh.load(str(path), force="mesh")
    except Exception as exc:  # trimesh raises many types for broken files
        raise ExportError(f"cannot read mesh {path} ({exc}); regenerate the asset") from None
    if len(mesh.faces) == 0:
        raise ExportError(f"mesh {path} has no faces; regenerate the asset")
    return mesh


def _object_mesh(obj: ExportObject):
    import trimesh

    a = obj.asset
    mesh = _load(a.file(a.visual))
    rgba = [float(c) for c in a.rgba] + [1.0] * (4 - len(a.rgba))
    if visual_texture(a) and isinstance(mesh.visual, trimesh.visual.TextureVisuals):
        mat = mesh.visual.material
        if not isinstance(mat, trimesh.visual.material.PBRMaterial):
            mat = mat.to_pbr()
        mat.name = f"{obj.node}_material"
        mesh.visual.material = mat
    else:
        pbr = trimesh.visual.material.PBRMaterial(
            name=f"{obj.node}_material", baseColorFactor=rgba, metallicFactor=0.0, roughnessFactor=0.6,
            alphaMode="BLEND" if rgba[3] < 1.0 else "OPAQUE")
        mesh.visual = trimesh.visual.TextureVisuals(material=pbr)
    return mesh


def export_gltf(scene: Scene, assets: Mapping[str, Asset], out_dir: str | Path, with_robot: bool = False) -> Path:
    """Export a scene as a binary glTF ``scene.glb`` (textures embedded).

    Args:
        scene: the scene (settled poses used when present).
        assets: asset id -> Asset with its folder on disk.
        out_dir: folder to write.
        with_robot: add the robot's visual meshes at the home pose.

    Returns:
        Path of ``scene.glb``.

    """
    import trimesh

    out = prepare_out_dir(out_dir)
    objects = scene_objects(scene, assets)
    tscene = trimesh.Scene(base_frame="world")
    for obj in objects:
        tscene.add_geometry(_object_mesh(obj), node_name=obj.node, geom_name=obj.node,
                            transform=pose_matrix(obj.pose))
    if with_robot:
        robot = robot_info(scene)
        for i, vis in enumerate(robot_visuals(robot.urdf, scene.robot_base, robot.home)):
            name = f"robot/{vis.link}_{i:02d}"
            tscene.add_geometry(robot_mesh(vis.mesh), node_name=name, geom_name=name,
                                transform=np.asarray(vis.transform))
    path = out / "scene.glb"
    try:
        data = tscene.export(file_type="glb")
    except Exception as exc:  # trimesh raises many types
        raise ExportError(f"trimesh could not write the glTF ({exc}); report this scene") from None
    path.write_bytes(add_cameras(data, _camera_nodes(scene, with_robot)))
    return path


def _camera_nodes(scene: Scene, with_robot: bool) -> list[tuple[ExportCamera, np.ndarray]]:
    """Each exported camera with its world transform (a link camera where its link is at home)."""
    cams = export_cameras(scene, with_robot)
    if not any(c.link for c in cams):
        return [(c, c.pose) for c in cams]
    robot = robot_info(scene)
    poses = link_poses(robot.urdf, scene.robot_base, robot.home)
    out = []
    for c in cams:
        if c.link is not None and c.link not in poses:
            raise ExportError(f"camera {c.name!r} rides on link {c.link!r}, which robot {robot.name} lacks; "
                              f"fix the scene's cameras")
        out.append((c, c.pose if c.link is None else poses[c.link] @ c.pose))
    return out


def _chunks(glb: bytes) -> tuple[dict, bytes]:
    magic, version, length = struct.unpack_from("<4sII", glb, 0)
    json_len, json_type = struct.unpack_from("<II", glb, 12)
    if magic != b"glTF" or version != 2 or json_type != GLB_JSON or length != len(glb):
        raise ExportError("trimesh wrote a GLB this exporter cannot read back; report this scene")
    return json.loads(glb[20:20 + json_len]), glb[20 + json_len:]


def add_cameras(glb: bytes, cameras: list[tuple[ExportCamera, np.ndarray]]) -> bytes:
    """The GLB with one perspective camera node per ``(camera, world transform)`` added to its scene."""
    if not cameras:
        return glb
    doc, rest = _chunks(glb)
    scene_nodes = doc["scenes"][doc.get("scene", 0)].setdefault("nodes", [])
    for cam, m in cameras:
        doc.setdefault("cameras", []).append({"name": cam.name, "type": "perspective", "perspective": {
            "yfov": math.radians(cam.fovy_deg), "aspectRatio": cam.aspect, "znear": cam.near, "zfar": cam.far}})
        doc.setdefault("nodes", []).append({"name": f"camera/{cam.name}", "camera": len(doc["cameras"]) - 1,
                                            "matrix": [float(v) for v in np.asarray(m).T.ravel()]})
        scene_nodes.append(len(doc["nodes"]) - 1)
    body = json.dumps(doc, separators=(",", ":")).encode()
    body += b" " * (-len(body) % 4)
    out = struct.pack("<II", len(body), GLB_JSON) + body + rest
    return struct.pack("<4sII", b"glTF", 2, 12 + len(out)) + out
