"""The render-light robot copy names the meshes of the install it was made from, never a removed one's."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pybullet_data

from scenegen.sim import robots
from scenegen.sim.light_robot import light_robot
from scenegen.sim.robots import get_robot, register_robot


def _meshes(urdf: Path) -> list[Path]:
    return [Path(m) for m in re.findall(r'filename="([^"]+)"', urdf.read_text())]


def test_a_light_copy_made_from_a_removed_install_is_not_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(robots, "ROBOTS", dict(robots.ROBOTS))  # the test's robots leave with it
    panda = get_robot("panda")
    copies = {}
    for k in ("a", "b"):  # the same URDF text in two installs
        root = tmp_path / k
        shutil.copytree(Path(pybullet_data.getDataPath()) / "franka_panda", root / "franka_panda")
        spec = register_robot(replace(panda, name="panda_install", urdf=str(root / "franka_panda/panda.urdf")),
                              overwrite=True)  # one robot name, as every venv's "panda" is
        copies[k] = Path(light_robot(spec).urdf)
    assert copies["a"] != copies["b"]
    shutil.rmtree(tmp_path / "a")  # the first install goes away (a removed venv)
    meshes = _meshes(copies["b"])
    assert meshes and all(m.is_file() for m in meshes), [m for m in meshes if not m.is_file()]
    assert not any(str(tmp_path / "a") in str(m) for m in meshes)
