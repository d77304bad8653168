"""The noise variance by leave-one-out predictive likelihood, with the basis and kernel fixed.

Titsias' bound over-estimates the noise variance when the basis cannot explain the prior
variance at the training rows (its trace term ``tr(K_ff - Q_ff) / (2 s2)`` is lowered by a
larger ``s2``; Bauer, van der Wilk and Rasmussen 2016), and the predictive variance, which adds
``s2``, comes out too wide. Cross-validation judges ``s2`` by what it is for instead: the
predictive density of held-out targets (GPML §5.4.2; Sundararajan and Keerthi 2001). For the
projected-process model ``y ~ N(0, Q_ff + s2 I)`` the leave-one-out predictive of row ``i``
has, with ``C = Q_ff + s2 I`` (GPML eqs. (5.10)-(5.12)),

    mean residual  y_i - mu_-i = [C^-1 y]_i / [C^-1]_ii,     variance  1 / [C^-1]_ii,

to which the unexplained prior variance ``k_ii - q_ii`` is added, as the model's own
predictive variance adds ``k(x, x) - q(x, x)`` at a new input (eq. (8.27)). With ``V = L^-1
K_uf`` (``Q_ff = V^T V``), ``V V^T = U diag(lambda) U^T`` and ``T = U^T V``,

    C^-1 = (I - T^T (Lambda + s2 I)^-1 T) / s2,
    [C^-1]_ii = (1 - sum_k T_ki^2 / (lambda_k + s2)) / s2,
    C^-1 y   = (y - T^T ((Lambda + s2 I)^-1 T y)) / s2,

so that, after one ``p x p`` eigendecomposition, the leave-one-out negative log predictive
density (the mean over rows and targets of ``1/2 log(2 pi var_i) + res_i^2 / (2 var_i)``) at
every ``s2`` of a grid costs O(n p) per grid point. A coarse grid, log-spaced around the
objective's noise variance within its bounds, is evaluated in one pass over the rows (row
blocks of the in-memory data, or the partitions of a row store: the same sums); a second pass
evaluates a fine grid over the best point's two cells, and the minimum is refined by a
parabola through its fine-grid neighbours in ``log s2``.

The amplitude with the noise
----------------------------
The DTC evidence inflates the kernel's amplitude (it does not charge for ``k - q``, Titsias
2009), and no noise variance can take back an unexplained variance ``k - q`` that is too
large: its error bars stay too wide. Scaling the kernel by ``c`` with the noise at ``c r``
gives ``C = c (Q_ff + r I)``: the leave-one-out residuals depend on ``r`` alone, and every
leave-one-out variance, ``k_ii - q_ii`` included, is ``c`` times its value at ``c = 1`` and
noise ``r``. With ``z_i^2 = res_i^2 / var_i`` at ``c = 1``, the NLPD at ``(r, c)`` is

    1/2 log(2 pi) + 1/2 mean(log var_i) + 1/2 log c + mean(z_i^2) / (2 c),

minimised in ``c`` at ``c = mean(z_i^2)`` (within the amplitude's bounds). So the search over
``(r, c)`` is the same one-dimensional grid in ``r``, each point with its own closed-form ``c``.

Per-row noise and weights
-------------------------
With row ``i``'s noise ``s2 a_i / w_i`` (:mod:`skgpsparse.regression._row_noise`) the model is
``C = Q_ff + s2 diag(a / w) = D^-1 (D Q_ff D + s2 I) D^-1`` with ``D = diag(c)``,
``c_i = (w_i / a_i)^(1/2)``, so ``[C^-1 y]_i = c_i [C_w^-1 y_w]_i`` and ``[C^-1]_ii = c_i^2
[C_w^-1]_ii`` for the whitened rows (``C_w = D Q_ff D + s2 I``, ``y_w = D y``, prior variances
``c_i^2 k_ii``): the leave-one-out residual and variance of row ``i`` are the whitened row's
divided by ``c_i`` and ``c_i^2``. The standardised residual ``z_i`` (the residual over the
predictive standard deviation, which holds the row's own noise ``s2 a_i / w_i``) is therefore
the whitened row's, and ``log var_i`` is the whitened row's minus ``2 log c_i``, a constant in
``s2`` and ``c``: the search above runs on the whitened rows unchanged, and the grid is in the
noise's common scale ``s2``. Each row's terms count ``w_i`` times (a weight is that many copies
of the row, as in the evidence; a noise array alone has ``w_i = 1``), and each row is left out
with its whole weight; ``c = sum_i w_i z_i^2 / sum_i w_i``.
"""

import numpy as np
from scipy.linalg import eigh, solve_triangular
from sklearn.gaussian_process.kernels import ConstantKernel, Product

from ..kernels import iter_kernel
from ..rows._store import RowStore, read_only
from ._partitioned_objectives import row_scale_of

__all__ = ["kernel_amplitude", "loo_noise_variance"]

# The grid: from s2 / 10^_BELOW to s2 * 10^_ABOVE (the bound over-estimates the noise, so the
# search reaches further down), _POINTS_PER_DECADE points per factor of ten. With the kernel
# scaled the grid is in r = noise / c, and a deflated amplitude (c < 1) puts r higher up:
# _ABOVE_SCALED decades above s2.
_BELOW, _ABOVE, _ABOVE_SCALED, _POINTS_PER_DECADE = 4.0, 1.0, 3.0, 24
# Points of the fine grid over the coarse grid's best two cells.
_FINE_POINTS = 33
# Entries of the rows x p and rows x grid arrays of one block of the pass (2 MB each).
_BLOCK_ENTRIES = 2**18
_LOG_2PI = np.log(2.0 * np.pi)


def kernel_amplitude(kernel):
    """``(parameter name, value, bounds of its factor)`` of the kernel's learned amplitude.

    The amplitude is a ``ConstantKernel`` factor of a top-level product (``C(1.0) * RBF()``
    or ``RBF() * C(1.0)``) whose value is not fixed; scaling it scales the whole kernel.
    ``None`` for any other kernel: the amplitude is then not the user's to learn.
    """
    if not isinstance(kernel, Product):
        return None
    for name in ("k1", "k2"):
        factor = getattr(kernel, name)
        if isinstance(factor, ConstantKernel) and not factor.hyperparameter_constant_value.fixed:
            value = float(factor.constant_value)
            low, high = np.asarray(factor.constant_value_bounds, dtype=float)
            return f"{name}__constant_value", value, (low / value, high / value)
    return None


def _grid(s2, noise_bounds, above=_ABOVE):
    low = np.log10(s2) - _BELOW
    high = np.log10(s2) + above
    if noise_bounds is not None:
        low = max(low, np.log10(noise_bounds[0]) if noise_bounds[0] > 0 else low)
        high = min(high, np.log10(noise_bounds[1]))
    if not high > low:
        return np.array([s2])
    count = int(np.ceil((high - low) * _POINTS_PER_DECADE)) + 1
    return np.logspace(low, high, count)


def _block_sums(kernel, X, Y, X_basis, W, lam, TY, grid, scale=None, weight=None):
    """Sums over the rows of ``X`` of ``log var_i`` and ``z_i^2`` at every grid value (module
    docstring), a ``(2, grid.size)`` array; ``Y`` is ``(rows, m)``, ``W = L^-T U`` (so that
    ``T = W^T K_uf``).

    With per-row noise (module docstring, "Per-row noise and weights") ``scale`` holds the
    rows' ``c_i`` (``Y`` is then the whitened targets) and ``weight`` their ``w_i`` (None:
    ones), by which each row's terms are counted.
    """
    total = np.zeros((2, grid.size))
    inv = 1.0 / (lam[:, None] + grid[None, :])  # (p, G)
    # row blocks whose rows x p and rows x G arrays have at most _BLOCK_ENTRIES entries
    rows_per_block = max(1, _BLOCK_ENTRIES // max(W.shape[0], grid.size))
    for rows, K_block in iter_kernel(kernel, X, X_basis, chunk_size=rows_per_block):
        kdiag = kernel.diag(X[rows])
        if scale is None:
            T = W.T @ K_block.T  # (p, rows)
            weights = None
        else:  # the whitened rows: c_i k(x_i, X_u) and c_i^2 k(x_i, x_i)
            c = scale[rows]
            T = W.T @ (K_block * c[:, None]).T
            kdiag = kdiag * c**2
            weights = np.ones(c.size) if weight is None else weight[rows]
            weights = (weights, np.log(c, out=np.zeros(c.size), where=c > 0))
        kq = np.maximum(kdiag - np.einsum("ij,ij->j", T, T), 0.0)
        total += _row_terms(T, kq, Y[rows], inv, TY, grid, weights)
    return total


def _row_terms(T, kq, Y, inv, TY, grid, weights=None):
    # s2 [C^-1]_ii, kept positive against round-off where a row is all but interpolated
    c_diag = np.maximum(1.0 - (T * T).T @ inv, 1e-12) / grid  # (rows, G)
    var = 1.0 / c_diag + kq[:, None]
    total = np.zeros((2, grid.size))
    if weights is None:
        total[0] = Y.shape[1] * np.sum(np.log(var), axis=0)
    else:  # log var_i = log(c_i^2 var_i) - 2 log c_i, each row counted w_i times
        w, log_c = weights
        total[0] = Y.shape[1] * (np.sum(w[:, None] * np.log(var), axis=0) - 2.0 * (w @ log_c))
    for t in range(Y.shape[1]):
        a = (Y[:, t][:, None] - T.T @ (TY[:, t][:, None] * inv)) / grid
        res = a / c_diag
        z2 = res * res / var  # whitening leaves the standardised residual as it is
        total[1] += np.sum(z2 if weights is None else weights[0][:, None] * z2, axis=0)
    return total


@read_only
def _partition_sums(part, kernel, X_basis, W, lam, TY, grid):
    Y = np.asarray(part.y, dtype=np.float64).reshape(part.n, -1)
    scale, weight = row_scale_of(part)
    if scale is not None:
        Y = Y * scale[:, None]
    return _block_sums(kernel, part.X, Y, X_basis, W, lam, TY, grid, scale, weight)


def _vertex(x, f):
    """Where the parabola through three points ``(x_k, f_k)`` has its minimum (or None)."""
    denominator = (x[0] - x[1]) * (x[0] - x[2]) * (x[1] - x[2])
    a = (x[2] * (f[1] - f[0]) + x[1] * (f[0] - f[2]) + x[0] * (f[2] - f[1])) / denominator
    b = (x[2] ** 2 * (f[0] - f[1]) + x[1] ** 2 * (f[2] - f[0]) + x[0] ** 2 * (f[1] - f[2]))
    if not a > 0:
        return None
    return float(np.clip(b / denominator / (-2.0 * a), x[0], x[2]))


def loo_noise_variance(
    kernel, X, Y, X_basis, L, VVt, VY, s2, noise_bounds, scale_bounds=None, progress=None,
    row_noise=None,
):
    """The noise variance (and kernel scale) minimising the leave-one-out predictive NLPD.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The fitted kernel.
    X : ndarray of shape (n, n_features) or RowStore
        Training inputs (a row store holds the targets too; ``Y`` is then unused).
    Y : ndarray of shape (n, m) or None
        Training targets (normalised as the fit's).
    X_basis : ndarray of shape (p, n_features)
    L : ndarray of shape (p, p)
        Lower factor of the jittered ``K_uu`` the fit used.
    VVt, VY : ndarray of shape (p, p) and (p, m)
        ``V V^T`` and ``V Y`` with ``V = L^-1 K_uf``.
    s2 : float
        The objective's noise variance (the centre of the search).
    noise_bounds : pair of floats or None
        Bounds of the noise variance found.
    scale_bounds : pair of floats or None, default=None
        Bounds of the factor ``c`` the kernel is scaled by (module docstring, "The amplitude
        with the noise"); ``None`` keeps the kernel (``c = 1``).
    progress : Progress, default=None
        Reports each pass over the rows (the fit's ``verbose``).
    row_noise : RowNoise, default=None
        Per-row noise and weights of the rows (:mod:`~skgpsparse.regression._row_noise`):
        ``L``, ``VVt`` and ``VY`` are then the whitened rows' and ``s2`` the noise's common
        scale (module docstring, "Per-row noise and weights"); a row store's partitions hold
        the rows' scales and weights.

    Returns
    -------
    s2_loo : float
        The minimiser: the coarse grid's best cell searched again on a fine grid, whose
        best point is refined by a parabola; ``s2`` itself unless another value has a lower
        leave-one-out NLPD.
    scale : float
        The kernel's factor ``c`` there (1 without ``scale_bounds``).
    nlpd : pair of floats
        The leave-one-out NLPD per row and target at ``s2`` (``c = 1``) and at the minimiser.
    """
    lam, U = eigh(0.5 * (VVt + VVt.T))
    lam = np.maximum(lam, 0.0)
    TY = U.T @ VY.reshape(VVt.shape[0], -1)
    W = solve_triangular(L, U, lower=True, trans="T", check_finite=False)  # L^-T U
    if isinstance(X, RowStore):
        # the rows counted: their weights with row noise (each 1 for a noise array)
        count = (X.n if row_noise is None else row_noise.total_weight) * TY.shape[1]

        def row_sums(grid):
            return X.sum(_partition_sums, kernel, X_basis, W, lam, TY, grid) / count
    elif row_noise is None:
        Y = Y.reshape(X.shape[0], -1)

        def row_sums(grid):
            return _block_sums(kernel, X, Y, X_basis, W, lam, TY, grid) / Y.size
    else:
        Y = row_noise.whiten(Y.reshape(X.shape[0], -1))
        row_scale, row_weight = row_noise.scale, row_noise.weight
        count = row_noise.total_weight * Y.shape[1]

        def row_sums(grid):
            return _block_sums(
                kernel, X, Y, X_basis, W, lam, TY, grid, row_scale, row_weight
            ) / count

    sums = row_sums if progress is None else progress.counting("noise calibration", row_sums)

    def nlpd(grid, mean_log, mean_z2):
        """The NLPD at noise ``c r`` for every ``r`` of ``grid`` from the rows' means of
        ``log var_i`` and ``z_i^2`` there, and ``c``."""
        scale = np.ones(grid.size)
        if scale_bounds is not None:
            scale = np.clip(mean_z2, *scale_bounds)
        values = 0.5 * (_LOG_2PI + mean_log + np.log(scale) + mean_z2 / scale)
        if scale_bounds is not None and noise_bounds is not None:
            noise = scale * grid  # c r outside the noise bounds: not a candidate
            values[(noise < noise_bounds[0]) | (noise > noise_bounds[1])] = np.inf
        return values, scale

    # the grid is in r, the noise variance itself when the kernel is kept; the first pass
    # also gives s2 at c = 1, the value to beat
    if scale_bounds is None:
        grid = _grid(s2, noise_bounds)
    else:
        grid = _grid(s2, None, _ABOVE_SCALED)
    mean_log, mean_z2 = sums(np.append(grid, s2))
    at_s2 = 0.5 * float(_LOG_2PI + mean_log[-1] + mean_z2[-1])
    values, scale = nlpd(grid, mean_log[:-1], mean_z2[:-1])
    best = int(np.argmin(values))
    if 0 < best < grid.size - 1:  # the best cell again, finer
        grid = np.geomspace(grid[best - 1], grid[best + 1], _FINE_POINTS)
        values, scale = nlpd(grid, *sums(grid))
        best = int(np.argmin(values))
    log_r = np.log(grid[best])
    if 0 < best < grid.size - 1 and np.all(np.isfinite(values[best - 1 : best + 2])):
        vertex = _vertex(np.log(grid[best - 1 : best + 2]), values[best - 1 : best + 2])
        log_r = log_r if vertex is None else vertex
    if not values[best] < at_s2:
        return float(s2), 1.0, (at_s2, at_s2)
    if scale_bounds is None:
        return float(np.exp(log_r)), 1.0, (at_s2, float(values[best]))
    # the vertex's own c, closed form as on the grid (module docstring); the grid's best
    # point where the vertex is no better (round-off, or c r beyond the noise bounds)
    r = np.exp([log_r])
    value, c = nlpd(r, *sums(r))
    if not value[0] <= values[best]:
        r, value, c = grid[best : best + 1], values[best : best + 1], scale[best : best + 1]
    return float(c[0] * r[0]), float(c[0]), (at_s2, float(value[0]))
