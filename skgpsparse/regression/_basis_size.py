"""``max_basis="auto"``: forward selection that decides how many basis vectors the data need.

The selection grows the basis in doublings (``50, 100, 200, ...``) at the fit's starting
hyperparameters and, after each, evaluates Titsias' bound (Titsias 2009, eq. (9)) per
training row with the kernel's amplitude ``c`` and the noise ``s2`` re-fitted to the basis
(:func:`profiled_bound`). It stops at the first doubling that raises that bound by less than
``GAIN_PER_ROW`` nats per row and keeps the basis from before it: the next doubling would cost
about four times the fit's ``O(n p^2)`` work for less than that gain. The basis never grows
past a cap: ``MAX_AUTO_BASIS``, the number of rows, and the largest basis whose fit fits
in the memory available (:mod:`skgpsparse._memory`).

Why profiled: at the starting hyperparameters the bound itself keeps rising by nats per
row for hundreds of doublings when the starting noise is small (its trace term
``tr(K_ff - Q_ff) / (2 s2)`` charges every unexplained prior variance at that noise),
while the fitted model lowers that charge by learning a larger noise on a small basis
(benchmarks/studies/results/basis_size.md). With ``c`` and ``s2`` re-fitted the bound
measures what the basis can give the learned model. Given ``V V^T = U diag(lambda) U^T``
(one ``p x p`` eigendecomposition of the selection state's factors), Titsias' bound in
``(c, s2)`` is an ``O(p)`` function (matrix inversion and determinant lemmas, GPML A.9, A.10):

``F(c, s2) = -m/2 [(n - p) log s2 + sum_i log(c lambda_i + s2)]
- (|y|^2 - c sum_i g_i / (c lambda_i + s2)) / (2 s2) - m c t / (2 s2) - m n/2 log 2 pi``

with ``g_i = |u_i^T V y|^2`` (summed over the ``m`` targets) and ``t = tr(K_ff - Q_ff)``.
"""

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import minimize

from .._auto_basis import (
    AUTO_START,
    FIRST_SIZE,
    MAX_AUTO_BASIS,
    basis_cap,
    doubling_sizes,
    is_auto,
    row_cap,
    start_size,
)
from ..rows._store import RowStore
from ._basis import forward_step
from ._fit_memory import fit_memory

__all__ = [
    "AUTO_START", "FIRST_SIZE", "GAIN_PER_ROW", "MAX_AUTO_BASIS", "auto_basis_cap",
    "grow_until_saturated", "is_auto", "profile", "profiled_bound", "start_size",
]

#: Per-row gain (nats) of the profiled bound below which a doubling does not pay.
GAIN_PER_ROW = 0.01

# bounds of log c, the kernel amplitude's factor in the profile
_LOG_SCALE_BOUNDS = (np.log(1e-3), np.log(1e3))


def auto_basis_cap(model, X, y, n, learn, available=None):
    """The largest basis ``"auto"`` may grow on the ``n`` rows of ``X``.

    ``MAX_AUTO_BASIS``; half the rows (every row when there are at most ``FIRST_SIZE``);
    and, for rows in memory, the largest basis whose fit
    (:func:`~._fit_memory.fit_memory`, learning when ``learn``) fits in the memory
    ``available`` (bytes; ``None``: the machine's). A fit that does not fit even with one
    basis vector raises at its memory check.
    """
    if isinstance(X, RowStore):  # the rows' memory is the partitions'
        return row_cap(n)
    n_targets = 1 if y.ndim == 1 else y.shape[1]
    kappa = min(getattr(model._selector, "working_set_size", None) or 0, 64)

    def need(q):
        return fit_memory(n, X.shape[1], q, model.kernel_.n_dims, n_targets, learn, kappa,
                          X.dtype == np.float32).total

    return basis_cap(n, need, available)


def _eig_terms(state):
    """``lambda``, ``g``, ``|y|^2``, ``t`` of the module docstring from a selection state."""
    p, s2 = state.n_basis, state.noise_variance
    R = state.R
    # V V^T = R R^T - s2 I (R: the state's factor of V V^T + s2 I)
    A = R @ R.T
    A[np.diag_indices(p)] -= s2
    lam, U = eigh(A, check_finite=False)
    Vy = state.Vy.reshape(p, -1)
    g = np.sum((U.T @ Vy) ** 2, axis=1)
    return np.clip(lam, 0.0, None), g, float(state.yy), float(state.nystrom_trace())


def _negative_bound(z, lam, g, yy, t, n_rest, m):
    """Minus ``F(c, s2)`` of the module docstring and its gradient in ``z = log(c, s2)``,
    without the ``2 pi`` term (``n_rest``: ``n - p``, repeated rows counted)."""
    c, s2 = np.exp(z)
    d = c * lam + s2
    gd = float(np.sum(g / d))
    value = (-0.5 * m * (n_rest * z[1] + np.sum(np.log(d)))
             - 0.5 * (yy - c * gd) / s2 - 0.5 * m * c * t / s2)
    # dF/dc and dF/ds2, then the chain rule to the logs
    dc = (-0.5 * m * np.sum(lam / d) + 0.5 * (gd - c * np.sum(g * lam / d**2)) / s2
          - 0.5 * m * t / s2)
    ds = (-0.5 * m * (n_rest / s2 + np.sum(1.0 / d)) + 0.5 * yy / s2**2
          - 0.5 * c * (gd / s2**2 + np.sum(g / d**2) / s2) + 0.5 * m * c * t / s2**2)
    return -value, -np.array([c * dc, s2 * ds])


def profiled_bound(state, noise_bounds):
    """Titsias' bound per row of ``state``'s basis, maximised over the amplitude and the
    noise: the first value of :func:`profile`."""
    return profile(state, noise_bounds)[0]


def profile(state, noise_bounds):
    """Titsias' bound of ``state``'s basis, maximised over the amplitude and the noise.

    Parameters
    ----------
    state : RegressionState, RowScaledState or PartitionedRegressionState
        The selection state (its kernel, noise and basis).
    noise_bounds : pair of float or None
        The noise variance's bounds; ``None`` keeps the state's noise (and then the
        amplitude too: the fit learns neither).

    Returns
    -------
    value : float
        The bound per row (per unit of weight with ``sample_weight``), in nats.
    scale : float
        The factor ``c`` of the kernel at the maximum (1 with ``noise_bounds=None``).
    noise_variance : float
        The noise variance ``s2`` at the maximum.
    """
    n, p = state.n, state.n_basis
    m = 1 if state.y.ndim == 1 else state.y.shape[1]
    row_noise = getattr(state, "row_noise", None)
    # repeated rows (weights) count (w_i - 1) more times in the log s2 term (_row_noise)
    extra = 0.0 if row_noise is None else float(np.sum(row_noise.weight - 1.0))
    constant = 0.0 if row_noise is None else row_noise.log_constant(1.0, m)
    lam, g, yy, t = _eig_terms(state)

    def negative(z):
        return _negative_bound(z, lam, g, yy, t, n - p + extra, m)

    z = np.array([0.0, np.log(state.noise_variance)])
    best = -negative(z)[0]
    if noise_bounds is not None:
        bounds = [_LOG_SCALE_BOUNDS, tuple(np.log(np.maximum(noise_bounds, 1e-300)))]
        start = np.array([0.0, np.clip(z[1], *bounds[1])])
        result = minimize(negative, start, jac=True, method="L-BFGS-B", bounds=bounds)
        if -result.fun > best:
            best, z = -result.fun, result.x
    value = (best + constant - 0.5 * m * n * np.log(2.0 * np.pi)) / (n + extra)
    return float(value), float(np.exp(z[0])), float(np.exp(z[1]))


def grow_until_saturated(state, selector, rng, cap, noise_bounds, curve, progress=None):
    """Forward-select on ``state`` in doublings until one gains less than ``GAIN_PER_ROW``.

    The state (built for ``cap`` basis vectors) is grown to ``FIRST_SIZE`` (or starts from
    the size it has, if larger), then doubled
    (the last step to ``cap``); after each size the :func:`profiled_bound` per row is
    computed. When a doubling from ``p`` raises it by less than ``GAIN_PER_ROW``, the vectors
    it added are deleted (the last ones: no rotation needed) and ``p`` is kept.

    Returns
    -------
    size_curve : ndarray of shape (k, 2)
        Each size reached and its profiled bound per row.

    ``curve`` gets the cost (2) after every forward step, as in
    :func:`~._basis.select_and_exchange`.
    """
    # (a warm start's basis is there already: the doublings start from its size)
    size_curve = []
    for size in doubling_sizes(max(FIRST_SIZE, state.n_basis), cap):
        while state.n_basis < size and forward_step(state, selector, rng, curve):
            pass
        value = profiled_bound(state, noise_bounds)
        gain = value - size_curve[-1][1] if size_curve else np.inf
        size_curve.append((state.n_basis, value))
        if progress is not None:
            progress.line(
                f"max_basis='auto': basis {state.n_basis}, profiled bound per row "
                f"{value:.5f}" + ("" if len(size_curve) == 1 else f", gain {gain:.5f}")
            )
        if gain < GAIN_PER_ROW:
            keep = size_curve[-2][0]
            while state.n_basis > keep:
                state.delete(state.n_basis - 1)
                curve.append(state.cost)
            break
        if state.n_basis < size:  # no candidate left (repeated rows): stop here
            break
    return np.asarray(size_curve)
