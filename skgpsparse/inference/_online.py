"""The sparse online GP classifier: new rows' sites added to a p x p posterior.

With the basis ``u`` and the hyperparameters fixed, the all-rows posterior
(:mod:`skgpsparse.inference._ep`) is Gaussian in the whitened basis values ``w`` (``u = L w``,
``K_uu = L L^T``):

    q(w) proportional to N(w; 0, I) prod_i exp(a_i v_i^T w - g_i (v_i^T w)^2 / 2),

``v_i = L^-1 k_u(x_i)`` (a column of ``V``), ``g_i = tau~_i / (1 + Lambda_i tau~_i)`` and
``a_i = nu~_i / (1 + Lambda_i tau~_i)`` from row ``i``'s site ``(tau~_i, nu~_i)`` and its FITC
variance ``Lambda_i = k(x_i, x_i) - |v_i|^2``. So the posterior is two numbers that grow by a
sum over rows: the precision ``B = I + sum g_i v_i v_i^T`` (p x p) and ``eta = sum a_i v_i``
(p); the mean is ``B^-1 eta``. A row, once its site is folded in, can be forgotten.

New rows enter by assumed density filtering, one row after the other (the sparse online GP of
Csato and Opper, 2002): row ``j``'s latent has the marginal ``N(v_j^T m, Lambda_j + v_j^T S v_j)``
under the current posterior ``N(m, S)``; the site that matches the moments of
``p(y_j | f_j + b) N(f_j)`` (additive-model paper eq. (2), GPML eqs. (3.58)-(3.59); the
likelihood's ``site_update_one``, the probit by default) is then a
rank-one update of the posterior (a Kalman step with observation ``a_j / g_j``, noise ``1 / g_j``).
Rows are taken by blocks of ``k``: with ``C = V_k^T S V_k`` (k x k) and ``V_k^T m`` formed once
per block, each row's update costs O(k) to O(k^2) on them, and the block's sites enter ``B``
and ``eta`` by one rank-k product. Optional EP sweeps over the batch then re-match every site
of the batch at once, with the posterior of the earlier rows as their prior (whitened so that
:func:`~skgpsparse.inference._ep.all_rows_ep` runs on it unchanged).

Row weights (``sample_weight``): a row of weight ``c`` stands for ``c`` copies with one site each
(:mod:`~skgpsparse.inference._ep_passes`), so it enters ``B`` and ``eta`` as ``c g_i v_i v_i^T``
and ``c a_i v_i``. Its ADF step matches one copy's site against the posterior before it and adds
it ``c`` times (the power-``c`` update of the fit's weighted ADF start,
:func:`~skgpsparse.inference._ep_passes.adf_block`); ``c`` copies taken one after the other
would each see the sites of the copies before them, so the ADF pass equals that of repeated
rows only approximately. The EP sweeps carry the weights as the fit's EP does, and their fixed
point is that of the repeated rows.
"""

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from threadpoolctl import threadpool_limits

from ._ep import all_rows_ep
from ._ep_passes import PROBIT
from ._row_columns import StoredColumns
from ._sparse_prior import SparsePrior

__all__ = ["OnlinePosterior"]

# Rows per ADF block: at least _BLOCK_ROWS, and a quarter of the basis size, so that the block's
# O(p^3) factor costs O(p^2) a row while its O(k^2) rank-one updates a row stay small.
_BLOCK_ROWS = 32


class _WhitenedBatch:
    """The batch's rows seen from the earlier rows' posterior: ``f = o + V^T z + e``.

    With ``z ~ N(0, I)``, ``B_0 = L_0 L_0^T`` and ``m_0 = B_0^-1 eta_0``, ``w = m_0 + L_0^-T z``:
    the offsets are ``o = V^T m_0`` and the whitened columns ``L_0^-1 V``; ``Lambda`` is
    unchanged. It has the attributes :func:`~skgpsparse.inference._ep.marginals` reads of a
    :class:`SparsePrior`.
    """

    def __init__(self, prior, L_0, mean_0, weights=None):
        V = prior.V
        self.V = solve_triangular(L_0, V, lower=True, check_finite=False)
        self.columns = StoredColumns(self.V)  # what the passes read
        self.lam = prior.lam
        self.offset = V.T @ mean_0
        self.weights = weights  # the batch's rows' weights (None: once each)


class OnlinePosterior:
    """The all-rows posterior of one binary model as ``(B, eta)``: O(p^2), no rows kept.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Fixed kernel.
    basis_vectors : ndarray of shape (p, n_features)
        Fixed basis (inducing inputs).
    bias : float
        Fixed bias ``b`` of ``p(y | f + b)``.
    precision : ndarray of shape (p, p), default=None
        ``B``; the identity (the prior) if None.
    eta : ndarray of shape (p,), default=None
        ``sum a_i v_i``; zeros if None.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.inference._online import OnlinePosterior
    >>> X = np.linspace(-2, 2, 40)[:, None]; y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> post = OnlinePosterior(RBF(1.0), X[::8], 0.0)
    >>> tau, nu = post.update(X, y, ep_sweeps=0)
    >>> bool(np.all(tau > 0)), post.precision.shape
    (True, (5, 5))
    """

    def __init__(self, kernel, basis_vectors, bias, precision=None, eta=None, likelihood=PROBIT):
        p = basis_vectors.shape[0]
        self.kernel, self.basis_vectors, self.bias = kernel, basis_vectors, float(bias)
        self.likelihood = likelihood
        self.precision = np.eye(p) if precision is None else precision
        self.eta = np.zeros(p) if eta is None else eta

    @classmethod
    def from_sites(cls, kernel, basis_vectors, bias, X, tau, nu, likelihood=PROBIT,
                   weights=None):
        """The posterior of rows ``X`` with EP sites ``(tau~, nu~)`` (a fitted all-rows model;
        ``weights``: its rows' weights, each row's site entering that many times)."""
        post = cls(kernel, basis_vectors, bias, likelihood=likelihood)
        prior = SparsePrior(kernel, X, basis_vectors)
        if prior.columns.stored:
            post._add_sites(prior.V, prior.lam, tau, nu, weights)
            return post
        for J, V_J in prior.columns.blocks():  # V not held whole (_row_columns)
            weights_J = None if weights is None else weights[J]
            post._add_sites(V_J, prior.lam[J], tau[J], nu[J], weights_J)
        return post

    def _add_sites(self, V, lam, tau, nu, weights=None):
        """``B += V G V^T``, ``eta += V a`` (module docstring): rows' sites into the posterior,
        ``G`` and ``a`` times the rows' ``weights`` (their copies) when given."""
        h = 1.0 + lam * tau
        g, a = tau / h, nu / h
        if weights is not None:
            g, a = weights * g, weights * a
        self.precision += (V * g) @ V.T
        self.eta += V @ a

    def _factor(self):
        """``(L_B, mean)``: the Cholesky factor of ``B`` and the posterior mean ``B^-1 eta``."""
        L_B = cholesky(self.precision, lower=True, check_finite=False)
        return L_B, cho_solve((L_B, True), self.eta, check_finite=False)

    def update(self, X, y, ep_sweeps=0, tol=1e-6, weights=None):
        """Add the rows ``X`` (labels ``y`` in {-1, +1}): one ADF pass, then EP sweeps.

        Parameters
        ----------
        X : ndarray of shape (m, n_features)
        y : ndarray of shape (m,)
        ep_sweeps : int, default=0
            Parallel EP sweeps over the batch after the ADF pass (stopping early when no site
            moves by more than ``tol``); the earlier rows' posterior is their prior.
        tol : float, default=1e-6
        weights : ndarray of shape (m,), default=None
            Positive weight of each row, the copies it stands for (module docstring); None:
            one each.

        Returns
        -------
        tau, nu : ndarray of shape (m,)
            The rows' sites (natural parameters), now folded into ``B`` and ``eta``.
        """
        # one BLAS thread, as the classifier's fit (learning._binary): the blocks' small
        # products lost to thread start-ups (20,000 rows, p = 100: 0.8 s CPU on one thread,
        # 5.0 s on two)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._update(X, y, ep_sweeps, tol, weights)

    def _update(self, X, y, ep_sweeps, tol, weights):
        prior = SparsePrior(self.kernel, X, self.basis_vectors)
        V = prior.V  # a batch's, whole
        L_0, mean_0 = self._factor()
        start_state = (self.precision.copy(), self.eta.copy())  # the earlier rows' posterior
        tau, nu = np.zeros(y.size), np.zeros(y.size)
        block = max(_BLOCK_ROWS, self.eta.size // 4)
        for start in range(0, y.size, block):
            rows = slice(start, start + block)
            L_B, mean = (L_0, mean_0) if start == 0 else self._factor()
            weights_J = None if weights is None else weights[rows]
            tau[rows], nu[rows] = _adf_block(
                V[:, rows], prior.lam[rows], y[rows], self.bias, L_B, mean,
                self.likelihood, weights_J,
            )
            self._add_sites(V[:, rows], prior.lam[rows], tau[rows], nu[rows], weights_J)
        if ep_sweeps > 0:
            self.precision, self.eta = start_state
            tau, nu = self._ep(prior, y, tau, nu, L_0, mean_0, ep_sweeps, tol, weights)
        return tau, nu

    def _ep(self, prior, y, tau, nu, L_0, mean_0, ep_sweeps, tol, weights=None):
        """EP over the batch from its ADF sites, the earlier rows' posterior as its prior."""
        batch = _WhitenedBatch(prior, L_0, mean_0, weights)
        # a site N(f; nu/tau, 1/tau) on f = o + f' is the site (tau, nu - tau o) on f'
        tau, nu_w, _, _ = all_rows_ep(
            batch, y, self.bias + batch.offset, tau, nu - tau * batch.offset,
            tol=tol, max_sweeps=ep_sweeps, likelihood=self.likelihood,
        )
        nu = nu_w + tau * batch.offset
        self._add_sites(prior.V, prior.lam, tau, nu, weights)
        return tau, nu

    def weight_posterior(self):
        """``(L, L_B, mean)``: the factor of ``K_uu`` and the posterior ``N(mean, (L_B
        L_B^T)^-1)`` of the whitened basis values ``w``, what a predictor needs."""
        L_B, mean = self._factor()
        L = SparsePrior(self.kernel, self.basis_vectors[:1], self.basis_vectors).L
        return L, L_B, mean


def _adf_block(V, lam, y, bias, L_B, mean, likelihood, weights=None):
    """Sequential ADF sites of a block of rows from the posterior ``N(mean, B^-1)``.

    ``C = V^T B^-1 V`` and ``mu = V^T mean`` are the block's latents (less ``Lambda``) under the
    posterior; row ``j`` takes its site from its marginal ``N(mu_j, Lambda_j + C_jj)``
    (additive-model paper eq. (2)), then the rows after it see the rank-one update
    ``C -= c_j c_j^T g_j / (1 + g_j C_jj)``, ``mu += c_j (a_j - g_j mu_j) / (1 + g_j C_jj)``.
    A row of weight ``w_j`` (``weights``) enters the update as ``w_j`` copies of its site,
    ``g_j`` and ``a_j`` times ``w_j`` (the power-``w_j`` update, module docstring); the sites
    returned are one copy's.
    """
    U = solve_triangular(L_B, V, lower=True, check_finite=False)
    C = U.T @ U
    mu = V.T @ mean
    k = y.size
    tau, nu = np.zeros(k), np.zeros(k)
    for j in range(k):
        s2 = lam[j] + C[j, j]
        t, shift = likelihood.site_update_one(y[j], mu[j] + bias, s2)
        tau[j], nu[j] = t, t * (mu[j] + shift)
        g = t / (1.0 + lam[j] * t)
        a = nu[j] / (1.0 + lam[j] * t)
        if weights is not None:  # the row's copies (power-w_j update)
            g, a = weights[j] * g, weights[j] * a
        if j + 1 == k or g == 0.0:
            continue
        c = C[j + 1 :, j]
        d = 1.0 + g * C[j, j]
        mu[j + 1 :] += c * ((a - g * mu[j]) / d)
        C[j + 1 :, j + 1 :] -= np.outer(c, c * (g / d))
    return tau, nu

