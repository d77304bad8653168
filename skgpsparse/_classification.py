"""SparseGPClassifier: sparse ADF Gaussian process classification with NLP-based design."""

import numbers
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.optimize import minimize
from scipy.special import log_ndtr, logsumexp, ndtr, ndtri
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Kernel
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._adf import ADFState
from ._selection import BaseSelector, GreedySelector, RandomSelector, check_working_set_size
from .kernels import iter_kernel

__all__ = ["SparseGPClassifier"]

# L-BFGS iterations per outer iteration: the validation paper does "one or two line searches"
# with the basis fixed, then re-selects the basis (§2.5).
_OPTIMIZER_MAXITER = 15
# The outer loop stops when the NLP has not improved by `tol` for this many iterations (§2.5).
_PATIENCE = 5
# Bounds of the bias b (probit units) for the optimiser.
_BIAS_BOUNDS = (-1e3, 1e3)
# Fitted attributes of each binary model, listed per class with more than two classes.
_PER_MODEL_ATTRIBUTES = (
    "basis_indices_",
    "basis_vectors_",
    "site_precision_",
    "site_mean_",
    "loss_curve_",
)


def _make_selector(selection, working_set_size):
    """Map the `selection` parameter to a selector (a user's selector is cloned, used as is)."""
    if isinstance(selection, BaseSelector):
        return clone(selection)
    if selection == "random":
        return RandomSelector()
    if selection in ("entropy", "info_gain"):
        # O(n) per step over all non-basis points (IVM; Seeger et al.)
        return GreedySelector(selection, check_working_set_size(working_set_size, None))
    if selection == "nlp":
        # validation paper §2.5: uniform working set of kappa = 59, NLP eq. (4)
        return GreedySelector("nlp", check_working_set_size(working_set_size, 59))
    # additive-model paper eqs. (10)-(11): adaptive sampling, kappa = 2, NLP_a eq. (5)
    return GreedySelector(
        "nlp_all", check_working_set_size(working_set_size, 2), sampling="weighted"
    )


def _initial_bias(kernel, X, y):
    """Bias with Phi(b / sqrt(1 + k(x, x))) = fraction of positives: the prior's class balance."""
    frac = np.clip(np.mean(y > 0), 0.01, 0.99)
    return float(np.sqrt(1.0 + np.mean(kernel.diag(X))) * ndtri(frac))


def _lbfgs(obj_func, initial_theta, bounds):
    """Default optimiser: a few L-BFGS-B iterations with the analytic gradient."""
    res = minimize(
        obj_func,
        initial_theta,
        method="L-BFGS-B",
        jac=True,
        bounds=bounds,
        options={"maxiter": _OPTIMIZER_MAXITER},
    )
    return res.x, res.fun


class _BinarySparseGPClassifier:
    """Binary model, labels in {-1, +1}: the two-loop design of the validation paper §2.5."""

    def __init__(self, kernel, max_basis, selector, optimizer, max_iter, tol, verbose):
        self.kernel = kernel
        self.max_basis = max_basis
        self.selector = selector
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    def _select(self, kernel, X, y, bias, rng):
        """Inner loop: forward selection from an empty basis (Algorithm 1, steps 2-5)."""
        state = ADFState(kernel, X, y, bias, self.max_basis)
        while state.size < self.max_basis:
            if not state.candidates().size:
                warnings.warn(
                    f"Basis selection stopped at {state.size} basis vectors (max_basis="
                    f"{self.max_basis}): every remaining point has zero posterior variance "
                    "(duplicates of basis points or a degenerate kernel).",
                    RuntimeWarning,
                    stacklevel=4,
                )
                break
            state.add(self.selector.select(state, rng))
        return state

    def fit(self, X, y, rng):
        kernel = clone(self.kernel)
        bias = _initial_bias(kernel, X, y)
        self.loss_curve_ = []
        best = None
        since_best = 0
        for it in range(self.max_iter):
            tic = time.perf_counter()
            state = self._select(kernel, X, y, bias, rng)
            basis = state.basis_indices.copy()
            prec = state.site_precision[: state.size].copy()
            mean = state.site_mean[: state.size].copy()
            if self.optimizer is None:
                loss = state.nlp()
            else:
                # Algorithm 1, step 6: theta and b by NLP eq. (4), basis and sites fixed
                kernel, bias, loss = self._optimize(kernel, bias, X, y, basis, prec, mean)
            self.loss_curve_.append(float(loss))
            if best is None or loss < best[0]:
                since_best = 0 if best is None or loss < best[0] - self.tol else since_best + 1
                best = (loss, kernel, bias, basis, prec, mean)
            else:
                since_best += 1
            if self.verbose:
                print(
                    f"[SparseGPClassifier] iter {it + 1:3d}  NLP {loss:.6f}  basis {state.size}"
                    f"  b {bias:+.4f}  kernel {kernel}  ({time.perf_counter() - tic:.2f} s)"
                )
            if self.optimizer is None or since_best >= _PATIENCE:
                break
        self.n_iter_ = it + 1
        # additive-model paper §5: keep the best model by training NLP
        _, self.kernel_, self.bias_, self.basis_indices_, prec, mean = best
        self.site_precision_, self.site_mean_ = prec, mean
        self.basis_vectors_ = X[self.basis_indices_]
        self._set_predictive_factors()
        return self

    def _optimize(self, kernel, bias, X, y, basis, prec, mean):
        from ._classification_loss import nlp_loss

        def obj_func(theta, eval_gradient=True):
            k = kernel.clone_with_theta(theta[:-1])
            out = nlp_loss(k, X, y, theta[-1], basis, mean, prec, eval_gradient=eval_gradient)
            value = out[0] if eval_gradient else out
            if not np.isfinite(value):  # keep the line search away, never return NaN
                value = np.finfo(float).max / 1e10
                out = (value, np.zeros(theta.shape)) if eval_gradient else value
            return out

        theta0 = np.append(kernel.theta, bias)
        bounds = np.vstack([kernel.bounds.reshape(-1, 2), _BIAS_BOUNDS])
        if self.optimizer == "fmin_l_bfgs_b":
            theta, loss = _lbfgs(obj_func, theta0, bounds)
        else:
            theta, loss = self.optimizer(obj_func, theta0, bounds)
        theta = np.asarray(theta, dtype=float)
        loss = float(loss)
        if not np.isfinite(loss):  # a callable optimiser gone wrong: keep the start
            theta, loss = theta0, float(obj_func(theta0, eval_gradient=False))
        return kernel.clone_with_theta(theta[:-1]), float(theta[-1]), loss

    def _set_predictive_factors(self):
        """``f_* = k_*u w`` with ``w = S B^-1 S m_u`` and ``s2_* = k_** - |L^-1 S k_u*|^2``.

        ``B = I + S K_uu S = L L^T`` (``S = Pi_u^1/2``) under the final kernel; ``B >= I``.
        """
        s = np.sqrt(self.site_precision_)
        K_uu = self.kernel_(self.basis_vectors_)
        B = np.eye(s.size) + s[:, None] * K_uu * s[None, :]
        self._L = cholesky(B, lower=True)
        self._sqrt_pi = s
        self._w = s * cho_solve((self._L, True), s * self.site_mean_)

    def latent_mean_and_variance(self, X):
        """Mean of ``f_* + b`` and variance of ``f_*`` (validation paper eq. (2.7)), by blocks."""
        mean = np.empty(X.shape[0])
        var = self.kernel_.diag(X).astype(float)
        for rows, K in iter_kernel(self.kernel_, X, self.basis_vectors_):
            mean[rows] = K @ self._w + self.bias_
            V = solve_triangular(self._L, (K * self._sqrt_pi).T, lower=True)
            var[rows] -= np.einsum("ij,ij->j", V, V)
        np.maximum(var, 0.0, out=var)
        return mean, var

    def moderated_margin(self, X):
        """``(f_* + b) / sqrt(1 + s2_*)``, so that ``P(y = +1 | x_*) = Phi(margin)`` (eq. 2.7)."""
        mean, var = self.latent_mean_and_variance(X)
        return mean / np.sqrt(1.0 + var)


def _normalised_log_proba(e):
    """Log of the one-vs-rest probabilities ``Phi(e_k)`` normalised over the classes."""
    log_p = log_ndtr(e)
    return log_p - logsumexp(log_p, axis=1, keepdims=True)


def _fit_binary(params, X, y, seed):
    return _BinarySparseGPClassifier(**params).fit(X, y, check_random_state(seed))


class SparseGPClassifier(ClassifierMixin, BaseEstimator):
    """Sparse Gaussian process classifier: ADF with probit noise and NLP-based design.

    A GP classifier (probit likelihood ``p(y | f) = Phi(y (f + b))`` with a learned bias ``b``)
    whose approximate posterior is built by assumed density filtering on a small set of at most
    ``max_basis`` training points, chosen by greedy forward selection (validation paper §2.3-2.5;
    additive-model paper §2-3). Hyperparameters (kernel ``theta`` and ``b``) minimise the
    validation NLP over the points outside the basis (eq. (4)), alternating with re-selection
    of the basis (two-loop design); the best model by training NLP is kept. Fitting costs
    O(n max_basis^2) time and O(n max_basis) memory; predicting costs O(max_basis) per row for
    the mean and O(max_basis^2) for the variance. More than two classes are handled one vs rest,
    each binary model with its own hyperparameters.

    Parameters
    ----------
    kernel : kernel instance, default=None
        Prior covariance; ``None`` means ``ConstantKernel(1.0) * RBF(1.0)``. Its hyperparameters
        are the optimiser's starting point.
    max_basis : int, default=100
        Largest number of basis vectors (``d_max``). Clipped to ``n_samples - 1`` with a
        warning, so that eq. (4) keeps at least one held-out point.
    selection : {"adaptive", "nlp", "entropy", "info_gain", "random"} or BaseSelector, \
            default="adaptive"
        How the next basis vector is chosen:

        - ``"adaptive"``: working set of ``working_set_size`` (default 2) drawn with
          probabilities ``1 - Phi(y_j (f_j + b) / sqrt(1 + A_jj))`` (additive-model paper
          eq. (11)), best by NLP_a over all points (eq. (5), (10)).
        - ``"nlp"``: uniform working set (default 59), best by NLP eq. (4) (validation paper).
        - ``"entropy"``: largest posterior entropy reduction (IVM, Lawrence et al. 2003).
        - ``"info_gain"``: largest information gain (Seeger et al.).
        - ``"random"``: uniform draw.
        - a :class:`~skgpsparse._selection.BaseSelector` instance (cloned); the criteria its
          state accepts are ``"entropy"``, ``"info_gain"``, ``"nlp"`` and ``"nlp_all"``.
    working_set_size : int, default=None
        Candidates scored per step (``kappa``); ``None`` means the default of ``selection``
        (all remaining points for "entropy" and "info_gain"). Ignored by "random".
    site_update : {"moment_matching"}, default="moment_matching"
        Site parameters by ADF moment matching (eq. (2)). ``"optimize"`` is reserved for NLP_a
        site optimisation and not supported yet.
    n_exchange : int, default=0
        Backward-deletion exchange steps; only ``0`` is supported for now.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        Minimiser of the NLP over ``[kernel.theta..., b]``, scikit-learn's contract: a callable
        ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)`` where
        ``obj_func(theta, eval_gradient=True)`` returns the NLP and its gradient. The default
        runs a few L-BFGS-B iterations per outer iteration. ``None`` keeps the kernel's
        hyperparameters and the initial bias, ``b = sqrt(1 + mean k(x, x)) Phi^-1(fraction of
        positives)`` (so that the prior predicts the class balance), and fits once.
    hyperparameter_objective : {"nlp"}, default="nlp"
        Objective of the hyperparameters: NLP eq. (4). ``"evidence"`` is not supported yet.
    max_iter : int, default=20
        Largest number of outer iterations (basis selection + hyperparameter step).
    tol : float, default=1e-4
        The outer loop stops when the NLP has not improved by ``tol`` for 5 iterations.
    n_jobs : int, default=None
        Parallel jobs for the one-vs-rest models (joblib).
    random_state : int, RandomState instance or None, default=None
        Randomness of the working sets and random selection.
    verbose : int, default=0
        Print one line per outer iteration (NLP, basis size, bias, kernel, time).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    kernel_ : kernel instance
        Fitted kernel (binary problems).
    kernels_ : list of kernel instances
        Fitted kernel of each one-vs-rest model (more than two classes).
    bias_ : float or ndarray of shape (n_classes,)
        Fitted bias ``b`` (per class with more than two classes).
    basis_indices_, basis_vectors_, site_precision_, site_mean_ : ndarray or list of ndarray
        Basis set (indices into the training set and inputs) and its site parameters; a list
        with one entry per class with more than two classes.
    n_iter_ : int or ndarray of shape (n_classes,)
        Outer iterations run.
    loss_curve_ : list of float, or list of such lists
        Training NLP (eq. (4)) after each outer iteration.
    estimators_ : list
        The binary one-vs-rest models (more than two classes).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, if ``X`` has string feature names.

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessClassifier : the full (Laplace) GP classifier.

    References
    ----------
    S. Shevade and S. Sundararajan, Validation-based sparse Gaussian process classifier design,
    Neural Computation 21(7), 2009. S. Sundararajan and S. Shevade, An additive model view to
    sparse Gaussian process classifier design.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from skgpsparse._classification import SparseGPClassifier
    >>> X, y = make_moons(n_samples=100, noise=0.1, random_state=0)
    >>> clf = SparseGPClassifier(max_basis=15, max_iter=3, random_state=0).fit(X, y)
    >>> len(clf.basis_indices_), bool(clf.score(X, y) > 0.9)
    (15, True)
    """

    _parameter_constraints: dict = {
        "kernel": [Kernel, None],
        "max_basis": [Interval(numbers.Integral, 1, None, closed="left")],
        "selection": [
            StrOptions({"adaptive", "nlp", "entropy", "info_gain", "random"}),
            BaseSelector,
        ],
        "working_set_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "site_update": [StrOptions({"moment_matching", "optimize"})],
        "n_exchange": [Interval(numbers.Integral, 0, None, closed="left")],
        "optimizer": [StrOptions({"fmin_l_bfgs_b"}), callable, None],
        "hyperparameter_objective": [StrOptions({"nlp", "evidence"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        max_basis=100,
        selection="adaptive",
        working_set_size=None,
        site_update="moment_matching",
        n_exchange=0,
        optimizer="fmin_l_bfgs_b",
        hyperparameter_objective="nlp",
        max_iter=20,
        tol=1e-4,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.max_basis = max_basis
        self.selection = selection
        self.working_set_size = working_set_size
        self.site_update = site_update
        self.n_exchange = n_exchange
        self.optimizer = optimizer
        self.hyperparameter_objective = hyperparameter_objective
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _check_supported(self):
        for name, value, supported in (
            ("site_update", self.site_update, "'moment_matching'"),
            ("hyperparameter_objective", self.hyperparameter_objective, "'nlp'"),
        ):
            if value != supported.strip("'"):
                raise ValueError(
                    f"`{name}`={value!r} is not supported yet; supported for now: {supported}."
                )
        if self.n_exchange != 0:
            raise ValueError(
                f"`n_exchange`={self.n_exchange!r} is not supported yet; supported for now: 0."
            )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the sparse GP classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels (any type scikit-learn accepts).

        Returns
        -------
        self : object
            The fitted classifier.
        """
        self._check_supported()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        encoder = LabelEncoder()
        y_enc = encoder.fit_transform(y)
        self.classes_ = encoder.classes_
        n_classes = self.classes_.size
        if n_classes == 1:
            raise ValueError(
                f"{type(self).__name__} requires 2 or more distinct classes; got 1 class "
                f"(only class {self.classes_[0]} is present)"
            )
        n = X.shape[0]
        max_basis = self.max_basis
        if max_basis >= n:
            max_basis = max(n - 1, 1)
            warnings.warn(
                f"`max_basis`={self.max_basis} is not smaller than n_samples={n}; using "
                f"max_basis={max_basis} so that the NLP keeps a held-out point.",
                UserWarning,
            )
        kernel = ConstantKernel(1.0) * RBF(1.0) if self.kernel is None else self.kernel
        params = {
            "kernel": kernel,
            "max_basis": max_basis,
            "selector": _make_selector(self.selection, self.working_set_size),
            "optimizer": self.optimizer,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "verbose": self.verbose,
        }
        rng = check_random_state(self.random_state)
        if n_classes == 2:
            self._binary = _fit_binary(params, X, np.where(y_enc == 1, 1.0, -1.0), rng)
            for name in ("kernel_", "bias_", "n_iter_", *_PER_MODEL_ATTRIBUTES):
                setattr(self, name, getattr(self._binary, name))
            return self
        seeds = rng.randint(np.iinfo(np.int32).max, size=n_classes)
        self.estimators_ = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_binary)(params, X, np.where(y_enc == k, 1.0, -1.0), seeds[k])
            for k in range(n_classes)
        )
        self.kernels_ = [est.kernel_ for est in self.estimators_]
        self.bias_ = np.array([est.bias_ for est in self.estimators_])
        self.n_iter_ = np.array([est.n_iter_ for est in self.estimators_])
        for name in _PER_MODEL_ATTRIBUTES:
            setattr(self, name, [getattr(est, name) for est in self.estimators_])
        return self

    def _models(self):
        check_is_fitted(self)
        return [self._binary] if self.classes_.size == 2 else self.estimators_

    def _validate_X(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at ``X``.

        The latent function here is the probit's argument ``g(x) = f(x) + b`` (bias included),
        so that ``P(y = classes_[1] | x) = Phi(mean / sqrt(1 + var))`` (validation paper
        eq. (2.7)). With more than two classes, one column per one-vs-rest model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        latent_mean : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``f_* + b`` with ``f_* = k_*u Pi^1/2 B^-1 Pi^1/2 m_u``.
        latent_var : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``s2_* = k_** - k_*u Pi^1/2 B^-1 Pi^1/2 k_u*``, clipped at 0.
        """
        X = self._validate_X(X)
        out = [model.latent_mean_and_variance(X) for model in self._models()]
        if len(out) == 1:
            return out[0]
        return np.column_stack([m for m, _ in out]), np.column_stack([v for _, v in out])

    def decision_function(self, X):
        """Moderated margin ``(f_* + b) / sqrt(1 + s2_*) = Phi^-1(P(y = +1 | x_*))``.

        Monotone in :meth:`predict_proba` (its probit inverse), so ranks and argmax agree; the
        unmoderated ``f_* + b`` is the mean of :meth:`latent_mean_and_variance`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        margin : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive means ``classes_[1]``; otherwise one column per
            one-vs-rest model.
        """
        X = self._validate_X(X)
        margins = [model.moderated_margin(X) for model in self._models()]
        return margins[0] if len(margins) == 1 else np.column_stack(margins)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space (``log_ndtr``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        e = self.decision_function(X)
        if e.ndim == 1:
            return np.column_stack([log_ndtr(-e), log_ndtr(e)])
        return _normalised_log_proba(e)

    def predict_proba(self, X):
        """Class probabilities, ``P(y = +1 | x_*) = Phi((f_* + b) / sqrt(1 + s2_*))`` (eq. 2.7).

        With more than two classes, the one-vs-rest probabilities normalised per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        e = self.decision_function(X)
        if e.ndim == 1:
            return np.column_stack([ndtr(-e), ndtr(e)])
        return np.exp(_normalised_log_proba(e))

    def predict(self, X):
        """Most probable class of each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        e = self.decision_function(X)
        index = (e > 0).astype(int) if e.ndim == 1 else np.argmax(e, axis=1)
        return self.classes_[index]
