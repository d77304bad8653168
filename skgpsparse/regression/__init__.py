"""Sparse GP regression: the sparse MAP / projected-process model with exchange refinement.

:class:`SparseGPRegressor` is the public estimator (``_estimator``). The incremental state
(``_state``) keeps the factors that forward selection grows and backward deletion shrinks,
scored by the criteria of ``_scoring``; ``_basis`` runs forward selection and the exchange
steps; ``_likelihood`` holds the hyperparameter objective (the DTC marginal likelihood, GPML
eq. 8.17) and its gradient.
"""

from ._estimator import SparseGPRegressor

__all__ = ["SparseGPRegressor"]
