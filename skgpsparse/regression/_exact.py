"""The objectives with every row in the basis, from one Cholesky factor of ``K + s2 I``.

The hyperparameters of a fit start from the full GP on a random subset of the training rows
(the exchange paper's protocol): the objective in force with the subset itself as the basis.
There ``Q_ff = K_ff`` up to the jitter, so the DTC evidence (GPML eq. 8.17) is the exact log
marginal likelihood (GPML eq. 2.30)::

    log p(y) = -1/2 y^T C^-1 y - 1/2 log|C| - n/2 log(2 pi),    C = K + s2 I,

and Titsias' bound (Titsias 2009, eq. 9) subtracts ``T / (2 s2)`` with ``T = sum_i k(x_i, x_i)
- tr(K)``, which is zero for kernels whose ``k(x, x)`` is the limit of ``k(x, z)`` (a
``WhiteKernel`` adds its level to ``k(x, x)`` only, scikit-learn's convention, and ``T``
charges it as the sparse objectives do). The gradient is GPML eq. 5.9,
``1/2 tr((a a^T - C^-1) dC)`` with ``a = C^-1 y``, contracted against ``dK`` block by block
(:func:`skgpsparse.kernels._contraction.iter_kernel_contractions`).

With a :class:`~skgpsparse.regression._row_noise.RowNoise` (row ``i``'s noise ``s2 a_i /
w_i``) both are computed on the whitened rows, ``C = D K D + s2 I`` with ``D = diag(c)`` and
``y`` times ``c``, plus the row noise's constant; the gradient's weights of ``dK`` are then
``D W D``.

The sparse objectives on this basis factor ``K_uu + jitter I`` and form ``V = L^-1 K_uf`` and
``V V^T``: several ``n^3`` solves where one factor of ``C`` and one inverse suffice. The values
differ from theirs by the jitter's effect, ``O(n jitter / s2)`` nats.
"""

import numpy as np
from scipy.linalg import LinAlgError
from scipy.linalg.lapack import dpotri
from sklearn.gaussian_process.kernels import WhiteKernel

from ..kernels._contraction import iter_kernel_contractions
from ..kernels._radial import radial_parameters
from ..linalg._triangular import cho_solve_lower, cholesky_lower
from ._dtc import _check_arguments
from ._vfe import _diag_gradient_sum

__all__ = ["FULL_BASIS_OBJECTIVES", "exact_dtc", "exact_vfe"]


def _exact(kernel, X, y, noise_variance, eval_gradient, trace_term, row_noise=None):
    X, Y, _ = _check_arguments(kernel, X, y, X, noise_variance, None)
    c = None if row_noise is None else row_noise.scale
    if c is not None:
        Y = row_noise.whiten(Y)
    s2 = float(noise_variance)
    n, m = Y.shape
    blocks = list(iter_kernel_contractions(kernel, X, X)) if eval_gradient else None
    held = None  # the diagonal of a block that the contraction holds, restored below
    if blocks is None:
        K = kernel(X, X)  # two arguments: no WhiteKernel level on the diagonal
    elif len(blocks) == 1:  # the contraction's own block (n x n: one copy fewer)
        K = blocks[0][1]
        held = K.diagonal().copy()
    else:
        K = np.empty((n, n))  # a copy: the contractions hold the blocks, without the noise
        for rows, K_block, _ in blocks:
            K[rows] = K_block
    if c is not None:  # the whitened rows: D K D, a new array (the blocks stay)
        K, held = K * c[:, None] * c[None, :], None
    trace = 0.0
    if trace_term:
        gap = np.asarray(kernel.diag(X), dtype=np.float64) * (1.0 if c is None else c * c)
        gap -= np.diagonal(K)
        # T is zero for a kernel with no WhiteKernel term (k(x, x) is the limit of k(x, z));
        # computed, it is the round-off of two sums of k(x, x), and the gradient's part
        # (m / s2) I against dK cancels against d k(x, x) only to that round-off: divided by
        # an s2 below 1e-8 of the prior variance (scikit-learn's tests: alpha=1e-10), both
        # were 1e-4 nats of noise. There they are skipped; above, the round-off is below
        # 1e-8 and the computation stays as it was.
        scale = np.max(np.abs(np.diagonal(K)), initial=0.0)
        trace_term = (
            _white_in(kernel) or s2 >= 1e-8 * scale
            or np.max(np.abs(gap), initial=0.0) > 1e-12 * scale
        )
        trace = float(np.sum(kernel.diag(X) * (1.0 if c is None else c * c)) - np.trace(K)) \
            if trace_term else 0.0
    C = K
    C[np.diag_indices(n)] += s2
    L = cholesky_lower(C)  # into a new (Fortran-ordered) array
    if held is not None:
        K[np.diag_indices(n)] = held  # the block as it was, to the bit
    A = cho_solve_lower(L, Y)  # a = C^-1 y, one column per target
    value = (
        -0.5 * float(np.sum(Y * A)) - m * float(np.sum(np.log(np.diag(L))))
        - 0.5 * m * n * np.log(2.0 * np.pi) - 0.5 * m * trace / s2
    )
    if row_noise is not None:
        value += row_noise.log_constant(s2, m)
    if not eval_gradient:
        return value
    # GPML eq. 5.9: 1/2 <a a^T - m C^-1, dC>, summed over the m targets
    W = _inverse_from_factor(L, overwrite=True)  # L is not read again
    W *= -m
    W += np.matmul(A, A.T, out=L)  # L's memory holds potri's triangle, no longer needed
    noise_grad = 0.5 * s2 * float(np.trace(W))
    if row_noise is not None:
        noise_grad += row_noise.log_constant_gradient(m)
    diag_grad = 0.0
    if trace_term:
        # -m T / (2 s2) with dT = d sum_i k(x_i, x_i) - tr(dK)
        noise_grad += 0.5 * m * trace / s2
        if radial_parameters(kernel, X.shape[1]) is None and kernel.n_dims:
            # the diagonal's part here; tr(dK) = <I, dK> joins the contraction as (m / s2) I
            # added to W. For c * RBF and c * Matern, K's diagonal is k(x, x) = c, so the
            # two parts cancel: both are skipped (and scikit-learn's slow theta not read).
            diag_grad = 0.5 * m / s2 * _diag_gradient_sum(
                kernel, X, None if c is None else c * c
            )
            W[np.diag_indices(n)] += m / s2
    if c is not None:  # d(D K D) = D dK D: the weights of dK
        W *= c[:, None]
        W *= c[None, :]
    kernel_grad = 0.5 * sum(contract(W[rows]) for rows, _, contract in blocks) - diag_grad
    return value, np.append(kernel_grad, noise_grad)


def _white_in(kernel):
    """Whether ``kernel`` has a ``WhiteKernel`` anywhere in its tree (its ``k(x, x)`` then
    exceeds the limit of ``k(x, z)``: Titsias' trace term is not zero)."""
    if isinstance(kernel, WhiteKernel):
        return True
    return any(isinstance(v, WhiteKernel) for v in kernel.get_params(deep=True).values())


def _inverse_from_factor(L, overwrite=False):
    """``C^-1`` from the lower Cholesky factor ``L`` of ``C`` (LAPACK ``potri``, mirrored):
    a third of the arithmetic of ``cho_solve`` against the identity. ``overwrite``: potri
    works in the memory of a Fortran-ordered ``L`` (no copy), which then holds the lower
    triangle of ``C^-1``."""
    # the lower triangle; the upper is L's, zeros
    inverse, info = dpotri(L, lower=1, overwrite_c=int(overwrite))
    if info != 0:
        raise LinAlgError(f"potri failed (info={info}): singular factor")
    full = inverse + inverse.T
    full[np.diag_indices_from(full)] = np.diag(inverse)
    return full


def exact_dtc(kernel, X, y, X_basis, noise_variance, *, eval_gradient=False, jitter=None,
              chunk_size=None, row_noise=None):
    """The DTC evidence with every row of ``X`` in the basis: the exact log marginal likelihood.

    The signature of :func:`~skgpsparse.regression._dtc.dtc_log_marginal_likelihood`;
    ``X_basis`` must be ``X`` itself, ``jitter`` and ``chunk_size`` are not used. Returns the
    value, and with ``eval_gradient`` its gradient in ``(kernel.theta, log s2)``.
    ``row_noise``: per-row noise (:mod:`skgpsparse.regression._row_noise`).
    """
    return _exact(kernel, X, y, noise_variance, eval_gradient, False, row_noise)


def exact_vfe(kernel, X, y, X_basis, noise_variance, *, eval_gradient=False, jitter=None,
              chunk_size=None, row_noise=None):
    """Titsias' bound with every row of ``X`` in the basis, as :func:`exact_dtc`."""
    return _exact(kernel, X, y, noise_variance, eval_gradient, True, row_noise)


#: The ``hyperparameter_objective`` values and their full-basis forms.
FULL_BASIS_OBJECTIVES = {"dtc": exact_dtc, "vfe": exact_vfe}
