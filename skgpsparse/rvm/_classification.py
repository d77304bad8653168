"""RelevanceVectorClassifier: probit RVM with mean-field E-steps trained by Subspace EM."""

import numbers

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._fitted_state import fit_method, reset_fitted_state
from .._labels import encode_labels
from ..kernels._structured import refuse_structured
from ..likelihoods import Probit
from ..rows._blocks import block_rows, map_row_blocks
from ._basis_functions import basis_rows, candidate_basis
from ._fit_memory import fit_memory
from ._mean_field import MeanFieldEM
from ._regression import STRUCTURED_RVM, default_kernel
from ._subspace_em import SSEM_PARAMETER_CONSTRAINTS, run_estimator_em

__all__ = ["RelevanceVectorClassifier"]

class _BinaryRVC:
    """One binary probit RVM (labels +-1); holds what prediction needs."""

    def __init__(
        self,
        kernel,
        cavity_variance,
        probit_variance,
        method,
        alpha_max,
        bias,
        n_basis_functions,
        max_iter,
        tol,
        verbose,
    ):
        self.kernel, self.cavity_variance = kernel, cavity_variance
        self.probit_variance, self.method, self.alpha_max = probit_variance, method, alpha_max
        self.bias, self.n_basis_functions = bias, n_basis_functions
        self.max_iter, self.tol, self.verbose = max_iter, tol, verbose

    def fit(self, X, t, rng):
        n = X.shape[0]
        candidates = candidate_basis(X, self.n_basis_functions, self.bias, rng)
        model = MeanFieldEM(
            self.kernel,
            X,
            t,
            candidates.centers,
            candidates.bias_mask,
            self.cavity_variance,
            self.probit_variance,
            self.alpha_max,
        )
        hist = run_estimator_em(model, candidates, self, rng)
        self.log_marginal_likelihood_value_ = model.e_step()  # final posterior for final alpha
        idx = model.design.index.copy()
        is_bias = idx == n
        self._centers, self._bias_mask = candidates.centers[idx], is_bias
        self._d = model.design.alpha**-0.5
        self._L, self._mu = model.L.copy(), model.mu.copy()
        self.relevance_indices_ = idx[~is_bias]
        self.coef_ = self._mu[~is_bias]
        self.intercept_ = float(self._mu[is_bias].sum())
        self.alpha_ = model.design.alpha[~is_bias].copy()
        self.alpha_bias_ = float(model.design.alpha[is_bias][0]) if is_bias.any() else np.inf
        self.log_marginal_likelihood_curve_ = np.asarray(hist["log_likelihood"])
        self.n_relevance_curve_ = np.asarray(hist["n_active"])
        self.cpu_time_curve_ = np.asarray(hist["cpu_time"])
        self.n_iter_ = hist["n_iter"]
        return self

    def latent(self, X):
        """Mean ``y* = Phi(x) mu`` and variance ``Phi(x) Sigma Phi(x)^T`` of the latent."""
        Phi_T = basis_rows(self.kernel, X, self._centers, self._bias_mask)
        mean = Phi_T.T @ self._mu
        if len(self._d) == 0:
            return mean, np.zeros(X.shape[0])
        V = solve_triangular(self._L, self._d[:, None] * Phi_T, lower=True, check_finite=False)
        return mean, np.einsum("ij,ij->j", V, V)

    def proba(self, X):
        """Eq. (15): ``p(t = +1 | x) = Phi(y* / sqrt(s2 + Phi Sigma Phi^T))``."""
        return Probit(self.probit_variance).predictive_probability(1.0, *self.latent(X))


class RelevanceVectorClassifier(ClassifierMixin, BaseEstimator):
    """Relevance vector machine classification (probit, mean field) trained by Subspace EM.

    The latent function is the RVM's extended linear model ``y(x) = sum_j w_j phi_j(x)`` with
    one basis function ``phi_j(x) = k(x, x_j)`` per training input (plus a constant one if
    ``bias``) and the ARD prior ``w_j ~ N(0, 1 / alpha_j)``; labels follow the probit likelihood
    ``p(t | y) = Phi(t y / sigma)`` (SSEM paper eq. 14). The E-step is the mean field approach of
    §4 (eqs. 16-19), solved by Newton-Raphson on the weights, with the cavity variance chosen by
    ``cavity_variance``; the M-step is MacKay's update (eq. 12), and a basis function whose
    ``alpha`` reaches ``alpha_max`` is pruned. ``method="ssem"`` grows the model one basis
    function per EM step (§3, Figure 1), then runs batch EM on the active set.

    Multiclass problems are fitted one-vs-rest, one binary RVM per class; probabilities are
    normalised across classes.

    Cost against the number of rows: the sweep makes one EM step per candidate basis
    function, and each E-step runs Newton-Raphson (inside the adaptive TAP iterations) at
    O(n M^2) per iteration, so with ``m`` candidates a fit costs about O(n m M^2) times the
    iterations, and more as more basis functions stay active with more data. With every row
    a candidate (the default) that is about O(n^2 M^2): practical up to a few thousand
    rows. ``n_basis_functions`` of about a thousand stretches that to about ten thousand
    rows, still growing faster than ``n``; for tens of thousands of rows and more use
    :class:`~skgpsparse.SparseGPClassifier`. Each class of a multiclass problem costs one
    such fit. The measured curves are on the benchmarks page of the documentation ("Where
    the slow fits stop").

    Parameters
    ----------
    kernel : Kernel, default=None
        Shape of the basis functions; ``None`` is ``RBF(sqrt(10))``, fixed (not learned).
    method : {"ssem", "batch_em"}, default="ssem"
        Subspace EM or standard batch EM from all basis functions.
    cavity_variance : {"tap", "naive", "laplace"}, default="tap"
        ``V^c`` of the mean field equations: adaptive TAP, naive mean field
        (``[Phi A^-1 Phi^T]_ii``) or ``0`` (the Laplace approximation, MAP weights).
    probit_variance : float, default=1.0
        ``sigma^2``, the 'input' noise of the probit likelihood (eq. 14).
    alpha_max : float, default=1e9
        ``L``: basis functions whose ``alpha`` reaches it are pruned.
    bias : bool, default=True
        Add a constant basis function, visited first by SSEM.
    n_basis_functions : int, default=None
        Use only this many training inputs, drawn at random, as candidate basis functions
        (the SSEM paper uses 800 on MNIST); ``None`` uses all. The sweep's cost is about
        proportional to the number of candidates: set it for more than a few thousand rows,
        at the risk of missing a useful centre among the rows left out.
    max_iter : int, default=100
        Maximum number of batch EM steps.
    tol : float, default=1e-4
        Stop when 5 consecutive batch EM steps each change the approximate log evidence by
        less than ``tol`` times its magnitude.
    random_state : int, RandomState instance or None, default=None
        Order in which SSEM visits basis functions; draw of ``n_basis_functions``.
    verbose : int, default=0
        Print progress.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    kernel_ : Kernel
        The kernel used.
    estimators_ : list of _BinaryRVC
        One binary model (class ``classes_[1]`` against ``classes_[0]``) for two classes, one
        per class (that class against the rest) otherwise. Each has ``relevance_indices_``,
        ``coef_``, ``intercept_``, ``alpha_``, ``alpha_bias_``,
        ``log_marginal_likelihood_value_``, ``log_marginal_likelihood_curve_``,
        ``n_relevance_curve_``, ``cpu_time_curve_`` and ``n_iter_``.
    relevance_indices_ : ndarray of shape (n_relevance,)
        Training rows used as basis functions by any of the binary models (sorted).
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
        Those training inputs.
    alpha_ : ndarray of shape (n_relevance_binary,) or list of ndarray
        Prior precisions of the relevance vectors' weights: an array for two classes, the list
        of the one-vs-rest models' arrays otherwise.
    n_iter_ : int
        Largest number of batch EM steps of the binary models.
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    RelevanceVectorRegressor : the regression model.

    References
    ----------
    J. Quiñonero-Candela and O. Winther, "Incremental Gaussian processes", NIPS 15, 2003.
    M. Opper and O. Winther, "Gaussian processes for classification: mean field algorithms",
    Neural Computation 12, 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse import RelevanceVectorClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(60, 2); y = np.where(X[:, 0] + X[:, 1] > 0, "a", "b")
    >>> clf = RelevanceVectorClassifier(random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    >>> clf.predict_proba(X[:1]).shape
    (1, 2)
    """

    _parameter_constraints: dict = {
        **SSEM_PARAMETER_CONSTRAINTS,
        "cavity_variance": [StrOptions({"tap", "naive", "laplace"})],
        "probit_variance": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        kernel=None,
        *,
        method="ssem",
        cavity_variance="tap",
        probit_variance=1.0,
        alpha_max=1e9,
        bias=True,
        n_basis_functions=None,
        max_iter=100,
        tol=1e-4,
        random_state=None,
        verbose=0,
    ):
        self.kernel = kernel
        self.method = method
        self.cavity_variance = cavity_variance
        self.probit_variance = probit_variance
        self.alpha_max = alpha_max
        self.bias = bias
        self.n_basis_functions = n_basis_functions
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    @fit_method()
    def fit(self, X, y):
        """Fit one binary RVM (two classes) or one per class (one-vs-rest).

        A ``fit`` that raises (invalid input, a numerical failure) leaves the estimator as it
        was: the previous model, intact and usable, or unfitted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels.

        There is no ``sample_weight``: the mean-field E-step and the subspace EM's add test
        treat every row as one likelihood term (repeat the rows to weight them).

        Returns
        -------
        self : RelevanceVectorClassifier
            The fitted estimator.
        """
        reset_fitted_state(self)
        refuse_structured(self, "fit", STRUCTURED_RVM)
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, codes = encode_labels(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"RelevanceVectorClassifier needs samples of at least 2 classes in the data; "
                f"got 1 class: {self.classes_[0]!r}."
            )
        rng = check_random_state(self.random_state)
        self.kernel_ = default_kernel() if self.kernel is None else clone(self.kernel)
        targets = [1] if len(self.classes_) == 2 else range(len(self.classes_))
        # before the design's allocation (all candidates at once in batch EM); the binary
        # models are fitted one after the other
        n, n_candidates = X.shape[0], min(self.n_basis_functions or X.shape[0], X.shape[0])
        fit_memory(
            "RelevanceVectorClassifier", n, X.shape[1], n_candidates + self.bias, self.method,
            self.n_basis_functions,
        ).check()
        self.estimators_ = []
        for k in targets:
            t = np.where(codes == k, 1.0, -1.0)
            est = _BinaryRVC(
                self.kernel_,
                self.cavity_variance,
                self.probit_variance,
                self.method,
                self.alpha_max,
                self.bias,
                self.n_basis_functions,
                self.max_iter,
                self.tol,
                self.verbose,
            )
            self.estimators_.append(est.fit(X, t, rng))
        idx = np.unique(np.concatenate([e.relevance_indices_ for e in self.estimators_]))
        self.relevance_indices_ = idx
        self.relevance_vectors_ = X[idx]
        alphas = [e.alpha_ for e in self.estimators_]
        self.alpha_ = alphas[0] if len(alphas) == 1 else alphas
        self.n_iter_ = max(e.n_iter_ for e in self.estimators_)
        return self

    def predict_proba(self, X):
        """Class probabilities, eq. (15) per binary model (one-vs-rest normalised).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities in ``[0, 1]`` summing to 1 over classes (ordered as ``classes_``).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return map_row_blocks(self._proba_block, X, self._block_rows())

    def _block_rows(self):
        """Rows per prediction block: the largest binary model's design block ~32 MB."""
        return block_rows(max(len(e._d) for e in self.estimators_))

    def _proba_block(self, X):
        """:meth:`predict_proba` on the rows of one block (validated)."""
        if len(self.classes_) == 2:
            p = self.estimators_[0].proba(X)
            return np.column_stack([1.0 - p, p])
        P = np.column_stack([e.proba(X) for e in self.estimators_])
        total = P.sum(axis=1, keepdims=True)
        # if every binary model says "rest" with probability 1, fall back to uniform
        P = np.where(total > 0, P / np.where(total > 0, total, 1.0), 1.0 / P.shape[1])
        return P

    def predict(self, X):
        """Most probable class: the argmax of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The query inputs of :meth:`predict_proba`.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return map_row_blocks(
            lambda X_block: self.classes_[np.argmax(self._proba_block(X_block), axis=1)],
            X,
            self._block_rows(),
        )
