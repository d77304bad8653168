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
from ._alternation import alternate
from ._fitting import prepare_fit, store_fit
from ._partitioned_objectives import PARTITIONED_OBJECTIVES
from ._targets import target_scaling

__all__ = ["fit_partitioned", "fit_rows", "objective_partitioned", "predict_partitioned"]


def fit_rows(model, rows, p, rng):
    """Select (and learn) on the partitions of the row store ``rows``; store the model."""
    model._row_centre = row_centre(rows)
    try:
        store_fit(model, alternate(model, rows, None, p, rng), rows.n)
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


def fit_partitioned(model, backend, X, y, sample_weight=None):
    """Fit ``model`` (a SparseGPRegressor) on ``X`` and ``y`` held by the row ``backend``.

    ``X`` of shape ``(n, d)``, ``y`` of shape ``(n,)`` or ``(n, m)`` (an in-memory ``y`` is
    partitioned as ``X``'s rows). Per-row noise is not carried by the partitions' passes:
    ``sample_weight`` or a ``noise_variance`` array raise a ValueError.
    """
    if sample_weight is not None or np.ndim(model.noise_variance) > 0:
        raise ValueError(
            "sample_weight and a noise_variance array are not available for a fit on a "
            "partitioned array; fit an in-memory array, or give the weights by repeating "
            "rows."
        )
    X, y, _ = backend.validate(X, y, min_rows=1, dtypes=(np.float64, np.float32), labels=False)
    model.n_features_in_ = X.shape[1]
    m = learning_size(model.learning_rows, min(model.max_basis, X.shape[0]))
    scaling = _partitioned_scaling(backend, y, model.normalize_y,
                                   m is not None and X.shape[0] <= m)
    y, p, rng = prepare_fit(model, y, X.shape[0], scaling)
    with backend.open(X, y) as rows:
        fit_rows(model, rows, p, rng)
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
                          eval_gradient, jitter):
    """The objective ``name`` ("dtc" or "vfe") on a backend's arrays, a sum over their
    partitions."""
    with backend.open(X, y) as rows:
        return PARTITIONED_OBJECTIVES[name](
            kernel, rows, None, X_basis, noise_variance, eval_gradient=eval_gradient,
            jitter=jitter,
        )
