"""The regressor's fit on rows held in partitions by a row backend (``skgpsparse.rows``).

:func:`fit_partitioned` has the backend check ``X`` and ``y``, scales the targets, opens a
row store on their partitions (each row chunk with its targets where it lives, e.g. in an
actor on the cluster worker that computed it) and runs the same alternation of selection
and learning as the in-memory fit (:func:`~._alternation.alternate`) on that store
(:func:`fit_rows`). The fitted model is an ordinary one: its basis rows, weights and factors
are on the driver, and the partitions are released when the fit ends.
"""

from functools import partial

import numpy as np

from .._learning_rows import learning_size
from ..rows._store import row_centre
from ._alternation import _learns, alternate
from ._basis_size import start_size
from ._fitting import prepare_fit, store_fit
from ._likelihood_partitioned import fit_likelihood_partitioned
from ._partitioned_objectives import PARTITIONED_OBJECTIVES, set_row_scale
from ._row_noise import partitioned_row_noise, weighted_target_scaling
from ._targets import target_scaling

__all__ = ["fit_partitioned", "fit_rows", "objective_partitioned", "predict_partitioned"]


def fit_rows(model, rows, p, rng):
    """Select (and learn) on the partitions of the row store ``rows``; store the model."""
    kept = getattr(model, "_row_kept", None)
    model._row_centre = row_centre(rows)
    try:
        store_fit(model, alternate(model, rows, None, p, rng),
                  rows.n if kept is None else kept.size)
    finally:
        del model._row_centre
    return model


def _partitioned_scaling(backend, y, normalize, small):
    """:func:`~._targets.target_scaling` of a backend's ``y`` (one pass over it when
    normalising).

    ``small``: the rows are few enough for learning to gather them all to the driver; ``y``
    is then gathered too and scaled as in memory, bit for bit (the learned fit, whose
    refinement runs hundreds of L-BFGS iterations, follows a rounding of the targets).
    """
    if not normalize:
        return target_scaling(np.zeros((0,) + y.shape[1:]), False)
    if small:
        return target_scaling(backend.gather(y), True)

    mean, std = backend.moments(y)
    if y.ndim == 1:
        return float(mean), (float(std) if std > 0 else 1.0)
    return mean, np.where(std > 0, std, 1.0)


def _on_driver(backend, a):
    """``a`` as a numpy array: gathered when the backend holds it (n numbers)."""
    return backend.gather(a) if backend.owns(a) else a


def fit_partitioned(model, backend, X, y, sample_weight=None):
    """Fit ``model`` (a SparseGPRegressor) on ``X`` and ``y`` held by the row ``backend``.

    ``X`` of shape ``(n, d)``, ``y`` of shape ``(n,)`` or ``(n, m)`` (an in-memory ``y`` is
    partitioned as ``X``'s rows). ``sample_weight`` and a ``noise_variance`` array (numpy
    arrays of length ``n``, or arrays of the backend's kind) are gathered to the driver, as
    ``n`` numbers, and their row scales sent to the partitions (:mod:`._row_noise`).
    """
    if model.likelihood != "gaussian":  # the latent model on the partitions
        return fit_likelihood_partitioned(model, backend, X, y, sample_weight)
    X, y, _ = backend.validate(X, y, min_rows=1, dtypes=(np.float64, np.float32), labels=False)
    model.n_features_in_ = X.shape[1]
    row_noise, kept = partitioned_row_noise(
        _on_driver(backend, model.noise_variance), _on_driver(backend, sample_weight),
        X.shape[0],
    )
    m = learning_size(model.learning_rows, min(start_size(model.max_basis), X.shape[0]))
    if row_noise is None:
        scaling = _partitioned_scaling(backend, y, model.normalize_y,
                                       m is not None and X.shape[0] <= m)
    else:  # the repeated rows' mean and standard deviation, from the gathered targets
        scaling = weighted_target_scaling(backend.gather(y), row_noise.weight,
                                          model.normalize_y)
    y, p, rng = prepare_fit(model, y, X.shape[0], scaling, row_noise)
    if row_noise is not None and not (
            _learns(model, model._noise.bounds) and model.learning_rows is not None):
        raise ValueError(
            "sample_weight and a noise_variance array on a partitioned array are carried by "
            "the fit that learns on rows gathered to the driver (learning_rows='auto' or an "
            "int, learned hyperparameters), not by the selection on the partitions (fixed "
            "hyperparameters, or learning_rows=None); fit an in-memory array, or learn the "
            "hyperparameters."
        )
    model._row_kept = kept
    try:
        with backend.open(X, y) as rows:
            if row_noise is not None:
                set_row_scale(rows, row_noise.scale, row_noise.weight)
            fit_rows(model, rows, p, rng)
    finally:
        del model._row_kept
    if kept is not None and np.ndim(model.noise_variance_) > 0:  # as the in-memory fit's:
        model.noise_variance_ = model.noise_variance_[kept]  # the rows of positive weight
    model._X_train, model._y_train = X, y  # lazy: log_marginal_likelihood(theta) reads them
    return model


def predict_partitioned(model, backend, X, return_std, return_cov):
    """``model.predict`` on the row partitions of the ``backend``'s ``X`` (lazily where it is)."""
    if return_cov:
        raise ValueError(
            f"return_cov=True is not available for {backend.name} X: the covariance is "
            "n_samples x n_samples. Use return_std=True, or predict on a numpy array."
        )
    return backend.map_rows(partial(model.predict, return_std=return_std), X)


def objective_partitioned(backend, name, kernel, X, y, X_basis, noise_variance, *,
                          eval_gradient, jitter, row_noise=None):
    """The objective ``name`` ("dtc" or "vfe") on a backend's arrays, a sum over their
    partitions (``row_noise``: every row's per-row noise and weights, :mod:`._row_noise`)."""
    with backend.open(X, y) as rows:
        if row_noise is not None:
            set_row_scale(rows, row_noise.scale, row_noise.weight)
        return PARTITIONED_OBJECTIVES[name](
            kernel, rows, None, X_basis, noise_variance, eval_gradient=eval_gradient,
            jitter=jitter, row_noise=row_noise,
        )
