"""Assets from diffusion models (optional: ``pip install 'scenegen[diffusion]'``).

* :mod:`~scenegen.assets.diffusion.pipelines`: the diffusers backends, Shap-E (text to mesh) and
  text to image, loaded offline (the only modules here that import ``torch``).
* :mod:`~scenegen.assets.diffusion.assets`: the asset builders on top of them,
  :func:`~scenegen.assets.diffusion.assets.generate_shap_e_asset` and
  :func:`~scenegen.assets.diffusion.assets.textured_asset`.
* :mod:`~scenegen.assets.diffusion.texturing`: UV projections putting a generated image on a mesh.
"""
