"""RelevanceVectorRegressor: Tipping's RVM trained by Subspace EM (Quiñonero-Candela & Winther)."""

import numbers
import warnings

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.gaussian_process.kernels import RBF
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .._fitted_state import fit_method, reset_fitted_state
from .._row_weights import positive_rows
from .._scaling import target_scale
from ..kernels._structured import refuse_structured
from ..rows._blocks import block_rows, map_row_blocks
from ._basis_functions import basis_rows, candidate_basis
from ._fit_memory import fit_memory
from ._regression_em import _RegressionEM
from ._subspace_em import SSEM_PARAMETER_CONSTRAINTS, run_estimator_em
from ._weighted_rows import WeightedRegressionEM

__all__ = ["RelevanceVectorRegressor"]

# Private fitted state, cleared by fit with the public attributes (see _fitted_state).
_PRIVATE_STATE = (
    "_centers",
    "_bias_mask",
    "_d",
    "_L",
    "_mu",
    "_noise_variance",
    "_factor_counts",
    "_y_scale",
)

# The noise variance is kept >= this fraction of the target variance (noise-free data such as
# the Mackey-Glass series would otherwise drive it to 0 and B to infinity).
_NOISE_FLOOR = 1e-10
# With a kernel on structured inputs (requires_vector_input=False) the RVMs refuse to fit:
# their basis functions and predictions are computed on numeric rows.
STRUCTURED_RVM = (
    "the relevance vector machines take numeric X only; SparseGPRegressor and "
    "SparseGPClassifier fit and predict with such kernels"
)


def default_kernel():
    """The SSEM paper's Gaussian basis of fixed variance 10: ``exp(-|x - x'|^2 / 20)``."""
    return RBF(length_scale=np.sqrt(10.0), length_scale_bounds="fixed")


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
    relative likelihood increase is below ``tol``. During the sweep an added basis function
    appends a row to the Cholesky factor of ``Sigma^-1``; the M-step's changes of every active
    ``alpha`` (the paper's full step 4) are applied as one rank-k update and one rank-k
    downdate with Givens deletions for the pruned (``skgpsparse.linalg``), or by one LAPACK
    refactorisation, whichever a cost model prices lower (the same factor up to round-off).
    From 128 active basis functions on, a step adds ``M // 64`` of them (§3 grows the model
    by "some" ``alpha_j`` per step): fewer O(M^3) E-steps, each M-step serving more visits.
    ``s2`` is re-estimated only when it moved by more than 10% and the visited set has grown
    by 10% since the last time. With ``add_test`` (the default) a visited basis function
    enters only if Tipping & Faul's test says it raises the likelihood, at its optimal
    ``alpha``, and the batch phase brings back pruned ones that pass the test (the paper's
    eq. 13 never does). ``method="batch_em"`` is
    standard EM from all basis functions with finite ``alpha``: O(n^3) per step at first and an
    ``n x n`` design; it refactorises once per step, as the final batch phase of SSEM does.

    Cost against the number of rows: the sweep makes one EM step per candidate basis
    function, each O(n M) for the design and its factor's updates, so with ``m`` candidates
    a fit costs about O(n m M). With every row a candidate (the default) that is
    O(n^2 M): practical up to about ten thousand rows and not at tens of thousands.
    ``n_basis_functions`` of about a thousand (a random subset of candidates, the SSEM
    paper's remedy for large sets) makes the fit grow about in proportion to ``n`` (faster at
    large ``n``, as more basis functions stay active with more data) and reaches about a
    hundred thousand rows; beyond that, or to learn the kernel, use
    :class:`~skgpsparse.SparseGPRegressor`. The measured curves are on the benchmarks page of
    the documentation ("Where the slow fits stop").

    Parameters
    ----------
    kernel : Kernel, default=None
        Shape of the basis functions; ``None`` is the paper's ``RBF(sqrt(10))`` (Gaussian of
        variance 10), fixed.
    method : {"ssem", "batch_em"}, default="ssem"
        Subspace EM or standard batch EM.
    alpha_max : float, default=1e9
        ``L``: a basis function whose ``alpha`` reaches it is pruned; SSEM adds basis functions
        at this value. A precision for targets of order one: targets whose largest magnitude
        is outside ``[1/16, 16)`` are fitted as ``y / max |y|``, so that the fit does not
        depend on the unit of ``y`` (see the user guide's advice on scale).
    noise_variance : float, default=None
        Initial noise variance ``s2``; ``None`` means ``0.1 * var(y)``.
    learn_noise : bool, default=True
        Update ``s2`` in the M-step (eq. 12); otherwise keep it fixed.
    bias : bool, default=True
        Add a constant basis function (``phi_0 = 1`` with its own ``alpha_0``, eq. 4). SSEM
        visits it first; it can be pruned like the others.
    add_test : bool, default=True
        SSEM only: Tipping & Faul's add test (the SSEM paper's reference [9]). A visited basis
        function enters only if it raises the marginal likelihood (``q^2 > s``), at its
        optimal ``alpha = s^2 / (q^2 - s)``, and no EM step is spent on the others; the batch
        phase revisits the inactive basis functions (pruned in the sweep or never admitted)
        every 5 steps and when it would stop, at most 10 times, and adds back those of the
        ``M / 4`` best that pass. ``False`` is the paper's Figure 1: every visited basis
        function enters at ``L`` and a pruned one never returns (eq. 13); on the Mackey-Glass
        benchmark that ends at a lower likelihood and a higher test error than batch EM.
    n_basis_functions : int, default=None
        Use only this many training inputs, drawn at random, as candidate basis functions;
        ``None`` uses all of them (the RVM). The fit's cost is about proportional to the
        number of candidates: set it (a thousand, say) for tens of thousands of rows, at
        the risk of missing a useful centre among the rows left out.
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
    M. E. Tipping and A. Faul, "Fast marginal likelihood maximisation for sparse Bayesian
    models", AISTATS 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse import RelevanceVectorRegressor
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
        **SSEM_PARAMETER_CONSTRAINTS,
        "noise_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "learn_noise": ["boolean"],
        "add_test": ["boolean"],
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
        add_test=True,
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
        self.add_test = add_test
        self.n_basis_functions = n_basis_functions
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    @fit_method(_PRIVATE_STATE)
    def fit(self, X, y, sample_weight=None):
        """Fit the RVM by Subspace EM (or batch EM).

        A ``fit`` that raises (invalid input, a numerical failure) leaves the estimator as it
        was: the previous model, intact and usable, or unfitted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights: row ``i`` has the noise variance ``s2 / w_i`` and the
            evidence's terms of ``w_i`` copies (``_weighted_rows``), a zero weight removes
            the row (and its basis function; ``relevance_indices_`` index ``X`` with it).
            The rows repeated ``w_i`` times give the same evidence and EM updates on the
            same basis functions, but their library has a basis function per copy (and
            SSEM visits it in a random order), so the two fits agree to the EM's optimum,
            which can differ by the evidence's local optima, not to rounding.

        Returns
        -------
        self : RelevanceVectorRegressor
            The fitted estimator.
        """
        reset_fitted_state(self, _PRIVATE_STATE)
        refuse_structured(self, "fit", STRUCTURED_RVM)
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        try:  # numeric strings as numbers, as the sparse GP regressor takes them
            y = np.asarray(y, dtype=np.float64)
        except ValueError as exc:
            raise ValueError(f"y must be numeric for regression; got {y.dtype} values.") from exc
        weight, kept = positive_rows(sample_weight, X)  # a zero weight removes the row
        if kept is not None:
            X, y = X[kept], y[kept]
        rng = check_random_state(self.random_state)
        self.kernel_ = default_kernel() if self.kernel is None else clone(self.kernel)
        n = X.shape[0]
        # The model is fitted to y / c, c = max |y| (1 for ordinary targets, so their fits
        # are unchanged): alpha_max, the SSEM entry precision and the M-step's floors then
        # mean the same in every unit of y.
        self._y_scale = c = target_scale(y)
        y = y / c if c != 1.0 else y
        if weight is None:
            var, mean_square = np.var(y), np.mean(y**2)
        else:  # the repeated rows'
            mean = np.average(y, weights=weight)
            var = np.average((y - mean) ** 2, weights=weight)
            mean_square = np.average(y**2, weights=weight)
        scale = var if var > 0 else max(mean_square, 1.0)
        s2 = 0.1 * scale if self.noise_variance is None else self.noise_variance / c / c
        if s2 < _NOISE_FLOOR * scale:  # 1 / s2 would overflow the add test's sums
            warnings.warn(
                f"noise_variance={self.noise_variance:g} is below the floor {_NOISE_FLOOR:g} * "
                f"var(y) = {_NOISE_FLOOR * scale * c * c:.3g} that the fit keeps the noise "
                "above; starting (and, with learn_noise=False, staying) at the floor.",
                UserWarning,
            )
            s2 = _NOISE_FLOOR * scale
        candidates = candidate_basis(X, self.n_basis_functions, self.bias, rng)
        # before the design's allocation (all candidates at once in batch EM)
        fit_memory(
            "RelevanceVectorRegressor", n, X.shape[1], len(candidates.library), self.method,
            self.n_basis_functions,
        ).check()
        args = (self.kernel_, X, y, candidates.centers, candidates.bias_mask, s2,
                self.learn_noise, self.alpha_max, _NOISE_FLOOR * scale)
        # weights: the EM on whitened rows (_weighted_rows)
        model = _RegressionEM(*args) if weight is None else WeightedRegressionEM(
            *args, weight=weight)
        hist = run_estimator_em(model, candidates, self, rng, add_test=self.add_test)
        if model.noise_clipped:
            warnings.warn(
                f"The noise variance reached its floor {_NOISE_FLOOR:g} * var(y) = "
                f"{model.noise_floor * c * c:.3g} and was clipped there; the targets look "
                f"noise-free for this kernel.",
                UserWarning,
            )
        self._store(model, hist, X, n)
        if kept is not None:  # indices of the X given, zero-weight rows included
            self.relevance_indices_ = kept[self.relevance_indices_]
        return self

    def _store(self, model, hist, X, n):
        """Keep what prediction needs: the active centres, ``D = A^-1/2``, the factor of B.

        The private state stays in the fitted units (targets ``y / c``); the public
        attributes are in the targets' units: weights times ``c``, precisions over ``c^2``.
        """
        c = self._y_scale
        idx = model.design.index.copy()
        is_bias = idx == n
        self._centers = np.vstack([X, np.zeros((1, X.shape[1]))])[idx]
        self._bias_mask = is_bias
        self._d = model.design.alpha**-0.5
        # the factor of B = D S D (D = A^-1/2, better conditioned for prediction) is D L
        self._L = self._d[:, None] * model.L
        mu, resid = model.posterior()
        self._mu, self._noise_variance = mu, model.s2
        self.relevance_indices_ = idx[~is_bias]
        self.relevance_vectors_ = X[self.relevance_indices_]
        order = np.concatenate([np.flatnonzero(~is_bias), np.flatnonzero(is_bias)])
        Sigma = self._posterior_covariance()[np.ix_(order, order)]
        alpha = model.design.alpha
        # Beyond |y| ~ 1e154 (or below ~1e-154) a precision or a variance in the targets'
        # squared units is out of the float range; it is kept as inf or 0 (predict uses the
        # fitted units).
        with np.errstate(over="ignore", under="ignore"):
            self.coef_ = mu[~is_bias] * c
            self.intercept_ = float(mu[is_bias].sum()) * c
            self.alpha_ = alpha[~is_bias] / c / c
            self.alpha_bias_ = float(alpha[is_bias][0]) / c / c if is_bias.any() else np.inf
            self.sigma_ = Sigma * c * c
            self.noise_variance_ = model.s2 * c * c
        # the density of y = c (y / c): log p(y) = log p(y / c) - n log c
        log_c = n * np.log(c)
        self.log_marginal_likelihood_curve_ = np.asarray(hist["log_likelihood"]) - log_c
        self.log_marginal_likelihood_value_ = float(model.log_likelihood(mu, resid)) - log_c
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
        # by blocks of rows: one block's M x rows design at a time, not the M x n one
        n_rows = block_rows(len(self._d))
        return map_row_blocks(lambda X_block: self._predict_block(X_block, return_std), X, n_rows)

    def _predict_block(self, X, return_std):
        """:meth:`predict` on the rows of one block (validated)."""
        Phi_T = self._design(X)
        c = self._y_scale  # the fitted units are y / c
        mean = (Phi_T.T @ self._mu) * c
        if not return_std:
            return mean
        if len(self._d):
            # eq. (10): Phi Sigma Phi^T = |L^-1 D Phi^T|^2 per column
            V = solve_triangular(self._L, self._d[:, None] * Phi_T, lower=True, check_finite=False)
            var = self._noise_variance + np.einsum("ij,ij->j", V, V)
        else:
            var = np.full(X.shape[0], self._noise_variance)
        return mean, np.sqrt(var) * c
