"""Approximate log evidence of the sparse ADF classifier (IVM objective) and its gradient.

With Gaussian sites ``N(f_i | m_i, 1/p_i)`` on the basis ``u`` only (zero elsewhere), the EP
approximation of the marginal likelihood (GPML eq. (3.65), Lawrence, Seeger and Herbrich 2003
for the IVM) involves the basis latents alone::

    log Z = sum_{i in u} [ log Phi(z_i) + 1/2 log(1 + p_i v_i)
                           + p_i (mu_i - m_i)^2 / (2 (1 + p_i v_i)) ]
            - 1/2 log|B| - 1/2 m_u^T C m_u,

where ``B = I + S K_uu S`` (``S = Pi_u^1/2``), ``C = S B^-1 S``, ``(mu_i, v_i)`` is the cavity of
basis point ``i`` (the posterior ``N(K_uu C m_u, K_uu - K_uu C K_uu)`` with site ``i`` divided
out) and ``z_i = y_i (mu_i + b) / sqrt(1 + v_i)``: ``Phi(z_i)`` is the ADF normaliser of ``i``
under that cavity. (The ``log p_i`` parts of ``log|K_uu + Pi^-1|`` and of the site normalisers
cancel, so ``p_i -> 0`` is harmless.) For the point added last the cavity is exactly its cavity
at inclusion; for the others it is the leave-one-site-out cavity, which makes the expression a
function of ``(theta, b)`` with the sites held fixed (IVM's practice).

Gradient (sites fixed): with ``R = I - K_uu C``, ``dSigma = R dK R^T``, ``dmu_post = R dK w``
(``w = C m_u``), then by the chain rule through the cavities; the Gaussian part gives
``-1/2 tr(C dK) + 1/2 w^T dK w``. Cost O(p^3 n_theta); it never touches the non-basis points.
"""

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.special import log_ndtr

from ._adf import _inverse_mills

__all__ = ["negative_log_evidence"]


def negative_log_evidence(
    kernel, X_u, y_u, bias, site_mean, site_precision, *, eval_gradient=False
):
    """Minus the approximate log evidence of the ADF model on its basis, and its gradient.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Prior covariance; the gradient is w.r.t. ``kernel.theta`` (log-space).
    X_u : ndarray of shape (p, n_features)
        Basis inputs.
    y_u : ndarray of shape (p,)
        Their labels in {-1, +1}.
    bias : float
        Bias ``b`` of the probit likelihood ``Phi(y (f + b))``.
    site_mean, site_precision : ndarray of shape (p,)
        Fixed sites ``m_u`` and ``p_u >= 0``.
    eval_gradient : bool, default=False
        Also return the gradient w.r.t. ``[theta..., b]``.

    Returns
    -------
    value : float
        ``-log Z``.
    grad : ndarray of shape (n_theta + 1,)
        Only if ``eval_gradient``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse._classification_evidence import negative_log_evidence
    >>> X = np.array([[-1.0], [1.0]]); y = np.array([-1.0, 1.0])
    >>> v, g = negative_log_evidence(RBF(1.0), X, y, 0.0, [-1.0, 1.0], [0.5, 0.5],
    ...                              eval_gradient=True)
    >>> bool(v > 0), g.shape
    (True, (2,))
    """
    y_u = np.asarray(y_u, dtype=float)
    m = np.asarray(site_mean, dtype=float)
    prec = np.asarray(site_precision, dtype=float)
    p = m.size
    if eval_gradient:
        K, dK = kernel(X_u, eval_gradient=True)
    else:
        K = kernel(X_u)
    s = np.sqrt(prec)
    B = np.eye(p) + s[:, None] * K * s[None, :]
    L = cholesky(B, lower=True)
    C = s[:, None] * cho_solve((L, True), np.diag(s))
    w = C @ m
    beta = solve_triangular(L, s * m, lower=True)
    R = np.eye(p) - K @ C
    Sigma_d = np.maximum(np.einsum("ij,ij->i", R, K), 1e-300)  # diag(K - K C K) = diag(R K)
    mu_post = K @ w
    # cavity of site i: precision 1/Sigma_ii - p_i, i.e. v_i = Sigma_ii / (1 - p_i Sigma_ii)
    den = np.maximum(1.0 - prec * Sigma_d, 1e-300)
    v = Sigma_d / den
    h = mu_post / Sigma_d - prec * m
    mu = v * h
    sd = np.sqrt(1.0 + v)
    z = y_u * (mu + bias) / sd
    q = 1.0 + prec * v
    dev = mu - m
    log_z = (
        np.sum(log_ndtr(z) + 0.5 * np.log(q) + prec * dev**2 / (2.0 * q))
        - np.sum(np.log(np.diag(L)))
        - 0.5 * beta @ beta
    )
    if not eval_gradient:
        return float(-log_z)
    r, _ = _inverse_mills(z)
    # derivatives of the per-site terms w.r.t. the cavity (mu_i, v_i)
    g_mu = r * y_u / sd + prec * dev / q
    g_v = -r * z / (2.0 * (1.0 + v)) + prec / (2.0 * q) - prec**2 * dev**2 / (2.0 * q**2)
    # ... and through (Sigma_ii, mu_post_i): v = Sigma/(1 - p Sigma), mu = v h
    dv_dS = 1.0 / den**2
    dmu_dS = dv_dS * h - v * mu_post / Sigma_d**2
    dmu_dmp = v / Sigma_d
    g_S = g_mu * dmu_dS + g_v * dv_dS
    g_mp = g_mu * dmu_dmp
    n_theta = dK.shape[2]
    grad = np.empty(n_theta + 1)
    for t in range(n_theta):
        P = R @ dK[:, :, t]
        dS = np.einsum("ij,ij->i", P, R)  # diag(R dK R^T)
        dmp = P @ w
        d_gauss = -0.5 * np.sum(C * dK[:, :, t]) + 0.5 * w @ dK[:, :, t] @ w
        grad[t] = g_S @ dS + g_mp @ dmp + d_gauss
    grad[-1] = np.sum(r * y_u / sd)
    return float(-log_z), -grad
