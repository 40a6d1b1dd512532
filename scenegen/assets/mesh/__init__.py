"""Mesh processing shared by every asset source: repair, simplification, orientation, sizing, cleanup.

* :mod:`~scenegen.assets.mesh.repair`: merging, small components, winding, holes, non-manifold edges.
* :mod:`~scenegen.assets.mesh.simplify`: every simplifier (quadric, vertex clustering, a tolerance).
* :mod:`~scenegen.assets.mesh.orient`: up axis to ``+z``, long horizontal axis to ``+x``.
* :mod:`~scenegen.assets.mesh.fit`: scaling into a category's size range, the asset frame.
* :mod:`~scenegen.assets.mesh.cleanup`: :func:`~scenegen.assets.mesh.cleanup.clean_mesh`, the whole
  chain for generated (text-to-3D) meshes.
"""
