"""The regressor's fit on rows held in partitions: a dask array's row chunks on a cluster.

:func:`fit_dask` checks a ``dask.array`` ``X`` and ``y``, scales the targets, puts each row
chunk with its targets in an actor on the worker that computed it
(:class:`skgpsparse.rows._dask.DaskRows`) and runs the same alternation of selection and
learning as the in-memory fit (:func:`~._design.alternate`) on that row store
(:func:`fit_rows`). The fitted model is an ordinary one: its basis rows, weights and
factors are on the driver, and the actors are released when the fit ends.
"""

from functools import partial

import numpy as np

from .._learning_rows import learning_size
from ..rows._dask import DaskRows, is_dask_array, lazy_predict, row_chunked
from ..rows._store import row_centre
from ._alternation import alternate
from ._fitting import prepare_fit, store_fit
from ._partitioned_objectives import PARTITIONED_OBJECTIVES
from ._targets import target_scaling

__all__ = ["fit_dask", "fit_rows", "objective_dask", "predict_dask"]


def fit_rows(model, rows, p, rng):
    """Select (and learn) on the partitions of the row store ``rows``; store the model."""
    model._row_centre = row_centre(rows)
    try:
        store_fit(model, alternate(model, rows, None, p, rng), rows.n)
    finally:
        del model._row_centre
    return model


def _dask_scaling(y, normalize, small):
    """:func:`~._targets.target_scaling` of a dask ``y`` (one pass over it when normalising).

    ``small``: the rows are few enough for learning to gather them all to the driver; ``y``
    is then gathered too and scaled as in memory, bit for bit (the learned fit, whose
    refinement runs hundreds of L-BFGS iterations, follows a rounding of the targets).
    """
    if not normalize:
        return target_scaling(np.zeros((0,) + y.shape[1:]), False)
    import dask

    if small:
        return target_scaling(y.compute(), True)

    mean, std = dask.compute(y.mean(axis=0), y.std(axis=0))
    if y.ndim == 1:
        return float(mean), (float(std) if std > 0 else 1.0)
    return mean, np.where(std > 0, std, 1.0)


def fit_dask(model, X, y):
    """Fit ``model`` (a SparseGPRegressor) on dask arrays ``X`` and ``y``.

    ``X`` of shape ``(n, d)`` chunked by rows, ``y`` of shape ``(n,)`` or ``(n, m)`` (a numpy
    ``y`` is chunked like ``X``). Needs an active dask.distributed client.
    """
    import dask
    import dask.array as da

    if not is_dask_array(X):
        raise TypeError(
            "`X` must be a dask array when `y` is one (pass both as dask arrays), got "
            f"{type(X).__name__}."
        )
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(
            f"`X` must be a 2-D dask array with at least one row and one column, got shape "
            f"{X.shape}."
        )
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if not is_dask_array(y):
        y = da.from_array(np.asarray(y, dtype=np.float64), chunks=X.chunks[0][0])
    X, y = row_chunked(X, y.astype(np.float64))
    finite_X, finite_y = dask.compute(da.isfinite(X).all(), da.isfinite(y).all())
    for name, ok in (("X", finite_X), ("y", finite_y)):
        if not ok:
            raise ValueError(f"`{name}` must contain only finite values (no NaN or inf).")
    model.n_features_in_ = X.shape[1]
    m = learning_size(model.learning_rows, min(model.max_basis, X.shape[0]))
    scaling = _dask_scaling(y, model.normalize_y, m is not None and X.shape[0] <= m)
    y, p, rng = prepare_fit(model, y, X.shape[0], scaling)
    with DaskRows(X, y) as rows:
        fit_rows(model, rows, p, rng)
    model._X_train, model._y_train = X, y  # lazy: log_marginal_likelihood(theta) reads them
    return model


def predict_dask(model, X, return_std, return_cov):
    """``model.predict`` on the row chunks of the dask array ``X``, lazily."""
    if return_cov:
        raise ValueError(
            "return_cov=True is not available for a dask array X: the covariance is "
            "n_samples x n_samples. Use return_std=True, or predict on a numpy array."
        )
    return lazy_predict(partial(model.predict, return_std=return_std), X)


def objective_dask(name, kernel, X, y, X_basis, noise_variance, *, eval_gradient, jitter):
    """The objective ``name`` ("dtc" or "vfe") on dask arrays, a sum over their row chunks."""
    with DaskRows(X, y) as rows:
        return PARTITIONED_OBJECTIVES[name](
            kernel, rows, None, X_basis, noise_variance, eval_gradient=eval_gradient,
            jitter=jitter,
        )
