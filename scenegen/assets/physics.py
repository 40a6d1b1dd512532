"""Physical properties of an asset from its mesh: mass, centre of mass, inertia, contact.

Mass is the material density times the mesh volume, clamped into the category's
plausible mass range. The inertia tensor and centre of mass come from the mesh
itself (trimesh's mass properties scaled to the final mass), about the centre of
mass in the asset frame, so they are never the identity. A mesh that is not
watertight has no well-defined volume: its convex hull stands in, with a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import trimesh

from scenegen.catalog import Catalog, Category, load_catalog
from scenegen.errors import AssetError

log = logging.getLogger(__name__)

MIN_VOLUME = 1e-12
"""Volumes below this (m^3) count as zero."""


@dataclass(frozen=True)
class PhysicsProps:
    """Mass properties and contact parameters of one asset."""

    mass: float
    """Mass in kg (after clamping into the category's mass range)."""
    com: tuple[float, float, float]
    """Centre of mass in the asset frame (m)."""
    inertia: tuple[tuple[float, float, float], ...]
    """3x3 inertia tensor about the centre of mass, asset-frame axes (kg m^2)."""
    volume: float
    """Volume used for the mass (m^3): the mesh's, or its convex hull's when not watertight."""
    friction: float
    """Lateral friction coefficient."""
    restitution: float
    """Coefficient of restitution."""
    material: str
    """Material name the density came from."""
    density: float
    """Effective density (mass / volume) in kg/m^3, after any clamping."""
    clamped: bool
    """True when density x volume fell outside the mass range and was clamped."""
    unclamped_mass: float
    """Density x volume before clamping (kg)."""
    used_hull: bool
    """True when the convex hull stood in for a mesh that is not watertight."""

    def to_dict(self) -> dict:
        """Return a JSON-ready summary of how the mass was obtained."""
        return {"material": self.material, "density": self.density, "mass_clamped": self.clamped,
                "unclamped_mass": self.unclamped_mass, "volume_from_hull": self.used_hull}


def _solid(mesh: trimesh.Trimesh, warn_name: str) -> tuple[trimesh.Trimesh, bool]:
    """Return a closed, outward-facing mesh for mass properties and whether it is the hull."""
    if mesh.is_watertight:
        solid = mesh
        if solid.volume < 0:
            solid = mesh.copy()
            solid.invert()
        if abs(solid.volume) > MIN_VOLUME:
            return solid, False
    log.warning("%s: mesh is not watertight (or has no volume); using its convex hull for mass "
                "properties", warn_name)
    try:
        hull = mesh.convex_hull
    except Exception as exc:  # qhull raises its own error types on degenerate input
        raise AssetError(f"{warn_name}: mesh has no volume and no convex hull ({exc}); "
                         "check the mesh is not flat or empty") from None
    return hull, True


def compute_physics(mesh: trimesh.Trimesh, category: Category, attributes: dict | None = None,
                    catalog: Catalog | None = None) -> PhysicsProps:
    """Compute mass, centre of mass, inertia and contact parameters of a mesh.

    Args:
        mesh: visual mesh in the asset frame (metres).
        category: catalog category (material, mass range, friction, restitution).
        attributes: optional ``material`` overriding the category's material (its density,
            friction and restitution are then used).
        catalog: catalog holding the materials (default: :func:`load_catalog`).

    Returns:
        The :class:`PhysicsProps`.

    Raises:
        AssetError: the mesh is empty or has no volume, or the material is unknown.

    """
    catalog = catalog or load_catalog()
    attributes = attributes or {}
    if len(mesh.faces) == 0:
        raise AssetError(f"{category.name}: mesh is empty; cannot compute mass properties")
    mat_name = attributes.get("material") or category.material
    if mat_name not in catalog.materials:
        raise AssetError(f"unknown material {mat_name!r}; use one of {', '.join(sorted(catalog.materials))}")
    mat = catalog.materials[mat_name]
    if attributes.get("material"):
        friction, restitution = mat.friction, mat.restitution
    else:
        friction, restitution = category.friction, category.restitution

    with np.errstate(invalid="ignore", divide="ignore"):  # a flat hull divides by zero volume
        solid, used_hull = _solid(mesh, category.name)
        volume = float(abs(solid.volume))
    if volume <= MIN_VOLUME:
        raise AssetError(f"{category.name}: mesh volume is zero; the mesh must enclose a volume")
    raw_mass = mat.density * volume
    lo, hi = category.mass_range
    mass = float(np.clip(raw_mass, lo, hi))
    clamped = not np.isclose(mass, raw_mass, rtol=1e-9, atol=0.0)
    density = mass / volume

    props = solid.mass_properties  # unit density
    scale = density / props.density
    inertia = np.asarray(props.inertia, dtype=float) * scale
    inertia = 0.5 * (inertia + inertia.T)
    com = np.asarray(props.center_mass, dtype=float)
    if not (np.all(np.isfinite(inertia)) and np.all(np.isfinite(com))):
        raise AssetError(f"{category.name}: mass properties are not finite; the mesh is degenerate")
    if np.linalg.eigvalsh(inertia).min() <= 0:
        raise AssetError(f"{category.name}: inertia tensor is not positive definite; the mesh is "
                         "degenerate (flat or inside-out)")
    return PhysicsProps(
        mass=mass,
        com=tuple(float(x) for x in com),
        inertia=tuple(tuple(float(x) for x in row) for row in inertia),
        volume=volume, friction=float(friction), restitution=float(restitution),
        material=mat_name, density=float(density), clamped=bool(clamped),
        unclamped_mass=float(raw_mass), used_hull=used_hull,
    )
