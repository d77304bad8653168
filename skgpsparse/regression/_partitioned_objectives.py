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

__all__ = ["PARTITIONED_OBJECTIVES", "partitioned_factors", "row_scale_of", "set_row_scale"]

_KEY = "objective"
_SCALE = "row_scale"  # c_i = (w_i / a_i)^(1/2) of the partition's rows (._row_noise)
# Entries of one rows x p block of a pass (4 MiB): what a pass holds beside the partition's
# n x p block V is a few such blocks (the kernel's temporaries), not a second n x p array.
_BLOCK_ENTRIES = 1 << 19


_WEIGHT = "row_weight"  # w_i of the partition's rows, set with their scales


@state_scope(_SCALE, resets=True)
def _p_row_scale(part, scale, weight):
    if scale is None:
        part.state.pop(_SCALE, None)
    else:
        part.state[_SCALE] = scale
    if weight is None:
        part.state.pop(_WEIGHT, None)
    else:
        part.state[_WEIGHT] = weight


def set_row_scale(rows, scale, weight=None):
    """Give every partition of ``rows`` its rows' entries of ``scale`` (``c_i``; None: ones)
    and of ``weight`` (``w_i``, read by the leave-one-out calibration; None: ones).

    With per-row noise or weights (:mod:`._row_noise`) the objectives below are those of the
    whitened rows: each partition scales its targets and its columns of ``V`` by ``c_i`` and
    its prior variances by ``c_i^2``; the driver adds the row noise's constant.
    """
    offsets = rows.offsets

    def part_of(values, i):
        return None if values is None else np.asarray(values[offsets[i]:offsets[i + 1]])

    rows.map_each(_p_row_scale, {
        i: (part_of(scale, i), part_of(weight, i)) for i in range(rows.n_partitions)
    })


def row_scale_of(part):
    """``(c, w)``: the partition's row scales and weights (:func:`set_row_scale`), None
    where it holds none."""
    return part.state.get(_SCALE), part.state.get(_WEIGHT)


def _targets(part):
    y = np.asarray(part.y, dtype=np.float64).reshape(part.n, -1)
    scale = part.state.get(_SCALE)
    return y if scale is None else y * scale[:, None]  # the whitened targets c_i y_i


def _v_blocks(part, kernel, X_basis, L):
    """``(rows, V[:, rows])`` of ``V = L^-1 K_uf`` over blocks of the partition's rows
    (of the whitened ``K_uf diag(c)`` with a row scale)."""
    chunk = max(1, _BLOCK_ENTRIES // max(X_basis.shape[0], 1))
    scale = part.state.get(_SCALE)
    for rows, K_block in iter_kernel(kernel, part.X, X_basis, chunk_size=chunk):
        V_rows = solve_triangular(L, K_block.T, lower=True, check_finite=False)
        if scale is not None:
            V_rows *= scale[rows]
        yield rows, V_rows


def _prior_variance_sum(part, kernel):
    """``sum_i c_i^2 k(x_i, x_i)`` (``c_i = 1`` without a row scale)."""
    kdiag = kernel.diag(np.asarray(part.X, dtype=np.float64))
    scale = part.state.get(_SCALE)
    return float(np.sum(kdiag if scale is None else kdiag * scale**2))


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
    kd = _prior_variance_sum(part, kernel) if with_diag else 0.0
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
    scale = part.state.get(_SCALE)  # the whitened rows' K_fu: c_i times the kernel's
    for rows, _, contract in iter_kernel_contractions(kernel, part.X, X_basis):
        # the block's rows of B^T = a w^T - V^T (m L^-T (A^-1 - c I))^T (module docstring)
        B_t = a[rows] @ w.T
        B_t -= V[:, rows].T @ weights_t
        if scale is not None:
            B_t *= scale[rows, None]
        total += contract(B_t)
    diag = 0
    if with_diag:
        diag = _diag_gradient_sum(kernel, np.asarray(part.X, dtype=np.float64),
                                  None if scale is None else scale**2)
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


def partitioned_factors(kernel, rows, X_basis, noise_variance, jitter, objective,
                        row_noise=None):
    """``(L, R, V Y, value)`` of the basis ``X_basis`` on every row of the row store ``rows``.

    ``L`` factors ``K_uu + jitter I``, ``R`` factors ``s2 I + V V^T``, ``V Y`` is ``p x m``
    and ``value`` is the objective ``"dtc"`` or ``"vfe"`` there: two passes over the
    partitions (steps 1 and 2 of the module docstring), the posterior on the basis that
    :func:`~._dtc.sparse_factors` forms from rows in memory. ``row_noise``: the rows'
    :class:`~._row_noise.RowNoise`, whose scales the partitions hold (:func:`set_row_scale`);
    the value then adds its constant.
    """
    X_basis = np.asarray(X_basis, dtype=np.float64)
    L, _, _, VY, R, _, _, _, value = _first_passes(
        kernel, rows, X_basis, float(noise_variance), jitter, False, objective == "vfe"
    )
    if row_noise is not None:  # the whitening's and the weights' constant (._row_noise)
        value += row_noise.log_constant(float(noise_variance), VY.shape[1])
    return L, R, VY, value


def _objective(kernel, rows, X_basis, noise_variance, eval_gradient, jitter, vfe,
               row_noise=None):
    X_basis = np.asarray(X_basis, dtype=np.float64)
    s2 = float(noise_variance)
    n, p = rows.n, X_basis.shape[0]
    L, contract_uu, VVt, VY, R, aa, Va, trace, lml = _first_passes(
        kernel, rows, X_basis, s2, jitter, eval_gradient, vfe
    )
    m = VY.shape[1]
    if row_noise is not None:  # the whitening's and the weights' constant (._row_noise)
        lml += row_noise.log_constant(s2, m)
    if not eval_gradient:
        return lml
    gradient = np.empty(kernel.n_dims + 1)
    R_inv = solve_triangular(R, np.eye(p), lower=True, check_finite=False)
    trace_C_inv = (n - p) / s2 + np.sum(R_inv**2)
    gradient[-1] = 0.5 * s2 * (aa - m * trace_C_inv) + 0.5 * m * trace / s2
    if row_noise is not None:
        gradient[-1] += row_noise.log_constant_gradient(m)
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
                    jitter=None, row_noise=None):
    """GPML eq. (8.17) (and its gradient) on the rows of a row store; ``y`` is unused
    (``row_noise`` as :func:`partitioned_vfe`'s)."""
    return _objective(kernel, rows, X_basis, noise_variance, eval_gradient, jitter, False,
                      row_noise)


def partitioned_vfe(kernel, rows, y, X_basis, noise_variance, *, eval_gradient=False,
                    jitter=None, row_noise=None):
    """Titsias' bound (and its gradient) on the rows of a row store; ``y`` is unused.

    ``row_noise``: the rows' :class:`~._row_noise.RowNoise` (the partitions hold its scales,
    :func:`set_row_scale`), whose constant the value and the noise derivative add."""
    return _objective(kernel, rows, X_basis, noise_variance, eval_gradient, jitter, True,
                      row_noise)


#: The ``hyperparameter_objective`` values and their functions on a row store.
PARTITIONED_OBJECTIVES = {"dtc": partitioned_dtc, "vfe": partitioned_vfe}
