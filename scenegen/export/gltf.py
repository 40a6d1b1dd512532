"""glTF export: the scene as one binary ``scene.glb`` for viewers (colours and textures, no physics).

One glTF node per object, named by its node id, with the object's pose as the node transform
and its visual mesh (PBR material: the asset's texture as base colour texture, or its colour as
base colour factor). With ``with_robot=True`` the robot's visual meshes come along at the home
pose as static nodes ``robot/<link>``. Textures are embedded in the ``.glb``, so the file alone
is self-contained.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.errors import ExportError
from scenegen.export._common import ExportObject, pose_matrix, prepare_out_dir, scene_objects, visual_texture
from scenegen.export._robot import robot_info, robot_mesh, robot_visuals
from scenegen.scene import Scene


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
    path.write_bytes(data)
    return path
