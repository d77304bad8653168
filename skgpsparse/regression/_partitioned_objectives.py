"""The DTC likelihood and the VFE bound, and their gradients, as sums over row partitions.

The same objectives as :func:`~._dtc.dtc_log_marginal_likelihood` and
:func:`~._vfe.vfe_log_marginal_likelihood` (GPML eq. (8.17); Titsias 2009, eq. (9)), for
training rows held in the partitions of a :class:`~skgpsparse.rows._store.RowStore`. Every term
that runs over the rows is a sum of per-partition terms (the module docstring of
``_dtc`` has the lemmas); with ``V_i = L^-1 K_ui`` the ``p x n_i`` block of
partition ``i``:

1. ``V V^T = sum_i V_i V_i^T``, ``V Y = sum_i V_i Y_i`` (and ``sum_i k(x, x)`` for VFE):
   the driver factors ``A = s2 I + V V^T = R R^T`` and forms ``c = A^-1 V Y`` (``p x m``);
2. each partition forms its ``a_i = (Y_i - V_i^T c) / s2`` and returns ``Y_i . a_i``,
   ``|a_i|^2`` and ``V_i a_i``: the value, the noise derivative and ``w = L^-T V a``;
3. with the gradient, each partition contracts its rows of ``B^T = a w^T - m (L^-T (A^-1 -
   c I) V)^T`` with the kernel derivatives (:mod:`skgpsparse.kernels._contraction`) and
   returns ``n_theta`` numbers; ``- 1/2 <B W^T, dK_uu>`` is ``p x p`` work on the driver.

So one evaluation sends each partition ``O(p^2)`` numbers (``X_u``, ``L``, ``R``) and gets
back ``O(p^2 + p m + n_theta)``. With the gradient each partition keeps its ``V_i`` (its
``n_i x p`` block) between the rounds; without it (the value alone, the posterior of a fit
that learned on a subsample) no ``n_i x p`` array is formed: step 2 forms ``V_i``'s blocks of
rows again, one more kernel pass for a partition's memory of ``O(n_i d)``.
"""

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from ..kernels import iter_kernel
from ..kernels._contraction import iter_kernel_contractions
from ..rows._store import state_scope
from ._dtc import (
    _LOG_2PI,
    _cholesky,
    basis_factor,
    basis_weights,
    residual_weights,
)
from ._vfe import _diag_gradient_sum

__all__ = ["PARTITIONED_OBJECTIVES", "partitioned_factors"]

_KEY = "objective"
# Entries of one rows x p block of a pass (4 MiB): what a pass holds beside the partition's
# n x p block V is a few such blocks (the kernel's temporaries), not a second n x p array.
_BLOCK_ENTRIES = 1 << 19


def _targets(part):
    y = np.asarray(part.y, dtype=np.float64)
    return y.reshape(part.n, -1)


def _v_blocks(part, kernel, X_basis, L):
    """``(rows, V[:, rows])`` of ``V = L^-1 K_uf`` over blocks of the partition's rows."""
    chunk = max(1, _BLOCK_ENTRIES // max(X_basis.shape[0], 1))
    for rows, K_block in iter_kernel(kernel, part.X, X_basis, chunk_size=chunk):
        yield rows, solve_triangular(L, K_block.T, lower=True, check_finite=False)


@state_scope(_KEY, resets=True)
def _p_factors(part, kernel, X_basis, L, with_diag, keep):
    """Step 1 on the partition; ``keep``: ``V`` stays for the gradient's passes (the
    partition's ``n x p`` block), else no ``n x p`` array is formed (step 2 forms ``V``'s
    blocks again)."""
    part.state.pop(_KEY, None)  # an earlier evaluation's V goes before the new one comes
    p, Y = X_basis.shape[0], _targets(part)
    if keep:
        V = np.empty((p, part.n))
        for rows, V_rows in _v_blocks(part, kernel, X_basis, L):
            V[:, rows] = V_rows
        part.state[_KEY] = V
        VVt, VY = V @ V.T, V @ Y
    else:
        VVt, VY = np.zeros((p, p)), np.zeros((p, Y.shape[1]))
        for rows, V_rows in _v_blocks(part, kernel, X_basis, L):
            VVt += V_rows @ V_rows.T
            VY += V_rows @ Y[rows]
    kd = float(np.sum(kernel.diag(np.asarray(part.X, dtype=np.float64)))) if with_diag else 0.0
    return VVt, VY, kd


@state_scope(_KEY)
def _p_residual_terms(part, c, s2, kernel, X_basis, L):
    Y = _targets(part)
    if _KEY in part.state:  # V kept by _p_factors: a stays beside it for _p_contract
        V = part.state[_KEY]
        a = (Y - V.T @ c) / s2
        part.state[_KEY] = (V, a)
        return float(np.sum(Y * a)), float(np.sum(a * a)), V @ a
    Ya, aa, Va = 0.0, 0.0, np.zeros((X_basis.shape[0], Y.shape[1]))
    for rows, V_rows in _v_blocks(part, kernel, X_basis, L):
        a = (Y[rows] - V_rows.T @ c) / s2
        Ya += float(np.sum(Y[rows] * a))
        aa += float(np.sum(a * a))
        Va += V_rows @ a
    return Ya, aa, Va


@state_scope(_KEY)
def _p_contract(part, kernel, X_basis, L, R, w, m, trace_weight, with_diag):
    V, a = part.state.pop(_KEY)
    weights_t = (m * residual_weights(L, R, trace_weight)).T
    total = np.zeros(kernel.n_dims)
    for rows, _, contract in iter_kernel_contractions(kernel, part.X, X_basis):
        # the block's rows of B^T = a w^T - V^T (m L^-T (A^-1 - c I))^T (module docstring)
        B_t = a[rows] @ w.T
        B_t -= V[:, rows].T @ weights_t
        total += contract(B_t)
    diag = _diag_gradient_sum(kernel, np.asarray(part.X, dtype=np.float64)) if with_diag else 0
    return total, diag


def _first_passes(kernel, rows, X_basis, s2, jitter, eval_gradient, vfe):
    """Steps 1 and 2 of the module docstring: the factors, the residual sums and the value."""
    n, p = rows.n, X_basis.shape[0]
    L, contract_uu = basis_factor(kernel, X_basis, jitter, eval_gradient)
    keep = bool(eval_gradient and kernel.n_dims)
    VVt, VY, kd = rows.sum(_p_factors, kernel, X_basis, L, vfe, keep)
    m = VY.shape[1]
    R = _cholesky(VVt + s2 * np.eye(p), "s2 * I + V V^T", "increase `noise_variance`.")
    c = cho_solve((R, True), VY, check_finite=False)
    Ya, aa, Va = rows.sum(_p_residual_terms, c, s2, kernel, X_basis, L)
    log_det = (n - p) * np.log(s2) + 2.0 * np.sum(np.log(np.diag(R)))
    lml = float(-0.5 * Ya - 0.5 * m * log_det - 0.5 * m * n * _LOG_2PI)
    trace = kd - float(np.trace(VVt)) if vfe else 0.0
    lml -= 0.5 * m * trace / s2
    return L, contract_uu, VVt, VY, R, aa, Va, trace, lml


def partitioned_factors(kernel, rows, X_basis, noise_variance, jitter, objective):
    """``(L, R, V Y, value)`` of the basis ``X_basis`` on every row of the row store ``rows``.

    ``L`` factors ``K_uu + jitter I``, ``R`` factors ``s2 I + V V^T``, ``V Y`` is ``p x m``
    and ``value`` is the objective ``"dtc"`` or ``"vfe"`` there: two passes over the
    partitions (steps 1 and 2 of the module docstring), the posterior on the basis that
    :func:`~._dtc.sparse_factors` forms from rows in memory.
    """
    X_basis = np.asarray(X_basis, dtype=np.float64)
    L, _, _, VY, R, _, _, _, value = _first_passes(
        kernel, rows, X_basis, float(noise_variance), jitter, False, objective == "vfe"
    )
    return L, R, VY, value


def _objective(kernel, rows, X_basis, noise_variance, eval_gradient, jitter, vfe):
    X_basis = np.asarray(X_basis, dtype=np.float64)
    s2 = float(noise_variance)
    n, p = rows.n, X_basis.shape[0]
    L, contract_uu, VVt, VY, R, aa, Va, trace, lml = _first_passes(
        kernel, rows, X_basis, s2, jitter, eval_gradient, vfe
    )
    m = VY.shape[1]
    if not eval_gradient:
        return lml
    gradient = np.empty(kernel.n_dims + 1)
    R_inv = solve_triangular(R, np.eye(p), lower=True, check_finite=False)
    trace_C_inv = (n - p) / s2 + np.sum(R_inv**2)
    gradient[-1] = 0.5 * s2 * (aa - m * trace_C_inv) + 0.5 * m * trace / s2
    if kernel.n_dims:
        tw = 1.0 / s2 if vfe else 0.0
        w = solve_triangular(L, Va, lower=True, trans="T", check_finite=False)
        BW_t = basis_weights(L, R, VVt, w, m, tw)
        grad_theta = -0.5 * contract_uu(BW_t)
        contracted, diag = rows.sum(_p_contract, kernel, X_basis, L, R, w, m, tw, vfe)
        grad_theta += contracted
        if vfe:
            grad_theta -= 0.5 * m / s2 * diag
        gradient[:-1] = grad_theta
    return lml, gradient


def partitioned_dtc(kernel, rows, y, X_basis, noise_variance, *, eval_gradient=False,
                    jitter=None):
    """GPML eq. (8.17) (and its gradient) on the rows of a row store; ``y`` is unused."""
    return _objective(kernel, rows, X_basis, noise_variance, eval_gradient, jitter, False)


def partitioned_vfe(kernel, rows, y, X_basis, noise_variance, *, eval_gradient=False,
                    jitter=None):
    """Titsias' bound (and its gradient) on the rows of a row store; ``y`` is unused."""
    return _objective(kernel, rows, X_basis, noise_variance, eval_gradient, jitter, True)


#: The ``hyperparameter_objective`` values and their functions on a row store.
PARTITIONED_OBJECTIVES = {"dtc": partitioned_dtc, "vfe": partitioned_vfe}
