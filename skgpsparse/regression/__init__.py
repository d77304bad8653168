"""Sparse GP regression: the sparse MAP / projected-process model with exchange refinement.

:class:`SparseGPRegressor` is the public estimator (``_estimator``). The incremental state
(``_state``) keeps the factors that forward selection grows and backward deletion shrinks,
scored by the criteria of ``_scoring``; ``_basis`` runs forward selection and the exchange
steps. The hyperparameter objectives are the DTC marginal likelihood (``_likelihood``, GPML
eq. 8.17) and Titsias' variational bound (``_vfe``); ``_prediction`` turns the state's
factors into the predictive ones, ``_targets`` handles the targets' units and shapes. By
default (``_design``) learning starts from an exact GP on a random subset, alternates
selection with Titsias' bound, moves the basis off the rows (``_refine``) and calibrates the
noise and amplitude by leave-one-out (``_noise_loo``).
"""

from ._estimator import SparseGPRegressor

__all__ = ["SparseGPRegressor"]
