"""The robot in MJCF: compiled from its URDF by MuJoCo, drawn with its visual meshes, actuated.

MuJoCo's URDF importer keeps the collision meshes and discards the visual ones. The exporter
attaches the compiled robot at the robot base (names prefixed ``robot/``), moves its collision
geoms to group 3 (hidden by default, as the objects' colliders), and adds the visual meshes
as visual-only geoms (``contype``/``conaffinity`` 0, group 1), one per material part, each
with a material of that part's colour. Every link keeps its body; each moving joint gets a
position actuator with the gains of :data:`scenegen.export._robot.DRIVE_STIFFNESS` and the
URDF's effort as force limit; a ``home`` keyframe holds the home pose; cameras riding on a
robot link become MuJoCo cameras in that link's body; a site ``robot/ee`` marks the
end-effector link.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scenegen.errors import ExportError
from scenegen.export._camera import ExportCamera
from scenegen.export._common import ROBOT_DIR
from scenegen.export._robot import DRIVE_STIFFNESS, RobotInfo, copy_robot, drive_damping, parse_urdf
from scenegen.export._robot_mesh import visual_parts
from scenegen.rotations import matrix_to_quat, quat_wxyz

PREFIX = "robot/"
"""Name prefix of the robot's bodies, joints, geoms and actuators."""
VISUAL_DIR = "visual_mjcf"
"""Folder (inside ``robot/``) of the robot's visual parts as plain OBJ files."""


def mujoco_module():
    """Import MuJoCo or raise the one-line install hint."""
    try:
        import mujoco
    except ImportError:
        raise ExportError("the mjcf exporter needs MuJoCo for --with-robot and checks; install the extra: "
                          "pip install scenegen[mjcf]") from None
    return mujoco


def write_obj(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write a triangle mesh as a plain OBJ (vertices and faces only; deterministic text)."""
    lines = [f"v {x:.7g} {y:.7g} {z:.7g}" for x, y, z in vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def camera_element_attrs(cam: ExportCamera) -> dict[str, object]:
    """MuJoCo camera attributes for a camera frame (MuJoCo cameras look along -z too)."""
    return {"pos": [float(v) for v in cam.pose[:3, 3]],
            "quat": [float(v) for v in quat_wxyz(matrix_to_quat(cam.pose[:3, :3]))],
            "fovy": float(cam.fovy_deg), "resolution": [float(cam.width), float(cam.height)]}


def _add_visuals(spec, robot: RobotInfo, out: Path, model) -> None:
    mujoco = mujoco_module()
    for part in visual_parts(model):
        rel = f"{ROBOT_DIR}/{VISUAL_DIR}/{part.name}.obj"
        write_obj(out / rel, part.vertices, part.faces)
        mesh = spec.add_mesh(name=f"{PREFIX}{part.name}", file=rel)
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL  # visual meshes need not be closed
        spec.add_material(name=f"{PREFIX}{part.name}", rgba=list(part.rgba))
        body = spec.body(f"{PREFIX}{part.link}")
        body.add_geom(name=f"{PREFIX}{part.name}", type=mujoco.mjtGeom.mjGEOM_MESH, meshname=mesh.name,
                      material=f"{PREFIX}{part.name}", contype=0, conaffinity=0, group=1, density=0.0)


def attach_robot(xml_path: Path, robot: RobotInfo, out: Path, cameras: list[ExportCamera]) -> None:
    """Compile the robot URDF with MuJoCo, attach it at the robot base and rewrite ``xml_path``.

    Raises:
        ExportError: MuJoCo cannot read the URDF, or a camera rides on a link the robot lacks.

    """
    mujoco = mujoco_module()
    urdf = copy_robot(robot, out)
    model = parse_urdf(urdf)
    try:
        rspec = mujoco.MjSpec.from_file(str(urdf))
        sspec = mujoco.MjSpec.from_file(str(xml_path))
    except Exception as exc:  # mujoco raises ValueError with its compiler message
        raise ExportError(f"MuJoCo could not read the robot URDF {urdf.name} ({exc}); export without "
                          f"--with-robot") from None
    rspec.modelfiledir = str(out)
    rel = urdf.parent.relative_to(out).as_posix()
    for mesh in rspec.meshes:
        mesh.file = f"{rel}/{mesh.file}"
    for geom in rspec.geoms:  # the importer's geoms are the collision meshes: hide them like the objects'
        geom.group = 3
    frame = sspec.worldbody.add_frame(pos=list(robot.base.position), quat=list(quat_wxyz(robot.base.orientation)))
    frame.attach_body(rspec.worldbody.first_body(), PREFIX, "")
    for body in sspec.bodies:
        if body.name.startswith(PREFIX):
            body.gravcomp = 1.0
    _add_visuals(sspec, robot, out, model)
    joints = {j.name: j for j in model.joints}
    for j in sspec.joints:
        uj = joints.get(j.name.removeprefix(PREFIX))
        if not j.name.startswith(PREFIX) or uj is None or not uj.moving:
            continue
        act = sspec.add_actuator(name=j.name, target=j.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=DRIVE_STIFFNESS[uj.type], kv=drive_damping(uj.type))
        act.ctrlrange = j.range
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE if j.limited else mujoco.mjtLimited.mjLIMITED_FALSE
        if uj.effort:
            act.forcerange = [-uj.effort, uj.effort]
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    if robot.ee_link:
        sspec.body(f"{PREFIX}{robot.ee_link}").add_site(name=f"{PREFIX}ee", size=[0.005, 0.005, 0.005], group=4)
    for cam in cameras:
        body = sspec.body(f"{PREFIX}{cam.link}")
        if body is None:
            raise ExportError(f"camera {cam.name!r} rides on link {cam.link!r}, which robot {robot.name} lacks; "
                              f"fix the scene's cameras")
        body.add_camera(name=cam.name, **camera_element_attrs(cam))
    compiled = sspec.compile()
    qpos = compiled.qpos0.copy()
    ctrl = [0.0] * compiled.nu
    for a_id in range(compiled.nu):
        jid = int(compiled.actuator_trnid[a_id, 0])
        q = robot.home.get(mujoco.mj_id2name(compiled, mujoco.mjtObj.mjOBJ_JOINT, jid).removeprefix(PREFIX), 0.0)
        qpos[compiled.jnt_qposadr[jid]] = q
        ctrl[a_id] = q
    sspec.add_key(name="home", qpos=qpos.tolist(), ctrl=ctrl)
    xml_path.write_text(sspec.to_xml())
