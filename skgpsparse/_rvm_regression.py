"""RelevanceVectorRegressor: Tipping's RVM trained by Subspace EM (Quiñonero-Candela & Winther)."""

import numbers
import warnings

import numpy as np
from scipy.linalg import cholesky, lapack, qr, solve_triangular
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context, clone
from sklearn.gaussian_process.kernels import RBF, Kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._rvm import (
    ALPHA_FLOOR,
    ALPHA_MIN,
    ActiveDesign,
    basis_rows,
    change_precisions,
    leading_identity,
    mackay_update,
    run_subspace_em,
)
from .linalg import cholesky_append

__all__ = ["RelevanceVectorRegressor"]

# The noise variance is kept >= this fraction of the target variance (noise-free data such as
# the Mackey-Glass series would otherwise drive it to 0 and B to infinity).
_NOISE_FLOOR = 1e-10
# SSEM sweep: a change of s2 (the one refactorisation) is applied when it exceeds this
# relative size (|log(s2_new / s2_old)|).
NOISE_RTOL = 0.1
# In the sweep s2 is re-estimated (a refactorisation) only after the number of visited basis
# functions has grown by this factor since the last time: O(log N) refactorisations.
NOISE_GAP = 1.1


def default_kernel():
    """The SSEM paper's Gaussian basis of fixed variance 10: ``exp(-|x - x'|^2 / 20)``."""
    return RBF(length_scale=np.sqrt(10.0), length_scale_bounds="fixed")


class _RegressionEM:
    """Exact E-step and MacKay M-step of the RVM on an active set (SSEM paper §2, eqs. 6-12).

    Keeps ``G = Phi^T Phi`` and ``h = Phi^T t`` over the active basis functions (grown one row
    and column per added function, O(n M)) and a lower Cholesky factor ``L L^T = S`` of the
    posterior precision ``S = Sigma^-1 = A + G / s2`` (eq. 7) in preallocated storage. In the
    Subspace EM sweep (:meth:`subspace_step`) only the noise refactorises the factor:
    adding basis function ``j`` at ``alpha_j = L`` (eq. 13) borders ``S``
    (:func:`skgpsparse.linalg.cholesky_append`, O(M^2)); the M-step's changes of every active
    ``alpha`` (eq. 12) are the diagonal change ``S + diag(alpha_new - alpha_old)``, one rank-k
    update for the increases and one rank-k downdate for the decreases (O(M^3) at most, the
    E-step's order), and pruning is a Givens deletion
    (:func:`skgpsparse._rvm.change_precisions`).

    The noise variance ``s2`` multiplies all of ``G``, so a change of ``s2`` is a full-rank
    change of ``S``: it is the one step that refactorises (O(M^3 / 3), LAPACK, about the cost of
    the E-step's ``diag(Sigma)``). In the sweep ``s2`` is therefore updated only when it moved
    by more than ``NOISE_RTOL`` and the visited basis functions have grown by ``NOISE_GAP``
    since its last update (O(log N) refactorisations per sweep); batch EM (:meth:`em_step`)
    updates ``s2`` and all ``alpha`` every step and refactorises once per step.
    """

    def __init__(
        self, kernel, X, t, centers, bias_mask, noise_variance, learn_noise, alpha_max, noise_floor
    ):
        n = X.shape[0]
        self.kernel, self.X, self.t = kernel, X, t
        self.centers, self.bias_mask = centers, bias_mask
        self.s2, self.learn_noise = float(noise_variance), learn_noise
        self.alpha_max, self.noise_floor = alpha_max, noise_floor
        self.design = ActiveDesign(n)
        self._G = np.empty((16, 16))
        self._h = np.empty(16)
        self._L = np.zeros((16, 16))
        self.noise_clipped = False
        self.n_fallback = 0
        # how the factor changed: refactorisations, appends, rank-one updates, deletions
        self.visits = self._noise_visit = 0  # basis functions added one at a time
        self._post = None  # (mu, resid) of the current factor, kept from the last M-step
        self.counts = dict.fromkeys(
            ("refactor", "append", "rank_one", "rank_k", "delete", "move"), 0
        )

    @property
    def n_active(self):
        return self.design.size

    @property
    def L(self):
        """The factor ``L L^T = A + G / s2`` of the active basis functions."""
        M = self.design.size
        return self._L[:M, :M]

    @property
    def G(self):
        M = self.design.size
        return self._G[:M, :M]

    def _reserve(self, m):
        cap = self._G.shape[0]
        if m <= cap:
            return
        new = max(m, 2 * cap)
        M = self.design.size
        G, L = np.empty((new, new)), np.zeros((new, new))
        G[:M, :M], L[:M, :M] = self._G[:M, :M], self._L[:M, :M]
        self._G, self._L, self._h = G, L, np.resize(self._h, new)

    def add(self, entries, alpha):
        """Make library ``entries`` active with precision ``alpha`` (``None``: ``L``)."""
        rows = basis_rows(self.kernel, self.X, self.centers[entries], self.bias_mask[entries])
        if alpha is None:
            alpha = self.alpha_max
        elif isinstance(alpha, str):  # "auto"
            # prior variance of y(x_i) sum_j phi_j(x_i)^2 / alpha ~ var(t) on average
            alpha = np.einsum("ij,ij->", rows, rows) / (len(self.t) * max(np.var(self.t), self.s2))
        M, k = self.design.size, len(entries)
        self._reserve(M + k)
        G = self._G
        # the new columns of G = Phi^T Phi and h = Phi^T t: O(n M k)
        G[:M, M : M + k] = self.design.rows @ rows.T
        G[M : M + k, :M] = G[:M, M : M + k].T
        G[M : M + k, M : M + k] = rows @ rows.T
        self._h[M : M + k] = rows @ self.t
        self.design.append(rows, entries, alpha)
        self._post = None
        if k == 1:
            self.visits += 1
            # eq. (13): j enters at alpha_j = L; S gains the row [G_j. / s2, L + G_jj / s2]
            try:
                cholesky_append(
                    self._L,
                    G[:M, M] / self.s2,
                    self.design.alpha[M] + G[M, M] / self.s2,
                    size=M,
                    overwrite_L=True,
                )
                self.counts["append"] += 1
                return
            except np.linalg.LinAlgError:  # pragma: no cover - c >= L keeps the pivot > 0
                pass
        self.refactor()

    def _factor(self, order, alpha, s2):
        """Lower Cholesky factor of ``S = A + G / s2`` over positions ``order`` (new array)."""
        G = self.G[np.ix_(order, order)]
        S = G / s2
        S[np.diag_indices_from(S)] += alpha
        self.counts["refactor"] += 1
        try:
            return cholesky(S, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            # Rounding in G (nearly collinear basis functions) lost S > 0: factor
            # S = [Phi / s; A^1/2]^T [Phi / s; A^1/2] from a QR instead, O(n M^2).
            Psi = self.design.rows[order].T / np.sqrt(s2)
            R = qr(np.vstack([Psi, np.diag(np.sqrt(alpha))]), mode="r", check_finite=False)[0]
            R = R[: len(order)]
            return R.T * np.where(np.diag(R) < 0, -1.0, 1.0)

    def refactor(self):
        """``L L^T = A + G / s2`` from scratch for the current ``alpha`` and ``s2``."""
        M = self.design.size
        if M:
            self._L[:M, :M] = self._factor(np.arange(M), self.design.alpha, self.s2)
        self._post = None

    def posterior(self, L=None, order=None, s2=None):
        """Eq. (6): ``mu = S^-1 h / s2`` over positions ``order``, and ``t - Phi mu``."""
        L = self.L if L is None else L
        s2 = self.s2 if s2 is None else s2
        M = self.design.size
        order = np.arange(M) if order is None else order
        if len(order) == 0:
            return np.empty(0), self.t.copy()
        u = solve_triangular(L, self._h[:M][order], lower=True, check_finite=False)
        mu = solve_triangular(L, u, lower=True, trans="T", check_finite=False) / s2
        full = np.zeros(M)
        full[order] = mu
        return mu, self.t - self.design.rows.T @ full

    def log_likelihood(self, mu, resid, L=None, alpha=None, s2=None):
        """Eq. (11): ``log N(t | 0, s2 I + Phi A^-1 Phi^T)`` as ``-1/2 [n log 2 pi s2 +
        log|S| - log|A| + |t - Phi mu|^2 / s2 + mu^T A mu]`` (determinant lemma)."""
        L = self.L if L is None else L
        alpha = self.design.alpha if alpha is None else alpha
        s2 = self.s2 if s2 is None else s2
        n = len(self.t)
        logdet = 2.0 * np.sum(np.log(np.diag(L))) - np.sum(np.log(alpha))
        data = resid @ resid / s2 + np.sum(alpha * mu * mu)
        return -0.5 * (n * np.log(2 * np.pi * s2) + logdet + data)

    def e_step(self):
        """Eqs. (6)-(7): ``mu``, the residual, ``diag(Sigma)`` and ``gamma = 1 - alpha
        Sigma_jj``; ``Sigma = L^-T L^-1`` needs the inverse factor, O(M^3 / 3)."""
        M = self.design.size
        mu, resid = self.posterior() if self._post is None else self._post
        if M == 0:
            return mu, resid, np.empty(0), np.empty(0)
        Linv, info = lapack.dtrtri(self.L, lower=1)
        if info != 0:  # pragma: no cover - S >= A keeps L invertible
            raise np.linalg.LinAlgError("RVM: the factor of Sigma^-1 is singular.")
        sigma_diag = np.einsum("ij,ij->j", Linv, Linv)
        gamma = np.clip(1.0 - self.design.alpha * sigma_diag, 0.0, 1.0)
        return mu, resid, sigma_diag, gamma

    def _m_step(self, rule, mu, gamma, sigma_diag, resid, noise=True):
        """``(alpha, s2)`` by MacKay's update (eq. 12) or by the EM update (§2)."""
        M, n = self.design.size, len(self.t)
        s2 = self.s2
        if self.learn_noise and noise:
            if rule == "mackay":  # eq. (12): s2 = |t - Phi mu|^2 / (N - sum gamma)
                s2 = (resid @ resid) / max(n - gamma.sum(), 1e-3)
            else:  # EM: s2 = (|t - Phi mu|^2 + s2_old sum gamma) / N
                s2 = (resid @ resid + self.s2 * gamma.sum()) / n
            if s2 < self.noise_floor:
                self.noise_clipped = True
                s2 = self.noise_floor
        # the floor never raises an alpha (with the old s2), so EM stays an ascent step
        floor = np.minimum(np.diag(self._G)[:M] / self.s2, self.design.alpha / ALPHA_FLOOR)
        if rule == "mackay":  # eq. (12): alpha_j = gamma_j / mu_j^2
            alpha = mackay_update(gamma, mu, floor=floor)
        else:  # EM (§2): alpha_j = 1 / (mu_j^2 + Sigma_jj)
            alpha = np.maximum(
                1.0 / (mu * mu + sigma_diag), np.maximum(ALPHA_MIN, ALPHA_FLOOR * floor)
            )
        return alpha, s2

    def _commit(self, L, order, alpha, s2, post):
        """Make the factor ``L`` over positions ``order`` with ``alpha`` the model's."""
        M, k = self.design.size, len(order)
        p = leading_identity(order)
        if p < k or k < M:
            # G's leading p x p block stays; the rest is permuted, O(M (M - p))
            tail = order[p:]
            G = self._G
            G[p:k, :k] = G[np.ix_(tail, order)]
            G[:p, p:k] = G[p:k, :p].T
            self._h[p:k] = self._h[:M][tail]
            self.design.take(order)
        self.design.alpha = alpha
        self._L[:k, :k] = L
        self.s2 = s2
        self._post = post

    def em_step(self, estep=None, reorder=False):
        """One batch EM step: E-step, M-step of every ``alpha`` and ``s2``, pruning of
        ``alpha >= L``, one refactorisation of the pruned ``S``; returns the log marginal
        likelihood of the updated model.

        The M-step is MacKay's update (eq. 12). It is not an EM step and can lower the
        likelihood (rarely; mostly when the ``ALPHA_FLOOR`` binds); then the step is redone with
        the EM update of §2, which cannot. With ``reorder`` (the sweep's noise updates) the new
        factor lists the basis functions whose ``alpha`` is at its floor first: those stay
        fixed while ``s2`` falls, so the following rank-k changes start further down.
        """
        mu, resid, sigma_diag, gamma = self.e_step() if estep is None else estep
        ll0 = self.log_likelihood(mu, resid)
        for rule in ("mackay", "em"):
            alpha, s2 = self._m_step(rule, mu, gamma, sigma_diag, resid)
            order = np.flatnonzero(alpha < self.alpha_max)
            if reorder:
                # rows whose alpha sits at the floor (fixed while s2 falls) first: the sweep's
                # rank-k changes then start further down the factor
                at_floor = alpha[order] <= ALPHA_FLOOR * np.diag(self._G)[order] / self.s2
                order = np.concatenate([order[at_floor], order[~at_floor]])
            L = self._factor(order, alpha[order], s2) if len(order) else np.empty((0, 0))
            mu_new, resid_new = self.posterior(L, order, s2)
            ll = self.log_likelihood(mu_new, resid_new, L, alpha[order], s2)
            if ll >= ll0 - 1e-12 * abs(ll0) or rule == "em":
                break
            self.n_fallback += 1
        self._commit(L, order, alpha[order], s2, (mu_new, resid_new))
        return ll

    def subspace_step(self):
        """One SSEM step (Figure 1, steps 3-4) on the factor, without refactorising.

        E-step in the active subspace, then the M-step (eq. 12) of every active ``alpha``
        (step 4: "for all alpha_j such that j in R_n"): all changes are applied to the factor
        at once, the increases as one rank-k update and the decreases as one rank-k downdate,
        and those reaching ``L`` are pruned by Givens deletions
        (:func:`skgpsparse._rvm.change_precisions`). If MacKay's update would lower the
        likelihood, the step is redone with the EM update of §2, which cannot. ``s2`` keeps its
        value unless eq. (12) moves it by more than ``NOISE_RTOL`` and the number of visited
        basis functions has grown by ``NOISE_GAP`` since its last update: then the step is a
        batch step (:meth:`em_step`), the sweep's one kind of refactorisation, at most
        ``log N / log NOISE_GAP`` times per sweep.
        """
        estep = mu, resid, sigma_diag, gamma = self.e_step()
        if self.learn_noise and self.visits >= NOISE_GAP * self._noise_visit:
            s2 = self._m_step("mackay", mu, gamma, sigma_diag, resid)[1]
            if abs(np.log(s2 / self.s2)) > NOISE_RTOL:
                self._noise_visit = self.visits
                return self.em_step(estep, reorder=True)
        ll0 = self.log_likelihood(mu, resid)
        old = self.design.alpha
        for rule in ("mackay", "em"):
            alpha, _ = self._m_step(rule, mu, gamma, sigma_diag, resid, noise=False)
            prune = alpha >= self.alpha_max
            # step 4: every active alpha takes its new value (exactly unchanged ones are skipped)
            L, order, a = self._apply(alpha, ~prune & (alpha != old), prune)
            mu_new, resid_new = self.posterior(L, order)
            ll = self.log_likelihood(mu_new, resid_new, L, a)
            if ll >= ll0 - 1e-12 * abs(ll0) or rule == "em":
                break
            self.n_fallback += 1
        self._commit(L, order, a, self.s2, (mu_new, resid_new))
        return ll

    def set_alpha(self, alpha):
        """Give the active basis functions precisions ``alpha`` (pruning ``alpha >= L``) by
        rank-k updates and downdates and deletions of the factor, without refactorising."""
        prune = alpha >= self.alpha_max
        L, order, a = self._apply(alpha, ~prune & (alpha != self.design.alpha), prune)
        self._commit(L, order, a, self.s2, self.posterior(L, order))

    def _apply(self, alpha, change, prune):
        """Factor after pruning ``prune`` and setting ``alpha[change]``, on a copy."""
        return change_precisions(
            self.L, self.G, self.s2, self.design.alpha, alpha, change, prune, self.counts
        )


class RelevanceVectorRegressor(RegressorMixin, BaseEstimator):
    """Relevance vector machine regression trained by Subspace EM.

    The extended linear model ``y(x) = sum_j w_j phi_j(x)`` with one Gaussian basis function
    ``phi_j(x) = k(x, x_j)`` per training input (and a constant one if ``bias``), Gaussian
    noise of variance ``s2`` and an ARD prior ``w_j ~ N(0, 1 / alpha_j)`` (SSEM paper eqs.
    1-12). ``alpha`` and ``s2`` maximise the marginal likelihood (eq. 11) by EM with MacKay's
    update (eq. 12); most ``alpha`` grow to ``alpha_max`` (the paper's ``L``) and their basis
    functions are pruned, leaving a few relevance vectors. The kernel is fixed (not learned).

    ``method="ssem"`` (Subspace EM, §3, Figure 1) starts with every ``alpha = L`` and adds one
    basis function per EM step, so the E-step costs O(M^3 + n M) with ``M`` the active basis
    functions, not O(n^3); once all are visited it runs batch EM on the active set until the
    relative likelihood increase is below ``tol``. During the sweep the Cholesky factor of
    ``Sigma^-1`` is only updated: an added basis function appends a row, the M-step's changes
    of every active ``alpha`` (the paper's full step 4) are one rank-k update and one rank-k
    downdate, a pruned basis function a Givens deletion (``skgpsparse.linalg``). The sweep's
    one refactorisation is the noise: ``s2`` is re-estimated only when it moved by more than
    10% and the visited set has grown by 10% since the last time. ``method="batch_em"`` is
    standard EM from all basis functions with finite ``alpha``: O(n^3) per step at first and an
    ``n x n`` design; it refactorises once per step, as the final batch phase of SSEM does.

    Parameters
    ----------
    kernel : Kernel, default=None
        Shape of the basis functions; ``None`` is the paper's ``RBF(sqrt(10))`` (Gaussian of
        variance 10), fixed.
    method : {"ssem", "batch_em"}, default="ssem"
        Subspace EM or standard batch EM.
    alpha_max : float, default=1e9
        ``L``: a basis function whose ``alpha`` reaches it is pruned; SSEM adds basis functions
        at this value.
    noise_variance : float, default=None
        Initial noise variance ``s2``; ``None`` means ``0.1 * var(y)``.
    learn_noise : bool, default=True
        Update ``s2`` in the M-step (eq. 12); otherwise keep it fixed.
    bias : bool, default=True
        Add a constant basis function (``phi_0 = 1`` with its own ``alpha_0``, eq. 4). SSEM
        visits it first; it can be pruned like the others.
    n_basis_functions : int, default=None
        Use only this many training inputs, drawn at random, as candidate basis functions;
        ``None`` uses all of them (the RVM).
    max_iter : int, default=200
        Maximum number of batch EM steps (after the SSEM sweep, or in total for batch EM).
    tol : float, default=1e-5
        Stop when 5 consecutive batch EM steps each increase the log marginal likelihood by
        less than ``tol`` times its magnitude.
    random_state : int, RandomState instance or None, default=None
        Order in which SSEM visits the basis functions, and the draw of ``n_basis_functions``.
    verbose : int, default=0
        Print progress.

    Attributes
    ----------
    kernel_ : Kernel
        The kernel used (a clone of ``kernel``).
    relevance_indices_ : ndarray of shape (n_relevance,)
        Training rows whose basis functions survived.
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
        Those training inputs.
    coef_ : ndarray of shape (n_relevance,)
        Posterior mean weights ``mu`` of the relevance vectors (eq. 6).
    intercept_ : float
        Posterior mean weight of the bias (0 without it or when pruned).
    alpha_ : ndarray of shape (n_relevance,)
        Prior precisions of the relevance vectors' weights.
    alpha_bias_ : float
        Prior precision of the bias weight (``inf`` without it or when pruned).
    sigma_ : ndarray of shape (n_active, n_active)
        Posterior covariance of the weights (eq. 7), relevance vectors then the bias if active.
    noise_variance_ : float
        Learned noise variance ``s2``.
    log_marginal_likelihood_value_ : float
        Log marginal likelihood (eq. 11) of the final model.
    log_marginal_likelihood_curve_ : ndarray of shape (n_steps,)
        Log marginal likelihood after each EM step (SSEM sweep, then batch steps).
    n_relevance_curve_ : ndarray of shape (n_steps,)
        Number of active basis functions after each EM step.
    cpu_time_curve_ : ndarray of shape (n_steps,)
        Process time (s) since the start of training after each EM step.
    n_iter_ : int
        Number of batch EM steps.
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    RelevanceVectorClassifier : the classifier, with mean-field E-steps.

    References
    ----------
    J. Quiñonero-Candela and O. Winther, "Incremental Gaussian processes", NIPS 15, 2003.
    M. E. Tipping, "Sparse Bayesian learning and the relevance vector machine", JMLR 1, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse._rvm_regression import RelevanceVectorRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, size=(80, 1)); y = np.sin(X[:, 0]) + 0.05 * rng.randn(80)
    >>> rvm = RelevanceVectorRegressor(RBF(1.0), random_state=0).fit(X, y)
    >>> len(rvm.relevance_vectors_) < 20
    True
    >>> mean, std = rvm.predict(X[:2], return_std=True)
    >>> bool(np.all(np.abs(mean - np.sin(X[:2, 0])) < 0.1))
    True
    """

    _parameter_constraints: dict = {
        "kernel": [Kernel, None],
        "method": [StrOptions({"ssem", "batch_em"})],
        "alpha_max": [Interval(numbers.Real, 0, None, closed="neither")],
        "noise_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "learn_noise": ["boolean"],
        "bias": ["boolean"],
        "n_basis_functions": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        method="ssem",
        alpha_max=1e9,
        noise_variance=None,
        learn_noise=True,
        bias=True,
        n_basis_functions=None,
        max_iter=200,
        tol=1e-5,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.method = method
        self.alpha_max = alpha_max
        self.noise_variance = noise_variance
        self.learn_noise = learn_noise
        self.bias = bias
        self.n_basis_functions = n_basis_functions
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the RVM by Subspace EM (or batch EM).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : RelevanceVectorRegressor
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        rng = check_random_state(self.random_state)
        self.kernel_ = default_kernel() if self.kernel is None else clone(self.kernel)
        n = X.shape[0]
        scale = np.var(y) if np.var(y) > 0 else max(np.mean(y**2), 1.0)
        s2 = 0.1 * scale if self.noise_variance is None else self.noise_variance
        centers = np.vstack([X, np.zeros((1, X.shape[1]))])
        bias_mask = np.zeros(n + 1, dtype=bool)
        bias_mask[n] = True
        library = np.arange(n)
        if self.n_basis_functions is not None and self.n_basis_functions < n:
            library = np.sort(rng.choice(n, self.n_basis_functions, replace=False))
        first = np.array([n]) if self.bias else None
        if self.bias:
            library = np.append(library, n)
        model = _RegressionEM(
            self.kernel_,
            X,
            y,
            centers,
            bias_mask,
            s2,
            self.learn_noise,
            self.alpha_max,
            _NOISE_FLOOR * scale,
        )
        hist = run_subspace_em(
            model,
            library,
            method=self.method,
            alpha_init="auto",
            max_iter=self.max_iter,
            tol=self.tol,
            rng=rng,
            verbose=self.verbose,
            first=first,
        )
        if model.noise_clipped:
            warnings.warn(
                f"The noise variance reached its floor {_NOISE_FLOOR:g} * var(y) = "
                f"{model.noise_floor:.3g} and was clipped there; the targets look noise-free "
                f"for this kernel.",
                UserWarning,
            )
        self._store(model, hist, X, n)
        return self

    def _store(self, model, hist, X, n):
        """Keep what prediction needs: the active centres, ``D = A^-1/2``, the factor of B."""
        idx = model.design.index.copy()
        is_bias = idx == n
        self._centers = np.vstack([X, np.zeros((1, X.shape[1]))])[idx]
        self._bias_mask = is_bias
        self._d = model.design.alpha**-0.5
        # the factor of B = D S D (D = A^-1/2, better conditioned for prediction) is D L
        self._L = self._d[:, None] * model.L
        mu, resid = model.posterior()
        self.relevance_indices_ = idx[~is_bias]
        self.relevance_vectors_ = X[self.relevance_indices_]
        self.coef_ = mu[~is_bias]
        self.intercept_ = float(mu[is_bias].sum())
        self.alpha_ = model.design.alpha[~is_bias].copy()
        self.alpha_bias_ = float(model.design.alpha[is_bias][0]) if is_bias.any() else np.inf
        order = np.concatenate([np.flatnonzero(~is_bias), np.flatnonzero(is_bias)])
        self._mu = mu
        Sigma = self._posterior_covariance()
        self.sigma_ = Sigma[np.ix_(order, order)]
        self.noise_variance_ = model.s2
        self.log_marginal_likelihood_curve_ = np.asarray(hist["log_likelihood"])
        self.log_marginal_likelihood_value_ = float(model.log_likelihood(mu, resid))
        self.n_relevance_curve_ = np.asarray(hist["n_active"])
        self.cpu_time_curve_ = np.asarray(hist["cpu_time"])
        self.n_iter_ = hist["n_iter"]
        self.n_em_fallbacks_ = model.n_fallback
        self._factor_counts = dict(model.counts)

    def _posterior_covariance(self):
        """Eq. (7): ``Sigma = D B^-1 D`` over the active basis functions (internal order)."""
        M = len(self._d)
        if M == 0:
            return np.empty((0, 0))
        Linv = solve_triangular(self._L, np.eye(M), lower=True, check_finite=False)
        return self._d[:, None] * (Linv.T @ Linv) * self._d[None, :]

    def _design(self, X):
        """``Phi(X)^T``: the active basis functions at ``X`` (``M x m``)."""
        return basis_rows(self.kernel_, X, self._centers, self._bias_mask)

    def predict(self, X, return_std=False):
        """Predictive mean (eq. 9) and, with ``return_std``, standard deviation (eq. 10).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query inputs.
        return_std : bool, default=False
            Also return ``sigma_*`` with ``sigma_*^2 = s2 + Phi(x) Sigma Phi(x)^T``.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
            Predictive means ``Phi(x) mu``.
        y_std : ndarray of shape (n_samples,)
            Predictive standard deviations (only with ``return_std``).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Phi_T = self._design(X)
        mean = Phi_T.T @ self._mu
        if not return_std:
            return mean
        if len(self._d):
            # eq. (10): Phi Sigma Phi^T = |L^-1 D Phi^T|^2 per column
            V = solve_triangular(self._L, self._d[:, None] * Phi_T, lower=True, check_finite=False)
            var = self.noise_variance_ + np.einsum("ij,ij->j", V, V)
        else:
            var = np.full(X.shape[0], self.noise_variance_)
        return mean, np.sqrt(var)
