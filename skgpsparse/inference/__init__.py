"""Inference engines: the approximate posteriors every family builds, whatever holds the rows.

Each engine asks a likelihood (:mod:`skgpsparse.likelihoods`) for the tilted moments and the
site updates, and does its per-row work in block functions that the in-memory state and the
row partitions (:mod:`skgpsparse.rows`) both call:

- ADF on the basis (the papers' classifier): :mod:`._adf` (the state, ``ADFBasis`` and
  ``ADFState``), :mod:`._adf_rows` (the per-row arithmetic), :mod:`._adf_partitioned` (the
  state with its rows in partitions), :mod:`._criteria` (the selection criteria, registered
  by name), :mod:`._site_optimization` (sites by NLP minimisation);
- EP over every row under a sparse prior: :mod:`._sparse_prior` (FITC / DTC factors),
  :mod:`._ep_passes` (ADF start and EP sweeps by row blocks), :mod:`._ep` (the EP loop, its
  evidence and gradient), :mod:`._ep_acceleration` (Anderson mixing of the sweeps),
  :mod:`._ep_partitioned` (the same EP on row partitions);
- the streaming ADF of new rows into a ``p x p`` posterior: :mod:`._online`.
"""
