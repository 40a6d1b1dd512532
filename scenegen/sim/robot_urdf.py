"""Compose one URDF from several copies of an arm's URDF: prefixed names, one fixed base link.

A multi-arm robot (see :func:`scenegen.sim.robots.bimanual_panda`) is one URDF, so that the
world loads one body and every exporter, which reads links and joints from the URDF, carries
every arm. :func:`compose_urdf` copies each source arm's links and joints with a name prefix
(``left_panda_link0`` ...), mounts each arm's root link on a common base link with a fixed
joint at the arm's mount pose, and copies the source meshes next to the composed file, so that
mesh paths stay relative (exporters copy them by their relative path). The file is written
once per content into the system temporary folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from scenegen.errors import ConfigError
from scenegen.fileio import publish_dir

_LOCK = threading.Lock()


@dataclass(frozen=True)
class Mount:
    """One arm of a composed robot: its source URDF, its name prefix and where it stands."""

    urdf: Path
    """The arm's own URDF (its meshes live below its folder)."""
    prefix: str
    """Prefix of every link, joint and mimic reference of this arm (e.g. ``"left_"``)."""
    xyz: tuple[float, float, float]
    """Position of the arm's root link in the base link's frame (m)."""
    yaw: float = 0.0
    """Turn of the arm about z (rad)."""


def _prefixed(root: ET.Element, prefix: str) -> list[ET.Element]:
    """The arm's links and joints with every name and link reference prefixed."""
    out = []
    for el in root:
        if el.tag not in ("link", "joint"):
            continue
        el.set("name", prefix + el.get("name", ""))
        if el.tag == "joint":
            for tag in ("parent", "child"):
                ref = el.find(tag)
                if ref is not None:
                    ref.set("link", prefix + ref.get("link", ""))
            mimic = el.find("mimic")
            if mimic is not None:
                mimic.set("joint", prefix + mimic.get("joint", ""))
        out.append(el)
    return out


def _root_link(elements: list[ET.Element]) -> str:
    links = [e.get("name") for e in elements if e.tag == "link"]
    children = {e.find("child").get("link") for e in elements if e.tag == "joint" and e.find("child") is not None}
    roots = [n for n in links if n not in children]
    if len(roots) != 1:
        raise ConfigError(f"an arm URDF must be one tree of links; it has roots {roots}")
    return str(roots[0])


def compose_text(name: str, mounts: tuple[Mount, ...], base_link: str = "bench") -> str:
    """The composed URDF text (mesh filenames as the sources write them; see :func:`compose_urdf`)."""
    robot = ET.Element("robot", {"name": name})
    base = ET.SubElement(robot, "link", {"name": base_link})
    inertial = ET.SubElement(base, "inertial")
    ET.SubElement(inertial, "origin", {"xyz": "0 0 0", "rpy": "0 0 0"})
    ET.SubElement(inertial, "mass", {"value": "5.0"})
    ET.SubElement(inertial, "inertia", {"ixx": "0.1", "ixy": "0", "ixz": "0", "iyy": "0.1", "iyz": "0", "izz": "0.1"})
    for m in mounts:
        try:
            src = ET.parse(m.urdf).getroot()
        except (ET.ParseError, OSError) as exc:
            raise ConfigError(f"cannot read arm URDF {m.urdf} ({exc}); fix the robot's URDF path") from None
        elements = _prefixed(src, m.prefix)
        arm_root = _root_link(elements)
        robot.extend(elements)
        joint = ET.SubElement(robot, "joint", {"name": f"{m.prefix}mount", "type": "fixed"})
        ET.SubElement(joint, "parent", {"link": base_link})
        ET.SubElement(joint, "child", {"link": arm_root})
        ET.SubElement(joint, "origin", {"xyz": " ".join(f"{v:.6g}" for v in m.xyz), "rpy": f"0 0 {m.yaw:.9g}"})
    ET.indent(robot)
    return '<?xml version="1.0" ?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def compose_urdf(name: str, mounts: tuple[Mount, ...], base_link: str = "bench") -> Path:
    """Write (once per content) the composed URDF of ``mounts`` and return its path.

    Every source must keep its meshes below its own folder (their relative paths are kept); the
    sources' folders are copied (hard-linked where possible) next to the composed file.

    Raises:
        ConfigError: no mount, a duplicate prefix, a source URDF that cannot be read, or sources in
            different folders.

    """
    if not mounts or len({m.prefix for m in mounts}) != len(mounts):
        raise ConfigError(f"robot {name}: give at least one arm mount, each with its own prefix")
    folders = {Path(m.urdf).resolve().parent for m in mounts}
    if len(folders) != 1:
        raise ConfigError(f"robot {name}: the arm URDFs must share one folder, got {sorted(map(str, folders))}")
    src_dir = folders.pop()
    text = compose_text(name, mounts, base_link)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "scenegen_robots" / f"{name}_{digest}"
    path = folder / "robot.urdf"

    def fill(tmpdir: Path) -> None:
        for sub in sorted(p for p in src_dir.iterdir() if p.is_dir()):
            shutil.copytree(sub, tmpdir / sub.name, copy_function=_link_or_copy)
        (tmpdir / "robot.urdf").write_text(text)

    with _LOCK:
        if not path.is_file():  # another process may publish it first: its copy is kept
            publish_dir(folder, fill, keep_existing=lambda f: (f / "robot.urdf").is_file())
    return path
