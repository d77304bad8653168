"""The regressor's fit around the selection: its set-up and the fitted attributes it stores.

Shared by the in-memory fit (``SparseGPRegressor._fit``) and the fit over row partitions
(:mod:`skgpsparse.regression._partitioned_fit`), so that both make the same model from the same
state.
"""

import warnings

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from .._progress import Progress
from ._alternation import alternate
from ._basis import make_selector
from ._basis_size import is_auto, start_size
from ._hyperparameters import check_noise_bounds
from ._prediction import RegressionPredictor, exact_factor, prediction_factors
from ._refine import check_refinable
from ._row_noise import (
    exact_fit_rows,
    rows_of_positive_weight,
    weighted_target_scaling,
)
from ._streaming_statistics import FitStatistics
from ._targets import target_scaling
from ._white import fold_white, unfold_white

__all__ = ["fit_in_memory", "prepare_fit", "store_fit"]


def fit_in_memory(model, X, y, sample_weight=None):
    """``SparseGPRegressor.fit`` on in-memory rows (``sample_weight``: the rows' weights)."""
    # float32 stays float32 (the state scores in float32 and keeps a float64 model).
    X, y = validate_data(
        model, X, y, y_numeric=True, multi_output=True, dtype=[np.float64, np.float32]
    )
    # Several targets (y of shape (n, m)) share the basis, the kernel and the noise, as
    # in scikit-learn's GaussianProcessRegressor; a 1-D y stays 1-D.
    y = np.asarray(y, dtype=np.float64)
    X, y, row_noise, kept = rows_of_positive_weight(model.noise_variance, X, y, sample_weight)
    X, y, row_noise, index = exact_fit_rows(X, y, row_noise, start_size(model.max_basis))
    if index is not None:
        kept = index if kept is None else kept[index]
    if row_noise is None:
        scaling = target_scaling(y, model.normalize_y)
    else:  # the repeated rows' mean and standard deviation
        scaling = weighted_target_scaling(y, row_noise.weight, model.normalize_y)
    y, p, rng = prepare_fit(model, y, X.shape[0], scaling, row_noise)
    store_fit(model, alternate(model, X, y, p, rng), X.shape[0])
    if kept is not None:  # indices of the X given (zero-weight and repeated rows included)
        model.basis_indices_ = kept[model.basis_indices_]
    # Only log_marginal_likelihood(theta) needs the training data (eq. (8.17) sums over
    # all of it); prediction uses the basis, alpha_ and the two p x p matrices. The data are
    # kept in memory but not pickled (see __getstate__).
    model._X_train, model._y_train = X, y
    return model


def prepare_fit(model, y, n, scaling, row_noise=None):
    """Check the targets, set the fit's kernel, threads, selector and scaling.

    ``y`` has shape ``(n,)`` or ``(n, n_targets)`` (a numpy or partitioned array), ``scaling`` is
    ``(mean, std)`` of the targets (:func:`~._targets.target_scaling`); ``row_noise`` the
    rows' per-row noise and weights (:mod:`._row_noise`), kept as ``model._row_noise``. With a
    ``noise_variance`` array the noise the fit learns (or keeps) is its common scale, started
    at 1. Returns the normalised targets, the basis size and the random state.
    """
    n_targets = y.shape[1] if y.ndim == 2 else 1
    if model.n_targets is not None and n_targets != model.n_targets:
        raise ValueError(
            f"The number of targets seen in `y` is different from the parameter "
            f"`n_targets`. Got {n_targets} != {model.n_targets}."
        )
    model.kernel_ = C(1.0) * RBF(1.0) if model.kernel is None else clone(model.kernel)
    if model.refine_basis != "auto" and model.refine_basis:
        check_refinable(model.kernel_)
    rng = check_random_state(model.random_state)
    # Threads of the state's row passes (joblib's reading of n_jobs: None -> 1, -1 -> all).
    model._n_threads = effective_n_jobs(model.n_jobs)
    check_noise_bounds(model.noise_variance_bounds)  # a clear error before any work
    # a WhiteKernel term is noise (scikit-learn's alpha beside it): fitted as such (_white)
    per_row = np.ndim(model.noise_variance) > 0  # an array: the rows' own noise variances
    model.kernel_, model._noise = fold_white(
        model.kernel_, 1.0 if per_row else model.noise_variance, model.noise_variance_bounds
    )
    if per_row and model._noise.white is not None:
        raise ValueError(
            "A noise_variance array (per-row noise) cannot be combined with a WhiteKernel "
            "term in the kernel (a common noise level beside it); give the noise as the "
            "array alone, or a scalar noise_variance with the WhiteKernel."
        )
    model._row_noise = row_noise
    model._y_train_mean, model._y_train_std = scaling
    y = (y - model._y_train_mean) / model._y_train_std
    p = start_size(model.max_basis)  # "auto": the start's size; the selection decides
    if p > n and not is_auto(model.max_basis):
        warnings.warn(
            f"max_basis={p} exceeds the number of samples {n}; using max_basis={n}.",
            UserWarning,
        )
    p = min(p, n)
    model._selector = make_selector(model.selection, model.working_set_size)
    model._progress = Progress("SparseGPRegressor", model.verbose)
    return y, p, rng


def store_fit(model, fit, n_rows):
    """Set the fitted attributes from a :class:`~._alternation.FittedBasis` of ``n_rows`` rows."""
    model.kernel_, model.noise_variance_ = unfold_white(
        model._noise, fit.kernel, fit.noise_variance
    )
    row_noise = getattr(model, "_row_noise", None)
    if row_noise is not None:
        model._noise_scale = float(fit.noise_variance)  # s2: row i's noise is s2 a_i / w_i
        if np.ndim(model.noise_variance) > 0:  # per-row noise: the rows' variances s2 a_i
            model.noise_variance_ = fit.noise_variance * row_noise.relative
    model.basis_indices_ = fit.basis
    model.n_basis_ = len(fit.basis)
    # max_basis="auto": each size the selection reached and its profiled bound per row
    model.basis_size_curve_ = model.__dict__.pop("_size_curve", None)
    model.basis_vectors_ = np.asarray(fit.basis_vectors, dtype=np.float64)
    model.n_iter_, model.n_refine_iter_ = fit.n_iter, fit.n_refine
    # The predictive factors with the jitter only where strictly needed (the state's L
    # as a preconditioner): the exact GP's predictions when every row is in the basis.
    factors = prediction_factors(fit.L, fit.R, fit.Vy, fit.jitter, fit.noise_variance)
    model.alpha_ = factors.alpha * model._y_train_std
    # every row in the basis: the exact GP, its variances from K_uu + s2 I's factor
    s2_basis = fit.noise_variance  # K_uu + s2 I; each basis row's own noise with row noise
    if row_noise is not None and len(fit.basis) == n_rows:
        s2_basis = fit.noise_variance * (row_noise.relative / row_noise.weight)[fit.basis]
    exact = (exact_factor(fit.L, fit.jitter, s2_basis)
             if len(fit.basis) == n_rows else None)
    model._predictor = RegressionPredictor(
        model.kernel_, model.basis_vectors_, model.alpha_, fit.L, factors.S, exact
    )
    model.log_marginal_likelihood_value_ = float(fit.objective)
    model.cost_curve_ = fit.cost_curve
    model._jitter_value = fit.jitter
    # the p x p statistics that partial_fit updates (._streaming_statistics)
    model._stream = FitStatistics(fit.L, fit.R, fit.Vy, fit.jitter, int(n_rows), factors)
