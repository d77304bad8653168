"""The regressor's fit with every row in the basis: the full GP, without the selection.

With ``max_basis >= n`` forward selection ends with every row in the basis, and the model on
that basis is the exact GP (the prediction's factors, :mod:`._prediction`), whatever the
order in which the rows entered. Here the basis is the rows in a fixed order (a warm start's
previous basis vectors first, as the selection takes them, then the others by index): no
selection scores, the hyperparameters learned on the exact log marginal likelihood
(:mod:`._exact`, GPML eqs. (2.30) and (5.9): one factor of ``K + s2 I`` per evaluation,
where the sparse objective on the same basis also forms ``V = L^-1 K_uf`` and ``V V^T``), and
the posterior's factors formed once (:func:`~._dtc.sparse_factors`) instead of by
``n`` appends to a selection state. The exact objective differs from the sparse one on this
basis by the jitter's effect only (``O(n jitter / s2)`` nats, :mod:`._exact`). The value
stored, and what ``log_marginal_likelihood(theta)`` evaluates on such a fit
(:func:`~._theta.objective_at`), is the exact one: the objective the hyperparameters were
learned on (so its gradient vanishes at them, scikit-learn's test), of the model that
predicts (the exact GP). The sparse objective with its jitter moved that gradient to 2e-4
with scikit-learn's ``alpha=1e-10``, where the jitter is a thousand times the noise.

A row that :meth:`~._state.RegressionState.append` refuses as numerically redundant (its
pivot in ``L`` or in ``R`` at rounding level: repeated or nearly repeated rows) leaves the
selection's basis short of ``n``; when a pivot of the factors formed here fails the same
tests, :func:`full_basis_fit` returns None and the fit selects as before.
"""

from functools import partial

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular

from ._dtc import sparse_factors
from ._exact import FULL_BASIS_OBJECTIVES

__all__ = ["full_basis_fit"]


def _order(n, seeds):
    """The rows ``seeds`` (a warm start's basis rows, in their order), then the others.

    Examples
    --------
    >>> from skgpsparse.regression._full_basis import _order
    >>> _order(5, [3, 1]).tolist()
    [3, 1, 0, 2, 4]
    >>> _order(3, ()).tolist()
    [0, 1, 2]
    """
    seeds = np.asarray(seeds, dtype=np.intp)
    rest = np.ones(n, dtype=bool)
    rest[seeds] = False
    return np.concatenate([seeds, np.flatnonzero(rest)])


def _pivots_clear(f, jitter):
    """Whether every pivot passes :meth:`~._state.RegressionState.append`'s tests.

    ``L``'s squared pivot is the conditional prior variance plus the jitter, refused below
    half the jitter; ``R``'s squared pivot minus ``s2`` is what the row adds to ``V V^T``
    (``|v|^2 - |R^-1 V v|^2``), refused at or below ``1e-10 |v|^2``.
    """
    if not np.all(np.diag(f.L) ** 2 >= 0.5 * jitter):
        return False
    added = np.diag(f.R) ** 2 - f.s2
    return bool(np.all(added > 1e-10 * np.diag(f.VVt)))


def _mean_squared_residual(kernel, X, Y, s2, row_noise=None):
    """``mean(mu^2)`` of the MAP fit with every row in the basis: ``mu = s2 (K + s2 I)^-1 y``.

    With ``row_noise``, of the whitened rows (``D K D + s2 I``, ``c y``) and weighted as the
    repeated rows: ``sum mu^2 / sum w``.
    """
    K = kernel(X)
    if row_noise is not None:
        c = row_noise.scale
        K *= c[:, None] * c[None, :]
        Y = row_noise.whiten(Y)
    K[np.diag_indices_from(K)] += s2
    a = cho_solve((cholesky(K, lower=True, check_finite=False), True), Y, check_finite=False)
    if row_noise is not None:
        return float(np.sum((s2 * a) ** 2)) / (Y.shape[1] * row_noise.total_weight)
    return float(np.mean((s2 * a) ** 2))


def full_basis_fit(model, X, y, kernel, s2, seeds, learn, jitter, learn_hyperparameters,
                   row_noise=None):
    """The fields of a :class:`~._alternation.FittedBasis` with every row of ``X`` in the basis.

    Parameters
    ----------
    model : SparseGPRegressor
        The estimator being fitted (its ``hyperparameter_objective``, noise bounds and
        progress).
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Normalised targets.
    kernel : Kernel
        Starting kernel (a warm start's, or the subset start's).
    s2 : float
        Starting noise variance.
    seeds : array-like of int
        Rows that go first in the basis (a warm start's previous basis vectors).
    learn : bool
        Whether the hyperparameters are learned on the basis.
    jitter : callable
        ``jitter(kernel, X)``: the fit's jitter.
    learn_hyperparameters : callable
        ``learn_hyperparameters(kernel, s2, X, y, X_basis, objective)`` returning
        ``(kernel, s2, objective value)`` (the design's learning step).
    row_noise : RowNoise, default=None
        Per-row noise and weights of the rows (:mod:`._row_noise`).

    Returns
    -------
    dict or None
        The fields, or None when a row would be refused by the selection as redundant.
    """
    n = X.shape[0]
    X64 = X.astype(np.float64, copy=False)
    Y = y.reshape(n, -1)
    exact = FULL_BASIS_OBJECTIVES[model.hyperparameter_objective]
    if row_noise is not None:
        exact = partial(exact, row_noise=row_noise)
    if learn:
        if model._noise.bounds is not None:
            # as after a selection: the noise no lower than the MAP fit's mean squared residual
            s2 = max(s2, _mean_squared_residual(kernel, X64, Y, s2, row_noise))
        kernel, s2, value = learn_hyperparameters(kernel, s2, X64, y, X64, exact)
        model._progress.line(
            f"every row in the basis: exact {model.hyperparameter_objective} {value:.6g}, "
            f"noise_variance {s2:.4g}, kernel {kernel}"
        )
    basis = _order(n, seeds)
    j = jitter(kernel, X)
    f = sparse_factors(kernel, X64, Y, X64[basis], s2, j, False, None, row_noise)
    if not _pivots_clear(f, j):
        return None
    Vy = f.V @ f.Y
    # cost (2) after each basis vector: (|y|^2 - |beta_k|^2) / 2, beta = R^-1 V y, whose
    # first k entries are those of the first k basis vectors (L, V and R are triangular in them)
    beta = solve_triangular(f.R, Vy, lower=True, check_finite=False)
    curve = 0.5 * (float(np.sum(f.Y * f.Y)) - np.cumsum(np.sum(beta * beta, axis=1)))
    return dict(
        kernel=kernel, noise_variance=float(s2), basis=basis, basis_vectors=X64[basis],
        L=f.L, R=f.R, Vy=Vy[:, 0] if y.ndim == 1 else Vy, jitter=j,
        objective=exact(kernel, X64, y, X64, s2),
        cost_curve=curve, n_iter=1, n_refine=0,
    )
