"""Titsias' collapsed variational bound (VFE) for sparse GP regression, and its gradient.

The DTC marginal likelihood (GPML eq. (8.17), :mod:`skgpsparse.regression._dtc`)
replaces ``K_ff`` by its Nystrom approximation ``Q_ff = K_fu K_uu^-1 K_uf`` and never charges
for the prior variance the basis leaves unexplained, ``diag(K_ff - Q_ff)``; maximised over the
hyperparameters it tends to inflate the signal amplitude and the predictive variance. Titsias'
bound (Titsias 2009, eq. (9)) on the exact log marginal likelihood subtracts that variance::

    F = log N(y | 0, Q_ff + s2 I) - tr(K_ff - Q_ff) / (2 s2)
      = DTC - T / (2 s2),     T = sum_i k(x_i, x_i) - |V|_F^2,

with ``V = L^-1 K_uf`` and ``L L^T = K_uu + jitter I`` as in the DTC module (``tr(Q_ff) =
tr(V^T V) = tr(V V^T)``, which the DTC factors already hold). ``F <= log p(y | X)`` for every
basis, with equality when ``Q_ff = K_ff`` (every training row in the basis, up to the
jitter). For ``m`` outputs the bounds are summed, so ``T`` counts ``m`` times.

Gradient
--------
*Noise* (``theta_s = log s2``): the DTC derivative plus ``m T / (2 s2)``.

*Kernel*: the DTC derivative ``<B, dK_uf> - 1/2 <B W^T, dK_uu>`` (``W = K_uu^-1 K_uf``) plus
``-m / (2 s2) (sum_i d k(x_i, x_i) - d tr(Q_ff))``, where
``dQ_ff = dK_fu W + W^T dK_uf - W^T dK_uu W`` gives::

    d tr(Q_ff) = 2 <W, dK_uf> - <W W^T, dK_uu>.

So the trace term adds ``(m / s2) W`` to ``B`` (and hence ``(m / s2) W W^T`` to ``B W^T``):
:func:`skgpsparse.regression._dtc.dtc_gradient` takes it as ``trace_weight = 1 / s2``
and folds it into the triangular solves it already makes (``B = w a^T - m L^-T (A^-1 - c I) V``
and ``B W^T = w w^T - m L^-T (A^-1 V V^T - c V V^T) L^-1``), so the contraction is still one
pass over the rows of ``X``. The diagonal's derivative comes from
:func:`skgpsparse.kernels.kernel_diag_gradient`, block by block (O(n n_theta) time, no
``n x n_theta`` array held for large ``n``).

As in the DTC likelihood, the jitter is held constant, and the cross-covariances ignore a
``WhiteKernel`` term; its level is in ``k(x, x)``, though, so the trace term charges it (it is
prior variance no basis can explain) and learning drives it down: give the noise as
``noise_variance``.

References
----------
M. K. Titsias, "Variational learning of inducing variables in sparse Gaussian processes",
AISTATS 2009. C. E. Rasmussen and C. K. I. Williams, *Gaussian Processes for Machine
Learning*, 2006, sec. 8.3.
"""

import numpy as np

from ..kernels import kernel_diag_gradient
from ._dtc import (
    _check_arguments,
    dtc_gradient,
    dtc_log_marginal_likelihood,
    dtc_value,
    sparse_factors,
)

__all__ = ["OBJECTIVES", "state_objective", "vfe_log_marginal_likelihood"]

# Entries of the diagonal's derivative array per block.
_DIAG_BLOCK_ENTRIES = 1 << 20


def vfe_log_marginal_likelihood(
    kernel, X, y, X_basis, noise_variance, *, eval_gradient=False, jitter=None, chunk_size=None,
    row_noise=None,
):
    """Titsias' collapsed variational lower bound (VFE) on the log marginal likelihood.

    ``F = log N(y | 0, Q_ff + s2 I) - tr(K_ff - Q_ff) / (2 s2)`` (Titsias 2009, eq. (9)):
    the DTC likelihood (GPML eq. (8.17)) minus the prior variance the basis leaves
    unexplained. Same cost, memory and conventions as
    :func:`skgpsparse.regression._dtc.dtc_log_marginal_likelihood`; no ``n x n``
    array is formed.

    Parameters
    ----------
    kernel, X, y, X_basis, noise_variance, eval_gradient, jitter, chunk_size, row_noise
        As for :func:`~skgpsparse.regression._dtc.dtc_log_marginal_likelihood` (the two
        objectives take the same arguments); with several outputs the bounds are summed.
        Cross-covariances ignore a ``WhiteKernel`` term of ``kernel``, but ``k(x, x)``
        includes it, so the trace term charges its level.

    Returns
    -------
    bound : float
        ``F``, at most the exact log marginal likelihood ``log p(y | X)``.
    gradient : ndarray of shape (kernel.n_dims + 1,)
        Only if ``eval_gradient``: derivatives with respect to ``kernel.theta`` followed by
        ``log(noise_variance)``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``K_uu + jitter I`` is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgpsparse.regression._dtc import dtc_log_marginal_likelihood
    >>> from skgpsparse.regression._vfe import vfe_log_marginal_likelihood
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (50, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(50)
    >>> kernel = ConstantKernel(1.0) * RBF(1.0)
    >>> bound, grad = vfe_log_marginal_likelihood(
    ...     kernel, X, y, X[:5], 0.01, eval_gradient=True)
    >>> grad.shape
    (3,)
    >>> bool(bound < dtc_log_marginal_likelihood(kernel, X, y, X[:5], 0.01))
    True
    """
    X, Y, X_basis = _check_arguments(kernel, X, y, X_basis, noise_variance, jitter)
    f = sparse_factors(
        kernel, X, Y, X_basis, noise_variance, jitter, eval_gradient, chunk_size, row_noise
    )
    trace = unexplained_variance(kernel, X, f)
    bound = vfe_value(f, trace)
    if not eval_gradient:
        return bound

    # the DTC gradient with (m / s2) W added to B: d tr(Q_ff) in the same pass over the rows
    gradient = dtc_gradient(kernel, X, X_basis, f, chunk_size=chunk_size, trace_weight=1.0 / f.s2)
    add_trace_gradient(gradient, kernel, X, f, trace)
    return bound, gradient


def unexplained_variance(kernel, X, f):
    """``T = tr(K_ff - Q_ff) = sum_i k(x_i, x_i) - tr(V V^T)`` (of the whitened rows with
    row noise: ``k(x_i, x_i)`` times ``c_i^2``)."""
    diag = kernel.diag(X)
    if f.row_noise is not None:
        diag = diag * f.row_noise.scale**2
    return float(np.sum(diag)) - float(np.trace(f.VVt))


def vfe_value(f, trace):
    """Titsias (2009) eq. (9) from the DTC factors and ``T``, summed over the m outputs."""
    return dtc_value(f) - 0.5 * f.Y.shape[1] * trace / f.s2


def add_trace_gradient(gradient, kernel, X, f, trace):
    """Add the parts of ``-m T / (2 s2)``'s gradient that ``trace_weight`` does not carry.

    ``gradient`` is ``(kernel.theta, log s2)``, computed with ``trace_weight = 1 / s2``.
    """
    m, s2 = f.Y.shape[1], f.s2
    # noise: d/dlog s2 of -m T / (2 s2)
    gradient[-1] += 0.5 * m * trace / s2
    # kernel: -m / (2 s2) sum_i d k(x_i, x_i) / dtheta
    if kernel.n_dims:
        weight = None if f.row_noise is None else f.row_noise.scale**2
        gradient[:-1] -= 0.5 * m / s2 * _diag_gradient_sum(kernel, X, weight)


def _diag_gradient_sum(kernel, X, weight=None):
    """``sum_i weight_i d k(x_i, x_i) / d theta`` (``weight`` None: ones), block by block
    over the rows of ``X``."""
    step = max(1, _DIAG_BLOCK_ENTRIES // max(kernel.n_dims, 1))
    total = np.zeros(kernel.n_dims)
    for start in range(0, X.shape[0], step):
        block = kernel_diag_gradient(kernel, X[start : start + step])[1]
        if weight is None:
            total += block.sum(axis=0)
        else:  # weighted rows summed as the unweighted (unit weights: the same sum)
            total += (weight[start : start + step, None] * block).sum(axis=0)
    return total


def state_objective(state, objective):
    """The hyperparameter objective of a :class:`~skgpsparse.regression._state.RegressionState`.

    ``"dtc"``: GPML eq. (8.17) from the state's factors, O(p). ``"vfe"``: the same minus the
    trace term of Titsias (2009) eq. (9), from the state's Nystrom errors
    ``q = diag(K_ff - Q_ff)`` (kept for the info-gain criterion), O(n); once per target.
    """
    lml = state.log_marginal_likelihood()
    if objective == "vfe":
        n_targets = 1 if state.y.ndim == 1 else state.y.shape[1]
        lml -= 0.5 * n_targets * state.nystrom_trace() / state.noise_variance
    return lml


#: The estimator's ``hyperparameter_objective`` values and their functions.
OBJECTIVES = {"dtc": dtc_log_marginal_likelihood, "vfe": vfe_log_marginal_likelihood}
