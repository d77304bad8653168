"""Sparse GP regression: the sparse MAP / projected-process model, its learning and streaming.

:class:`SparseGPRegressor` (``_estimator``) validates and delegates; its default fit learns
the kernel and the noise on Titsias' variational bound, moves the basis off the rows and
calibrates the noise and the amplitude by leave-one-out. The modules, by role:

- the model's state: ``_state`` keeps the factors that forward selection grows and backward
  deletion shrinks (in memory), ``_partitioned`` the same state with its rows in the
  partitions of a row store (:mod:`skgpsparse.rows`: in process or on cluster workers);
  ``_scoring`` holds the selection criteria both call, ``_basis`` runs forward selection and
  the exchange steps;
- the objectives: the DTC evidence (``_dtc``, GPML eq. 8.17) and Titsias' bound
  (``_vfe``, with the registry ``OBJECTIVES``), their sums over row partitions
  (``_partitioned_objectives``), with every row in the basis (``_exact``), and at another
  theta after a fit (``_theta``);
- learning: ``_kernel_choice`` (the exact-GP start on a random subset and the default
  kernel's length-scale decision), ``_hyperparameters`` (L-BFGS-B over theta and the noise
  on a fixed basis), ``_alternation`` (the alternation of selection and learning),
  ``_refine`` (the basis inputs moved by L-BFGS), ``_noise_loo`` (the leave-one-out calibration),
  ``_all_rows_posterior`` (a model learned on a subsample made the model of every row), ``_warm``
  (``warm_start``), ``_white`` (a ``WhiteKernel`` term as the noise);
- the fits around them: ``_fitting`` (set-up and the fitted attributes), ``_full_basis``
  (every row in the basis: the full GP), ``_partitioned_fit`` (a row backend's partitioned arrays);
- after the fit: ``_prediction`` (the predictive factors), ``_targets`` (the targets' units
  and shapes), ``_sampling`` (``sample_y``), ``_streaming_statistics`` (the posterior as
  ``p x p`` statistics of the rows) and ``_streaming`` (``partial_fit``, which updates them).
"""

from ._estimator import SparseGPRegressor

__all__ = ["SparseGPRegressor"]
