"""The classifier's own learning: bias starts chosen on held-out rows (:mod:`._restarts`)
around the binary latent model (:class:`~skgpsparse.latent._model.LatentSparseGP`).
"""
