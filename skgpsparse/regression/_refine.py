"""Continuous refinement of the basis vectors: L-BFGS on the objective from the greedy basis.

Greedy selection and exchange choose the basis among the training rows; the objective in force
(the DTC evidence, GPML eq. (8.17), or Titsias' bound, Titsias 2009 eq. (9)) is a smooth
function of the basis inputs ``Z`` too, and moving them off the rows can raise it further, as
the pseudo-input GP (Snelson and Ghahramani 2006) and the variational inducing inputs
(Titsias 2009) do from a random start. Here the start is the greedy basis.

Gradient in ``Z``
-----------------
Both objectives depend on ``Z`` only through ``K_uf`` and ``K_uu`` (the diagonal
``k(x_i, x_i)`` of the bound's trace term does not involve ``Z``), and their derivative in
anything that moves those two is ``<B, dK_uf> - 1/2 <B W^T, dK_uu>`` with the weights of
:func:`skgpsparse.regression._dtc.gradient_weights` (the bound's trace term joins them
through ``trace_weight``). Moving ``z_j`` changes row ``j`` of ``K_uf`` and row and column
``j`` of the symmetric ``K_uu``, so with ``D = B W^T`` (symmetric)::

    dF / dz_jk = sum_i B_ji dk(z_j, x_i)/dz_jk - sum_b D_jb dk(z_j, z_b)/dz_jk,

two contractions of :func:`skgpsparse.kernels._inputs.input_gradient_contraction`, O(n p d)
after the O(n p^2) factors: one evaluation costs what a hyperparameter gradient costs. The
hyperparameters (when they are learned) move jointly with ``Z``, as in GPflow's SGPR; the jitter
of ``K_uu`` is held at the fit's value, so the gradient is the value's.
"""

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from scipy.optimize import minimize

from .._optimize import Stalled
from ..kernels._columns import iter_cross_kernel
from ..kernels._contraction import contract_given_block
from ..kernels._inputs import SUPPORTED, input_gradient_contraction, supports_input_gradient
from ._dtc import (
    SparseFactors,
    basis_kernel,
    basis_weights,
    dtc_value,
    factors_from_V,
    gradient_weights,
    kernel_gradient_from_weights,
    noise_gradient,
    residual_weights,
)
from ._hyperparameters import STALL_PER_ROW, STALL_WINDOW
from ._vfe import add_trace_gradient, unexplained_variance, vfe_value

__all__ = [
    "AUTO_ITERATIONS", "check_refinable", "objective_and_gradient", "refine_basis",
    "refine_iterations",
]

#: Largest number of L-BFGS iterations of ``refine_basis="auto"``.
AUTO_ITERATIONS = 300

# Corrections kept by L-BFGS-B (scipy's default is 10). The basis inputs are thousands of
# coupled coordinates (p x d); a longer memory climbed further in the same number of
# iterations at no measurable cost per iteration ("L-BFGS memory" in the benchmark log:
# benchmarks/README.md, "History").
_LBFGS_MEMORY = 100


def check_refinable(kernel):
    """A clear error, before any work, for a kernel without a closed-form input gradient."""
    if not supports_input_gradient(kernel):
        raise ValueError(
            f"refine_basis > 0 needs the kernel's gradient in its inputs, available for "
            f"{SUPPORTED}; got kernel={kernel!r}. Set refine_basis=0."
        )


def refine_iterations(
    refine_basis, objective, optimizer, kernel, learn, n_basis, n_samples, in_memory
):
    """The largest number of refinement iterations a fit runs.

    An integer ``refine_basis`` is that number. ``"auto"`` refines (``AUTO_ITERATIONS``) when
    the objective is Titsias' bound (the DTC evidence rewards moving basis vectors away from
    the data, Titsias 2009), the fit learns the hyperparameters with the default optimizer
    (a callable one is the user's to run), the basis is smaller than the training set (with
    every row in it the model is the full GP), the rows are in memory and the kernel has
    closed-form input gradients; otherwise it keeps the selected rows (0).
    """
    if refine_basis != "auto":
        return int(refine_basis)
    default_learning = learn and isinstance(optimizer, str) and optimizer == "fmin_l_bfgs_b"
    if objective == "vfe" and default_learning and n_basis < n_samples and in_memory:
        return AUTO_ITERATIONS if supports_input_gradient(kernel) else 0
    return 0


def _gram_factors(K_fu, Y, s2, L, contract_uu, row_noise=None):
    """:class:`SparseFactors` without ``V``, from the Gram matrix ``K_uf K_fu``.

    ``L`` is the factor of ``K_uu + jitter I`` and ``contract_uu`` its gradient contraction
    (:func:`~._dtc.basis_kernel`). ``V V^T = L^-1 (K_uf K_fu) L^-T`` and
    ``a = (y - K_fu L^-T A^-1 L^-1 K_uf y) / s2``: one ``(p x n)(n x p)`` product instead of
    the triangular solves that form ``V`` (a third of the floating-point work of
    :func:`sparse_factors`). Squaring ``K_uf`` costs accuracy when ``K_uu`` is
    ill-conditioned (:func:`_gram_conditioned` decides); the fitted model's factors are
    recomputed by :func:`sparse_factors`. With ``row_noise``, ``K_fu`` and ``Y`` are the
    whitened rows'.
    """
    n, p = K_fu.shape
    VVt = solve_triangular(L, K_fu.T @ K_fu, lower=True, check_finite=False)
    VVt = solve_triangular(L, VVt.T, lower=True, check_finite=False)
    VVt = 0.5 * (VVt + VVt.T)
    R = cholesky(VVt + s2 * np.eye(p), lower=True, check_finite=False)
    Vy = solve_triangular(L, K_fu.T @ Y, lower=True, check_finite=False)
    # a = C^-1 y = (y - V^T A^-1 V y) / s2, with V^T x = K_fu L^-T x
    u = solve_triangular(L, cho_solve((R, True), Vy), lower=True, trans="T", check_finite=False)
    a = (Y - K_fu @ u) / s2
    log_det = (n - p) * np.log(s2) + 2.0 * np.sum(np.log(np.diag(R)))
    return SparseFactors(Y, s2, L, None, VVt, R, a, log_det, contract_uu, row_noise)


def _cross_block(kernel, X, Z):
    """``K(X, Z)`` (``n x p``), block by block from the scaled inputs."""
    K_fu = np.empty((X.shape[0], Z.shape[0]))
    for rows, K_block in iter_cross_kernel(kernel, X, Z):
        K_fu[rows] = K_block
    return K_fu


# The Gram route squares K_uf, so its rounding grows with cond(K_uu) (estimated by the
# pivots of its factor, (max / min diag L)^2) squared; beyond this estimate the solves are used.
_GRAM_MAX_CONDITION = 1e6


def _gram_conditioned(L):
    """Whether ``L L^T`` is conditioned well enough for the Gram route's squared ``K_uf``."""
    d = np.abs(np.diag(L))
    return bool(d.min() > 0 and (d.max() / d.min()) ** 2 < _GRAM_MAX_CONDITION)


def _gram_gradient_weights(f, K_fu, trace_weight):
    """:func:`gradient_weights` from ``K_fu``: ``B^T = a w^T - m K_fu M`` with the symmetric
    ``M = L^-T (A^-1 - c I) L^-1`` (``L^-T (A^-1 - c I) V = M K_uf``)."""
    L, R, a = f.L, f.R, f.a
    m = f.Y.shape[1]
    # w = W a = L^-T L^-1 K_uf a
    w = cho_solve((L, True), K_fu.T @ a, check_finite=False)
    # M = G L^-1 with G = L^-T (A^-1 - c I) of gradient_weights
    M = solve_triangular(
        L, residual_weights(L, R, trace_weight).T, lower=True, trans="T", check_finite=False
    )
    M = 0.5 * (M + M.T)
    B_t = a @ w.T
    B_t -= m * (K_fu @ M)
    return B_t, basis_weights(L, R, f.VVt, w, m, trace_weight)


def objective_and_gradient(kernel, X, Y, Z, s2, jitter, objective, eval_theta=True,
                           row_noise=None):
    """The objective at basis inputs ``Z`` and its gradient in (theta, log s2, Z).

    Parameters
    ----------
    kernel : Kernel
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, m)
    Z : ndarray of shape (p, d)
        Basis inputs.
    s2 : float
        Noise variance.
    jitter : float
        Added to ``diag(K_uu)``, held constant.
    objective : {"dtc", "vfe"}
    eval_theta : bool, default=True
        Also differentiate in ``kernel.theta``.
    row_noise : RowNoise, default=None
        Per-row noise ``s2 a_i / w_i`` (:mod:`~skgpsparse.regression._row_noise`): the
        objective of the whitened rows (``K_uf``'s columns and ``Y``'s rows times ``c_i``)
        with the row noise's constant; None is ``s2`` on every row.

    Returns
    -------
    value : float
    grad_theta : ndarray of shape (kernel.n_dims,) (empty unless ``eval_theta``)
    grad_log_s2 : float
    grad_Z : ndarray of shape (p, d)
    """
    eval_theta = eval_theta and kernel.n_dims > 0
    vfe = objective == "vfe"
    trace_weight = 1.0 / s2 if vfe else 0.0
    K_uu, contract_uu = basis_kernel(kernel, Z, eval_theta)
    L = cholesky(K_uu + jitter * np.eye(Z.shape[0]), lower=True, check_finite=False)
    # K_fu once: both routes' factors and both gradients' K_uf parts come from it
    K_fu = _cross_block(kernel, X, Z)
    if row_noise is not None:
        # the whitened rows (._row_noise): c_i K_fu and c_i y for the factors and the
        # weights B of d(c K_fu); K_fu itself again below, for the derivatives of k
        scale = row_noise.scale[:, None]
        K_fu *= scale
        Y = row_noise.whiten(Y)
    f = None
    if _gram_conditioned(L):
        try:
            f = _gram_factors(K_fu, Y, s2, L, contract_uu, row_noise)
            B_t, BW_t = _gram_gradient_weights(f, K_fu, trace_weight)
        except LinAlgError:  # the squared factors failed: the solves below decide
            f = None
    if f is None:
        # K_uu too ill-conditioned for its square (long length scales): the triangular
        # solves of the likelihood's factors (a LinAlgError there is a true failure)
        V = solve_triangular(L, K_fu.T, lower=True, check_finite=False)
        f = factors_from_V(Y, s2, L, V, contract_uu, row_noise)
        del V
        B_t, BW_t = gradient_weights(f, trace_weight)
        f = f._replace(V=None)  # the n x p V is no longer needed: free it before the passes
    if row_noise is not None:  # d(c K_fu) = c dK_fu: the weights of dK_fu, and K_fu again
        B_t *= scale
        K_fu /= scale
    trace = unexplained_variance(kernel, X, f) if vfe else 0.0
    value = vfe_value(f, trace) if vfe else dtc_value(f)
    gradient = np.zeros(kernel.n_dims + 1)
    gradient[-1] = noise_gradient(f)
    # dF/dz_jk = sum_i B_ji dk(z_j, x_i)/dz_jk - sum_b D_jb dk(z_j, z_b)/dz_jk (module docs);
    # the K_uf parts of both gradients from K_fu, when the kernel allows (exact RBF forms)
    fused = contract_given_block(kernel, X, Z, K_fu, B_t, eval_theta=eval_theta)
    del K_fu
    if fused is not None:
        grad_theta_uf, grad_Z = fused
        if eval_theta:
            gradient[:-1] = grad_theta_uf - 0.5 * f.contract_uu(BW_t)
    else:
        if eval_theta:
            gradient[:-1] = kernel_gradient_from_weights(kernel, X, Z, f, B_t, BW_t)
        grad_Z = input_gradient_contraction(kernel, X, Z, B_t)
    if vfe:
        add_trace_gradient(gradient, kernel, X, f, trace)
    grad_Z -= input_gradient_contraction(kernel, Z, Z, BW_t)
    return value, gradient[:-1] if eval_theta else np.zeros(0), gradient[-1], grad_Z


def refine_basis(
    kernel, s2, X, Y, Z, *, objective, jitter, max_iter, learn_kernel, noise_bounds, progress,
    row_noise=None,
):
    """L-BFGS-B over the basis inputs (and the hyperparameters) from ``Z``.

    Parameters
    ----------
    kernel : Kernel
        Starting kernel; with ``learn_kernel`` its bounds bound the search.
    s2 : float
        Starting noise variance.
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, m)
    Z : ndarray of shape (p, d)
        Starting basis inputs (the greedy basis).
    objective : {"dtc", "vfe"}
        What is maximised.
    jitter : float
        Added to ``diag(K_uu)``, held constant.
    max_iter : int
        L-BFGS-B iterations.
    learn_kernel : bool
        Move ``kernel.theta`` with ``Z``.
    noise_bounds : (float, float) or None
        Bounds of the noise variance when it moves with ``Z``; ``None`` keeps it.
    progress : Progress
        Where the lines of ``verbose`` go.
    row_noise : RowNoise, default=None
        Per-row noise and weights of the rows (:mod:`~skgpsparse.regression._row_noise`):
        the objective is the whitened rows' (:func:`objective_and_gradient`), ``s2`` the
        noise's common scale.

    Returns
    -------
    kernel, s2, Z, value, n_iter
        The refined model and the objective there (never below the start's: a start that
        scores higher than the end is returned unchanged).
    """
    p, d = Z.shape
    n_k = kernel.n_dims if learn_kernel else 0
    learn_noise = noise_bounds is not None

    def split(params):
        k = kernel.clone_with_theta(params[:n_k]) if n_k else kernel
        noise = float(np.exp(params[n_k])) if learn_noise else s2
        return k, noise, params[n_k + learn_noise :].reshape(p, d)

    def negative(params):
        k, noise, Zp = split(np.asarray(params, dtype=float))
        try:
            value, g_theta, g_noise, g_Z = objective_and_gradient(
                k, X, Y, Zp, noise, jitter, objective, eval_theta=bool(n_k),
                row_noise=row_noise,
            )
        except LinAlgError:
            return np.inf, np.zeros_like(params)
        if not np.isfinite(value):
            return np.inf, np.zeros_like(params)
        progress.step(lambda: f"refine_basis: {objective} {value:.6g}")
        grad = np.concatenate([g_theta, [g_noise] if learn_noise else [], g_Z.ravel()])
        return -value, -grad

    start = [kernel.theta] if n_k else []
    bounds = [tuple(b) for b in kernel.bounds] if n_k else []
    if learn_noise:
        start.append([np.log(np.clip(s2, *noise_bounds))])
        bounds.append(tuple(np.log(noise_bounds)))
    start.append(Z.ravel())
    bounds.extend([(None, None)] * Z.size)
    x0 = np.concatenate(start)
    f0 = negative(x0)[0]
    progress.line(f"refine_basis: {objective} {-f0:.6g} at the greedy basis")
    # stop early, as hyperparameter learning does, once the iterations stop paying
    # (per row of the repeated data set with weights, as their objective counts them)
    n_rows = X.shape[0] if row_noise is None else row_noise.total_weight
    stalled = Stalled(STALL_WINDOW, STALL_PER_ROW * n_rows)
    result = minimize(
        negative, x0, jac=True, method="L-BFGS-B", bounds=bounds,
        options={"maxiter": max_iter, "maxcor": _LBFGS_MEMORY}, callback=stalled,
    )
    if not np.isfinite(result.fun) or result.fun > f0:
        return kernel, s2, Z, -f0, int(result.nit)
    k, noise, Z_new = split(result.x)
    progress.line(f"refine_basis: {objective} {-result.fun:.6g} after {result.nit} iterations")
    return k, noise, np.array(Z_new), -float(result.fun), int(result.nit)
