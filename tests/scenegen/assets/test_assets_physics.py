import logging

import numpy as np
import pytest
import trimesh

from scenegen.assets.physics import compute_physics
from scenegen.catalog import load_catalog
from scenegen.errors import AssetError
from tests.helpers.asset_shapes import bowl_mesh

CAT = load_catalog()


def box_inertia(m, x, y, z):
    return np.diag([m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12])


def test_box_mass_inertia_match_closed_form():
    block = CAT.get("block")  # wood, mass range 0.03..0.15 kg
    x, y, z = 0.05, 0.045, 0.04
    ph = compute_physics(trimesh.creation.box(extents=(x, y, z)), block)
    expected_mass = CAT.materials["wood"].density * x * y * z
    assert block.mass_range[0] < expected_mass < block.mass_range[1]
    assert ph.mass == pytest.approx(expected_mass, rel=1e-9)
    assert not ph.clamped and ph.material == "wood"
    assert ph.volume == pytest.approx(x * y * z, rel=1e-9)
    np.testing.assert_allclose(np.array(ph.inertia), box_inertia(ph.mass, x, y, z), rtol=1e-9, atol=1e-15)
    assert ph.friction == block.friction and ph.restitution == block.restitution


def test_mass_is_clamped_and_inertia_scaled_with_it():
    block = CAT.get("block")
    big = trimesh.creation.box(extents=(0.2, 0.2, 0.2))  # 5.2 kg of wood, far above 0.15
    ph = compute_physics(big, block)
    assert ph.clamped and ph.mass == block.mass_range[1]
    assert ph.unclamped_mass == pytest.approx(650 * 0.008)
    assert ph.density == pytest.approx(ph.mass / 0.008)
    np.testing.assert_allclose(np.array(ph.inertia), box_inertia(ph.mass, 0.2, 0.2, 0.2), rtol=1e-9)
    tiny = trimesh.creation.box(extents=(0.01, 0.01, 0.01))  # 0.65 g, below 0.03 kg
    low = compute_physics(tiny, block)
    assert low.clamped and low.mass == block.mass_range[0]


def test_material_attribute_overrides_density_friction_restitution():
    block = CAT.get("block")
    mesh = trimesh.creation.box(extents=(0.04, 0.04, 0.04))
    ph = compute_physics(mesh, block, {"material": "rubber"})
    rubber = CAT.materials["rubber"]
    assert ph.material == "rubber"
    assert ph.mass == pytest.approx(np.clip(rubber.density * 0.04 ** 3, *block.mass_range))
    assert ph.friction == rubber.friction and ph.restitution == rubber.restitution
    with pytest.raises(AssetError, match="unknown material 'unobtainium'"):
        compute_physics(mesh, block, {"material": "unobtainium"})


def test_centre_of_mass_and_inertia_of_an_asymmetric_shape_follow_the_mesh():
    # An L-shaped solid: COM off the bbox centre, off-diagonal inertia terms non-zero.
    a = trimesh.creation.box(extents=(0.08, 0.02, 0.02), transform=trimesh.transformations.translation_matrix(
        (0.04, 0.01, 0.01)))
    b = trimesh.creation.box(extents=(0.02, 0.06, 0.02), transform=trimesh.transformations.translation_matrix(
        (0.01, 0.05, 0.01)))
    mesh = trimesh.boolean.union([a, b])
    hammer = CAT.get("hammer")
    ph = compute_physics(mesh, hammer)
    ref = mesh.copy()
    ref.density = ph.mass / mesh.volume
    np.testing.assert_allclose(ph.com, ref.center_mass, atol=1e-9)
    np.testing.assert_allclose(np.array(ph.inertia), ref.moment_inertia, rtol=1e-6, atol=1e-15)
    inertia = np.array(ph.inertia)
    assert abs(inertia[0, 1]) > 1e-3 * inertia[0, 0]  # a real product of inertia
    assert not np.allclose(inertia, np.eye(3))
    np.testing.assert_allclose(inertia, inertia.T)
    assert np.linalg.eigvalsh(inertia).min() > 0
    assert not np.allclose(ph.com, mesh.bounds.mean(axis=0), atol=1e-3)


def test_inverted_mesh_still_gives_positive_mass_properties():
    mesh = trimesh.creation.box(extents=(0.05, 0.04, 0.03))
    mesh.invert()
    assert mesh.volume < 0
    ph = compute_physics(mesh, CAT.get("block"))
    assert ph.volume == pytest.approx(0.05 * 0.04 * 0.03)
    assert np.linalg.eigvalsh(np.array(ph.inertia)).min() > 0


def test_open_mesh_falls_back_to_convex_hull_with_warning(caplog):
    bowl = bowl_mesh()
    opened = bowl.copy()
    opened.update_faces(np.arange(len(opened.faces)) % 7 != 0)  # punch holes
    assert not opened.is_watertight
    with caplog.at_level(logging.WARNING, logger="scenegen.assets.physics"):
        ph = compute_physics(opened, CAT.get("bowl"))
    assert ph.used_hull
    assert ph.volume == pytest.approx(opened.convex_hull.volume)
    assert "not watertight" in caplog.text and "convex hull" in caplog.text
    closed = compute_physics(bowl, CAT.get("bowl"))
    assert not closed.used_hull and closed.volume == pytest.approx(bowl.volume)


def test_empty_or_flat_mesh_is_rejected():
    with pytest.raises(AssetError, match="empty"):
        compute_physics(trimesh.Trimesh(), CAT.get("block"))
    flat = trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], [[0, 1, 2], [1, 3, 2]])
    with pytest.raises(AssetError, match="no volume|volume is zero|flat"):
        compute_physics(flat, CAT.get("block"))


@pytest.mark.parametrize("name", ["bowl", "can", "banana", "hammer", "bin"])
def test_catalog_friction_and_restitution_are_used(name):
    cat = CAT.get(name)
    ph = compute_physics(trimesh.creation.icosphere(radius=0.03), cat)
    assert (ph.friction, ph.restitution) == (cat.friction, cat.restitution)
    assert cat.mass_range[0] <= ph.mass <= cat.mass_range[1]
