"""EP's leave-one-out predictive at the training rows of an all-rows fit: each row's cavity.

Under the FITC prior (:mod:`skgpsparse.inference._sparse_prior`) the latent at training row
``i`` is ``f_i = v_i^T w + e_i`` with ``v_i = L^-1 k_u(x_i)``, ``e_i ~ N(0, Lambda_i)`` and
``Lambda_i = k_ii - |v_i|^2``. EP's site ``N(f_i; mu_i, 1 / tau_i)``, ``e_i`` integrated out, is
a site on ``v_i^T w`` of precision ``tau~_i = tau_i / (1 + tau_i Lambda_i)`` and mean
``mu_i`` (a row of weight ``c`` is ``c`` such copies,
:class:`~skgpsparse.inference._sparse_prior.SparsePrior`; one copy is left out, as when the
row is repeated).
The posterior of ``w`` gives ``v_i^T w`` the moments ``(h_i, s_i)``; taking the row's site out
(Minka 2001, eq. (3.25); GPML eq. (3.56)) leaves the cavity

    tau_c = 1 / s_i - tau~_i,    m_c = (h_i / s_i - tau~_i mu_i) / tau_c,

and the row's leave-one-out predictive of ``f_i + b`` is ``N(m_c + b, 1 / tau_c + Lambda_i)``:
what the model says of the row when the row itself is not in its posterior, read from the fit's
own sites (no refit). The latent moments at the training rows come from the fitted predictor
(:class:`~skgpsparse.latent._predictors.AllRowsPredictor`, whose variance at a row is
``Lambda_i + s_i``), in one pass of its kernel blocks.
"""

import numpy as np
from scipy.linalg import solve_triangular

from ..inference._sparse_prior import basis_cholesky

__all__ = ["leave_one_out_moments"]


def leave_one_out_moments(model, X, rows):
    """Leave-one-out predictive ``(mean, var)`` of ``f + b`` at training rows of ``model``.

    Parameters
    ----------
    model : LatentSparseGP
        Fitted with the all-rows posterior: ``site_precision_`` and ``site_mean_`` hold a
        site per training row.
    X : ndarray of shape (n_rows, n_features)
        The training rows ``rows`` (the inputs the model was fitted on, at those rows).
    rows : ndarray of int of shape (n_rows,)
        Their positions among the model's training rows (its sites).

    Returns
    -------
    mean, var : ndarray of shape (n_rows,)
        The cavity predictive of each row. A row whose site is too strong for the cavity
        to be formed in floating point (``tau_c`` not above ``1e-10 / s_i``) gets the prior
        ``N(b, k_ii)``, which says nothing of the row either.
    """
    predictor = model._predictor
    cross = predictor.cross
    L = basis_cholesky(model.kernel_, cross.Z)
    prior_var = cross.diag(X).astype(float)
    h = np.empty(X.shape[0])
    s = np.empty(X.shape[0])
    lam = np.empty(X.shape[0])
    for block, K in cross.blocks(X):
        P = K @ predictor.projection  # [h, (W v)^T]: the predictor's mean and W (eq. in module)
        V = solve_triangular(L, K.T, lower=True)  # v_i, a column per row
        q = np.einsum("ij,ij->j", V, V)  # |v_i|^2 = q_ii
        h[block] = P[:, 0]
        # s_i = |v_i|^2 - |W v_i|^2 = v_i^T B^-1 v_i (the predictor's W^T W = L^-T (I - B^-1) L^-1)
        s[block] = q - np.einsum("ij,ij->i", P[:, 1:], P[:, 1:])
        lam[block] = prior_var[block] - q
    np.maximum(lam, 0.0, out=lam)
    s = np.maximum(s, np.finfo(float).tiny)
    tau = model.site_precision_[rows]
    mu = model.site_mean_[rows]
    denominator = 1.0 + tau * lam
    tau_eff = np.divide(tau, denominator, out=np.zeros_like(tau), where=denominator > 0)
    tau_c = 1.0 / s - tau_eff
    ok = (denominator > 0) & (tau_c * s > 1e-10)
    tau_c = np.where(ok, tau_c, 1.0)
    mean = np.where(ok, (h / s - tau_eff * mu) / tau_c, 0.0) + predictor.bias
    var = np.where(ok, 1.0 / tau_c + lam, prior_var)
    return mean, var
