"""Collision proxies of an asset's visual mesh: convex parts from CoACD, a primitive, or the convex hull.

* :mod:`~scenegen.assets.collision.config`: :class:`~scenegen.assets.collision.config.CollisionConfig`
  and :class:`~scenegen.assets.collision.config.CollisionResult`.
* :mod:`~scenegen.assets.collision.build`: :func:`~scenegen.assets.collision.build.build_collision`,
  which picks the method per mesh and fits the proxy to the visual bounding box.
* :mod:`~scenegen.assets.collision.coacd`: CoACD in a helper process (:mod:`._coacd_server`), with a
  time limit and a decomposition cache.
* :mod:`~scenegen.assets.collision.hulls`: convex-part geometry (merging, bbox fitting, coverage).
* :mod:`~scenegen.assets.collision.primitives`: box / cylinder / sphere proxies.

This package imports nothing itself, so ``python -m scenegen.assets.collision._coacd_server`` stays light.
"""
