"""The regressor at scale: what was learned on a subsample, made the model of every row.

With ``learning_rows`` (:mod:`skgpsparse._learning_rows`) the selection, the hyperparameter
learning and the basis refinement of :func:`~._alternation.alternate` run on a random subsample;
their result (the kernel, the noise variance and the basis inputs) then fixes the model whose
posterior is formed on every row here: one pass for ``V = L^-1 K_uf`` and ``V V^T`` (GPML
eq. (8.26) and the matrix inversion lemma, :func:`~._dtc.sparse_factors`), after which
the leave-one-out calibration runs on every row as in any fit. Where ``V`` would be larger
than the classifier's all-rows passes keep whole
(:func:`~skgpsparse.inference._row_columns.stores_columns`: 1 GiB, or the size of ``X``),
the rows in memory take the row store's route below as one partition: two passes that form
``V``'s blocks again and keep only ``V V^T`` and ``V Y`` (the same posterior to rounding).
On a row store (a fit on a partitioned array) the learning rows are gathered to the driver
and the same pass runs on the partitions (:func:`posterior_on_row_store`).
"""

import numpy as np

from ..inference._row_columns import stores_columns
from ..rows._store import LocalRows
from ._dtc import dtc_value, sparse_factors
from ._partitioned_objectives import partitioned_factors, set_row_scale
from ._vfe import unexplained_variance, vfe_value

__all__ = [
    "factors_objective", "posterior_on_all_rows", "posterior_on_row_store", "rows_by_passes",
]


def factors_objective(objective, kernel, X, f):
    """``"vfe"`` (Titsias' bound, eq. (9)) or ``"dtc"`` (GPML eq. (8.17)) from the factors
    ``f`` of :func:`~._dtc.sparse_factors` on the rows ``X``."""
    if objective == "vfe":
        return float(vfe_value(f, unexplained_variance(kernel, X, f)))
    return float(dtc_value(f))


def rows_by_passes(X, y, p, row_noise=None):
    """The rows ``X, y`` as one in-memory partition of a row store when ``V`` of ``p`` basis
    vectors would be larger than :func:`~skgpsparse.inference._row_columns.stores_columns`
    keeps (else None): the store's objectives form ``V``'s blocks again in each pass.

    ``X`` is float64 (not copied); ``row_noise``: the rows' per-row noise and weights, whose
    scales the partition then holds (:func:`~._partitioned_objectives.set_row_scale`).
    """
    if stores_columns(X.shape[0], p, X.nbytes):
        return None
    store = LocalRows(X, y, partition_rows=X.shape[0])
    if row_noise is not None:
        set_row_scale(store, row_noise.scale, row_noise.weight)
    return store


def posterior_on_all_rows(fit, X, y, rows, jitter, objective, row_noise=None):
    """The :class:`~._alternation.FittedBasis` ``fit`` learned on ``X[rows]``, on every row.

    The kernel, the noise variance and the basis inputs stay; ``L``, ``R`` and ``V y`` (the
    posterior on the basis) and the objective's value are those of all rows of ``X`` and
    ``y``, the basis indices are mapped from the subsample's to the training set's.
    ``jitter`` is the fit's jitter on all rows (relative to the mean prior variance);
    ``row_noise`` the rows' per-row noise and weights (:mod:`._row_noise`).
    """
    Y = y.reshape(len(y), -1)
    X64 = X.astype(np.float64, copy=False)
    store = rows_by_passes(X64, y, len(fit.basis_vectors), row_noise)
    if store is not None:  # the row store's two passes, which keep only p x p and p x m sums
        return posterior_on_row_store(fit, store, rows, jitter, objective, row_noise)
    f = sparse_factors(
        fit.kernel, X64, Y, fit.basis_vectors, fit.noise_variance, jitter, False, None,
        row_noise,
    )
    Vy = f.V @ f.Y
    return fit._replace(
        basis=rows[np.asarray(fit.basis)], L=f.L, R=f.R, Vy=Vy[:, 0] if y.ndim == 1 else Vy,
        jitter=jitter, objective=factors_objective(objective, fit.kernel, X64, f),
    )


def posterior_on_row_store(fit, store, rows, jitter, objective, row_noise=None):
    """:func:`posterior_on_all_rows` on every row of the row store ``store``.

    ``fit`` was learned on the rows ``rows`` (sorted global indices) gathered from ``store``;
    its posterior on the basis is formed from the partitions' sums of ``V V^T`` and ``V Y``
    (:func:`~._partitioned_objectives.partitioned_factors`), the basis indices are mapped to
    the training set's. ``row_noise``: the per-row noise and weights of every row of
    ``store``, whose partitions hold their row scales
    (:func:`~._partitioned_objectives.set_row_scale`).
    """
    L, R, VY, value = partitioned_factors(
        fit.kernel, store, fit.basis_vectors, fit.noise_variance, jitter, objective, row_noise
    )
    return fit._replace(
        basis=rows[np.asarray(fit.basis)], L=L, R=R,
        Vy=VY[:, 0] if store.target_shape == () else VY, jitter=jitter, objective=value,
    )
