"""SparseGPRegressor: sparse MAP / projected-process GP regression with exchange refinement."""

import numbers
import warnings

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context, clone
from sklearn.gaussian_process.kernels import RBF, Kernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from .._validation import plain_float_rows
from ..kernels._columns import kernel_diag
from ..selection import BaseSelector
from ._basis import make_selector, select_and_exchange
from ._likelihood import (
    check_noise_bounds,
    dtc_log_marginal_likelihood,
    learn_hyperparameters,
    warn_at_noise_bound,
)
from ._prediction import RegressionPredictor
from ._state import RELATIVE_JITTER, RegressionState

__all__ = ["SparseGPRegressor"]

# Size of the random subset whose full-GP likelihood initialises the hyperparameters.
_INIT_SUBSET = 100
# BLAS threads during fit: the selection's products are memory-bound matrix-vector ones and
# the learning's are small, so a second BLAS thread made whole fits slower
# (benchmarks/results/floor.md); the state spreads its row passes over n_jobs threads instead.
_FIT_BLAS_THREADS = 1


def _jitter(kernel, X):
    """The state's and the likelihood's jitter: relative to the mean prior variance."""
    return RELATIVE_JITTER * max(float(np.mean(kernel_diag(kernel, X))), 0.0)


class SparseGPRegressor(RegressorMixin, BaseEstimator):
    """Sparse Gaussian process regression on a greedily selected basis set.

    The model is the sparse MAP estimate of a GP (exchange paper, eq. (2)): the predictive mean
    ``f(x) = sum_j alpha_j k(x, x_j)`` uses ``p <= max_basis`` training points ``x_j`` (the
    basis vectors), chosen by greedy forward selection and refined by backward-deletion
    exchange steps (criterion eq. (5)). Fitting costs O(n p^2) time and O(n p) memory with
    fixed hyperparameters; the predictive variance is the projected-process variance (GPML
    eq. (8.27)), which returns to the prior far from the basis.

    Parameters
    ----------
    kernel : kernel instance, default=None
        Covariance function; ``None`` means ``ConstantKernel(1.0) * RBF(1.0)``. Give the noise
        through ``noise_variance``, not a ``WhiteKernel``.
    noise_variance : float, default=1e-2
        Noise variance ``s2`` (initial value when it is learned), in the units of the targets
        the model is fitted to (the normalised ones with ``normalize_y=True``).
    noise_variance_bounds : pair of floats >= 0 or "fixed", default=(1e-6, 1e2)
        Bounds of ``noise_variance`` for hyperparameter learning; ``"fixed"`` keeps it.
    max_basis : int, default=100
        Number of basis vectors ``p`` (clipped to the number of samples, with a warning).
    selection : {"matching_pursuit", "exact", "info_gain", "random"} or BaseSelector, \
            default="matching_pursuit"
        Forward-selection strategy. ``"matching_pursuit"``: Keerthi & Chu's DMAX (the cost
        decrease with only the new weight optimised) on a random working set;
        ``"exact"``: the exact decrease of the cost (Smola & Bartlett) on a random working set;
        ``"info_gain"``: the fast information-gain approximation of Seeger et al. over all
        remaining points; ``"random"``: uniform. A selector object (see
        :mod:`skgpsparse.selection`) is cloned and used as is.
    working_set_size : int, default=None
        Candidates scored per step by ``"exact"`` and ``"matching_pursuit"`` (kappa; ``None``
        means 59).
    n_exchange : int, default=0
        Exchange steps after forward selection: delete the basis vector whose removal increases
        the cost least (eq. (5)), then forward-select a replacement; a step whose replacement
        would leave the cost higher than before is undone, so exchange never raises the cost.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        Maximiser of the approximate log marginal likelihood (GPML eq. (8.17)) over the kernel
        hyperparameters and ``log(noise_variance)``, on the selected basis; scikit-learn's
        contract ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)``, with
        ``obj_func(theta, eval_gradient=True) -> (-lml, -gradient)``. ``None`` keeps the
        hyperparameters fixed. Learning starts from the exact GP likelihood on a random subset
        of ``max(max_basis, 100)`` points (as the exchange paper's experiments set their
        hyperparameters), then alternates basis selection and learning on the basis.
    max_iter : int, default=10
        Maximum number of alternations between basis selection and hyperparameter learning.
    tol : float, default=1e-4
        The alternation stops when the log marginal likelihood improves by less than
        ``tol * max(1, |lml|)``.
    normalize_y : bool, default=False
        Centre and scale the targets before fitting (as scikit-learn's GP regressor).
    random_state : int, RandomState instance or None, default=None
        Randomness of the working sets and of random selection.
    verbose : int, default=0
        Print the progress of the alternation.
    n_jobs : int, default=None
        Threads for the passes over the training rows during basis selection (kernel
        columns, residual and state updates, chunk by chunk; BLAS runs on one thread per
        chunk meanwhile). ``None`` means 1 unless in a :func:`joblib.parallel_backend`
        context, ``-1`` means all processors. The fitted model does not depend on it. Worth
        it on large data on an otherwise idle machine; on a busy one the threads compete and
        can be slower (see the benchmarks page).

    Attributes
    ----------
    kernel_ : kernel instance
        The kernel with the learned hyperparameters.
    noise_variance_ : float
        The learned (or fixed) noise variance, in the units of the fitted targets.
    basis_indices_ : ndarray of shape (n_basis,)
        Training-set indices of the basis vectors.
    basis_vectors_ : ndarray of shape (n_basis, n_features)
        The basis vectors.
    alpha_ : ndarray of shape (n_basis,)
        Weights of the predictive mean on the basis (in the units of ``y``).
    log_marginal_likelihood_value_ : float
        Approximate log marginal likelihood (GPML eq. (8.17)) of the fitted model.
    n_iter_ : int
        Number of selection / hyperparameter alternations run.
    cost_curve_ : ndarray
        Cost (2) after every forward step and every exchange half-step of the selection that
        produced the final basis (in its hyperparameters).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, if ``X`` has string column names.

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessRegressor : the full GP, O(n^3).

    References
    ----------
    P. Sun and X. Yao, "An exchanging-based refinement to sparse Gaussian process regression",
    2006. S. S. Keerthi and W. Chu, "A matching pursuit approach to sparse Gaussian process
    regression", NIPS 18, 2005. M. Seeger, C. K. I. Williams and N. D. Lawrence, "Fast forward
    selection to speed up sparse Gaussian process regression", AISTATS 2003. A. J. Smola and
    P. Bartlett, "Sparse greedy Gaussian process regression", NIPS 13, 2001. C. E. Rasmussen and
    C. K. I. Williams, *Gaussian Processes for Machine Learning*, 2006, ch. 8.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse import SparseGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (200, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.randn(200)
    >>> model = SparseGPRegressor(max_basis=15, random_state=0).fit(X, y)
    >>> model.basis_vectors_.shape
    (15, 1)
    >>> bool(model.score(X, y) > 0.95)
    True
    """

    _parameter_constraints: dict = {
        "kernel": [None, Kernel],
        "noise_variance": [Interval(numbers.Real, 0, None, closed="neither")],
        "noise_variance_bounds": [StrOptions({"fixed"}), "array-like"],
        "max_basis": [Interval(numbers.Integral, 1, None, closed="left")],
        "selection": [
            StrOptions({"random", "exact", "matching_pursuit", "info_gain"}),
            BaseSelector,
        ],
        "working_set_size": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "n_exchange": [Interval(numbers.Integral, 0, None, closed="left")],
        "optimizer": [StrOptions({"fmin_l_bfgs_b"}), callable, None],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "normalize_y": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [numbers.Integral, None],
    }

    def __init__(
        self,
        kernel=None,
        *,
        noise_variance=1e-2,
        noise_variance_bounds=(1e-6, 1e2),
        max_basis=100,
        selection="matching_pursuit",
        working_set_size=None,
        n_exchange=0,
        optimizer="fmin_l_bfgs_b",
        max_iter=10,
        tol=1e-4,
        normalize_y=False,
        random_state=None,
        verbose=0,
        n_jobs=None,
    ):
        self.kernel = kernel
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.max_basis = max_basis
        self.selection = selection
        self.working_set_size = working_set_size
        self.n_exchange = n_exchange
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.tol = tol
        self.normalize_y = normalize_y
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Select the basis and learn the hyperparameters.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs. A ``float32`` array is used as it is (no ``float64`` copy): the
            model is still computed in ``float64`` from its values, but the kernel columns
            that only score the candidates of ``selection="matching_pursuit"`` are computed
            in ``float32``, several times faster at large ``n``. Their relative error
            (about ``1e-7 |x - x_mean|^2 / length_scale^2``) can change which candidate wins
            when two scores nearly tie, so the basis can differ from the one of
            ``X.astype(np.float64)``; the model on a given basis does not.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : SparseGPRegressor
            The fitted model.
        """
        with threadpool_limits(limits=_FIT_BLAS_THREADS, user_api="blas"):
            return self._fit(X, y)

    def _fit(self, X, y):
        # float32 stays float32 (the state scores in float32 and keeps a float64 model).
        X, y = validate_data(self, X, y, y_numeric=True, dtype=[np.float64, np.float32])
        y = np.asarray(y, dtype=np.float64)
        n = X.shape[0]
        self.kernel_ = C(1.0) * RBF(1.0) if self.kernel is None else clone(self.kernel)
        rng = check_random_state(self.random_state)
        # Threads of the state's row passes (joblib's reading of n_jobs: None -> 1, -1 -> all).
        self._n_threads = effective_n_jobs(self.n_jobs)
        noise_bounds = check_noise_bounds(self.noise_variance_bounds)
        if self.normalize_y:
            self._y_train_mean = float(np.mean(y))
            std = float(np.std(y))
            self._y_train_std = std if std > 0 else 1.0
        else:
            self._y_train_mean, self._y_train_std = 0.0, 1.0
        y = (y - self._y_train_mean) / self._y_train_std
        p = self.max_basis
        if p > n:
            warnings.warn(
                f"max_basis={p} exceeds the number of samples {n}; using max_basis={n}.",
                UserWarning,
            )
            p = n
        self._selector = make_selector(self.selection, self.working_set_size)

        kernel, s2 = self.kernel_, float(self.noise_variance)
        learn = self.optimizer is not None and (kernel.n_dims > 0 or noise_bounds is not None)
        if learn:
            # Initialisation as in the exchange paper's experiments: hyperparameters of the
            # full GP on a random subset (eq. (8.17) with every subset point in the basis is
            # the exact GP likelihood), so the first selection does not use a poor kernel.
            subset = rng.choice(n, size=min(n, max(p, _INIT_SUBSET)), replace=False)
            kernel, s2, _ = self._learn_hyperparameters(
                kernel, s2, X[subset], y[subset], X[subset]
            )
        best = None
        previous = None
        self.n_iter_ = 0
        for it in range(self.max_iter if learn else 1):
            state, curve = self._select_basis(kernel, X, y, s2, p, rng)
            if learn:
                # Warm start; the noise no lower than the mean squared residual of the MAP fit
                # (a subset-GP start can put it far below what the sparse model can reach).
                if noise_bounds is not None:
                    s2 = max(s2, float(np.mean(state.residual**2)))
                kernel, s2, lml = self._learn_hyperparameters(kernel, s2, X, y, X[state.basis])
            else:
                lml = state.log_marginal_likelihood()
            self.n_iter_ = it + 1
            if self.verbose:
                print(
                    f"[SparseGPRegressor] iteration {it + 1}: lml = {lml:.6g}, "
                    f"noise_variance = {s2:.4g}, kernel = {kernel}"
                )
            if best is None or lml > best[0]:
                # With fixed hyperparameters the state is final; otherwise only its basis.
                best = (lml, state if not learn else state.basis, kernel, s2, curve)
            if previous is not None and lml - previous < self.tol * max(1.0, abs(previous)):
                break
            previous = lml

        _, state, kernel, s2, curve = best
        self.kernel_ = kernel
        self.noise_variance_ = s2
        if learn:
            self.kernel_._check_bounds_params()
            warn_at_noise_bound(self.noise_variance_, noise_bounds)
            # The final state: the best basis with the hyperparameters learned on it.
            basis = state
            state = RegressionState(
                kernel, X, y, s2, len(basis), jitter=_jitter(kernel, X), n_threads=self._n_threads
            )
            for j in basis:
                state.append(j)
        self.basis_indices_ = state.basis
        self.basis_vectors_ = np.asarray(X[self.basis_indices_], dtype=np.float64)
        self.alpha_ = state.alpha * self._y_train_std
        self._predictor = RegressionPredictor(
            self.kernel_,
            self.basis_vectors_,
            self.alpha_,
            np.ascontiguousarray(state.L),
            np.ascontiguousarray(state.R),
            s2,
            self._y_train_mean,
            self._y_train_std,
        )
        self.log_marginal_likelihood_value_ = float(state.log_marginal_likelihood())
        self.cost_curve_ = np.asarray(curve)
        # Only log_marginal_likelihood(theta) needs the training data (eq. (8.17) sums over
        # all of it); prediction uses the basis, alpha_ and the two p x p factors. The data are
        # kept in memory but not pickled (see __getstate__).
        self._X_train, self._y_train = X, y
        self._jitter_value = state.jitter
        return self

    def __getstate__(self):
        """Pickle without the training data: a fitted model stores what prediction needs.

        ``log_marginal_likelihood(theta)`` on an unpickled model raises and asks for a refit.
        """
        state = super().__getstate__()
        state.pop("_X_train", None)
        state.pop("_y_train", None)
        return state

    def _select_basis(self, kernel, X, y, s2, p, rng):
        """Forward selection to ``p`` basis vectors, then ``n_exchange`` exchange steps."""
        state = RegressionState(
            kernel, X, y, s2, p, jitter=_jitter(kernel, X), n_threads=self._n_threads
        )
        curve = []
        return select_and_exchange(state, self._selector, p, self.n_exchange, rng, curve)

    # ------------------------------------------------------------------ hyperparameters
    def _learn_hyperparameters(self, kernel, s2, X, y, X_basis):
        """Maximise GPML eq. (8.17) on the basis, warm-started at the current values."""
        return learn_hyperparameters(
            kernel,
            s2,
            X,
            y,
            X_basis,
            noise_bounds=check_noise_bounds(self.noise_variance_bounds),
            optimizer=self.optimizer,
            jitter=_jitter(kernel, X),
        )

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """Approximate log marginal likelihood (GPML eq. (8.17)) on the fitted basis.

        Parameters
        ----------
        theta : array-like of shape (kernel_.n_dims + 1,), default=None
            ``kernel_.theta`` (log hyperparameters) followed by ``log(noise_variance)``.
            ``None`` returns the stored ``log_marginal_likelihood_value_``.
        eval_gradient : bool, default=False
            Also return the gradient with respect to ``theta`` (same layout).
        clone_kernel : bool, default=True
            Kept for scikit-learn compatibility; the fitted kernel is never modified.

        Returns
        -------
        log_likelihood : float
            The approximate log marginal likelihood.
        log_likelihood_gradient : ndarray of shape (kernel_.n_dims + 1,)
            Only if ``eval_gradient`` is True.

        Raises
        ------
        ValueError
            If ``theta`` is given on a model restored from a pickle: the training data are
            not pickled, so refit the model first.
        """
        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.kernel_.n_dims + 1,):
            raise ValueError(
                f"`theta` must have length kernel_.n_dims + 1 = {self.kernel_.n_dims + 1} "
                f"(kernel theta, then log noise variance), got shape {theta.shape}."
            )
        if getattr(self, "_X_train", None) is None:
            raise ValueError(
                "log_marginal_likelihood(theta) needs the training data, which a pickled "
                "model does not keep (it stores only what prediction needs). Refit the model "
                "on (X, y) to evaluate the likelihood at another theta."
            )
        kernel = self.kernel_.clone_with_theta(theta[:-1])
        return dtc_log_marginal_likelihood(
            kernel,
            self._X_train,
            self._y_train,
            self.basis_vectors_,
            float(np.exp(theta[-1])),
            eval_gradient=eval_gradient,
            # The fitted model's jitter, constant in theta, so the gradient is the value's.
            jitter=self._jitter_value,
        )

    # ------------------------------------------------------------------ predict
    def predict(self, X, return_std=False, return_cov=False):
        """Predictive mean and, optionally, the latent standard deviation or covariance.

        The variance is the projected-process one (GPML eq. (8.27)),
        ``k(x, x) - k_u(x)^T K_uu^-1 k_u(x) + s2 k_u(x)^T (s2 K_uu + K_uf K_fu)^-1 k_u(x)``,
        computed as ``k(x, x) - |L^-1 k_u|^2 + s2 |R^-1 L^-1 k_u|^2``: O(p^2) per row. It is
        the variance of the latent function, without ``noise_variance_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.
        return_std : bool, default=False
            Also return the latent standard deviation.
        return_cov : bool, default=False
            Also return the latent covariance between the query points.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
            Predictive mean ``k_u(x)^T alpha_`` (plus the target mean with ``normalize_y``).
        y_std : ndarray of shape (n_samples,)
            Latent standard deviation (add ``noise_variance_`` to the variance for the noisy
            targets). Only if ``return_std``.
        y_cov : ndarray of shape (n_samples, n_samples)
            Latent covariance. Only if ``return_cov``.

        Raises
        ------
        RuntimeError
            If both ``return_std`` and ``return_cov`` are requested (as scikit-learn's
            ``GaussianProcessRegressor``).
        """
        if return_std and return_cov:
            raise RuntimeError("At most one of return_std or return_cov can be requested.")
        # A few finite float rows skip validate_data's fixed cost (single-row callers); the
        # array is the one validate_data would return, and every other input goes through it.
        predictor = getattr(self, "_predictor", None)
        X_plain = None if predictor is None else plain_float_rows(self, X)
        if X_plain is None:
            check_is_fitted(self)
            X_plain = validate_data(self, X, reset=False, dtype=np.float64)
            predictor = self._predictor
        return predictor.predict(X_plain, return_std=return_std, return_cov=return_cov)
