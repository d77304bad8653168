"""SparseGPRegressor: sparse MAP / projected-process GP regression with exchange refinement."""

import numbers

from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils._param_validation import Interval, StrOptions

from .._fitted_state import fit_method
from .._learning_rows import LEARNING_ROWS_OPTIONS
from ..kernels._structured import fit_indexed, is_structured
from ..likelihoods import Likelihood
from ..rows import backend_for
from ..selection import BaseSelector
from ._basis_size import is_auto
from ._fitting import fit_in_memory
from ._likelihood_fit import LIKELIHOODS, fit_likelihood
from ._partitioned_fit import fit_partitioned
from ._predict import log_predictive_density, predict, predict_validated
from ._sampling import sample_y
from ._streaming import blas_thread_limit, partial_fit
from ._theta import log_marginal_likelihood
from ._vfe import OBJECTIVES
from ._warm import begin_fit

__all__ = ["SparseGPRegressor"]


# Private fitted state, cleared by fit with the public attributes (see _fitted_state).
_PRIVATE_STATE = (
    "_predictor", "_X_train", "_y_train", "_jitter_value", "_n_threads", "_selector",
    "_y_train_mean", "_y_train_std", "_progress", "_noise", "_stream", "_row_noise",
    "_noise_scale", "_fit_signature", "_warm", "_stream_weighted", "_latent",
    "_basis_cap", "_size_curve", "_stream_basis",
)

# BLAS threads during fit: the selection's products are memory-bound matrix-vector ones and
# the learning's are small, so a second BLAS thread made whole fits slower
# (benchmarks/scale/results/floor.md); the state spreads its row passes over n_jobs threads
# instead.
_FIT_BLAS_THREADS = 1


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
        Covariance function. ``None`` is ``ConstantKernel(1.0) * RBF(1.0)`` or the same
        with one length scale per feature (started at ``sqrt(d)`` times each feature's
        standard deviation): the starting full GP on a random subset of ``m`` rows is
        learned with both, and the per-feature kernel is kept only if its log marginal
        likelihood there exceeds the single length scale's by the BIC charge
        ``(d - 1) / 2 log m``; ``verbose=1`` prints the decision. A kernel passed is
        learned as given. Default per-feature length scales at 1e5 (switched off) do not warn. A
        ``WhiteKernel`` term of its top-level sum (``k + WhiteKernel()``) is noise, as in
        scikit-learn's GPR: its level is learned within its bounds, ``noise_variance`` is then
        a fixed addition (scikit-learn's ``alpha``) and ``noise_variance_bounds`` do not apply.
    likelihood : {"gaussian", "student_t", "poisson"} or Likelihood, default="gaussian"
        The noise model ``p(y | f(x) + b)``. ``"gaussian"``: the model described here.
        ``"student_t"``: heavy-tailed noise, robust to gross errors in the targets
        (:class:`~skgpsparse.likelihoods.StudentT`); ``"poisson"``: counts with the log link
        (:class:`~skgpsparse.likelihoods.Poisson`; an exposure ``e`` as
        ``PoissonRegressor``'s: the rate ``y / e`` with ``sample_weight=e``); or a
        likelihood instance. A non-Gaussian likelihood is fitted by EP over every row on the
        greedy basis, as the classifier (user guide, "Non-Gaussian targets"): ``selection``
        ``"matching_pursuit"``, ``"exact"`` and ``"vfe"`` then select by the posterior's
        entropy; ``noise_variance``, ``hyperparameter_objective``, ``noise_calibration``
        and ``normalize_y`` do not apply (``refine_basis``: see there); ``predict`` gives
        the mean and standard deviation of ``y`` (see there).
    noise_variance : float >= 0 or array-like of shape (n_samples,), default=1e-2
        Noise variance ``s2`` (initial value when it is learned), in the units of the targets
        the model is fitted to (the normalised ones with ``normalize_y=True``). ``0`` needs a
        ``WhiteKernel`` term (scikit-learn's ``alpha=0``). An array gives each training row
        its own noise variance ``a_i > 0`` (scikit-learn's ``alpha`` array), fixed with
        ``noise_variance_bounds="fixed"``, else ``s a_i`` with a common scale ``s`` learned
        (from 1) as the scalar is: the basis refinement (``refine_basis``) and the
        leave-one-out calibration of ``s`` (``noise_calibration``) included, so that
        ``np.ones(n)`` is the model of the scalar ``1.0`` (bit for bit) and of the default
        (to the optimizers' tolerance). With every row in the basis the model is
        ``GaussianProcessRegressor(kernel, alpha=a)``. Not with a ``WhiteKernel`` term
        (partitioned ``X``, :meth:`partial_fit`: see those and the user guide).
    noise_variance_bounds : pair of floats >= 0 or "fixed", default=(1e-6, 1e2)
        Bounds of ``noise_variance`` (of its common scale, for an array) for hyperparameter
        learning; ``"fixed"`` keeps it.
    max_basis : int or "auto", default=100
        Number of basis vectors ``p`` (clipped to the number of samples, with a warning).
        ``"auto"``: the selection decides. At the starting hyperparameters it grows the basis
        to 50, 100, 200, ... and after each doubling evaluates Titsias' bound per training row
        with the kernel's amplitude and the noise re-fitted to the basis; it stops at the
        first doubling that gains less than 0.01 nats per row and keeps the basis from before
        it (the doubling would cost about four times the work for less). The basis never
        exceeds 800, half the training rows (every row when there are at most 50) or what
        fits in the memory available. Learning, refinement and exchange then run on the
        chosen basis as with an int; ``n_basis_`` is the size chosen, ``basis_size_curve_``
        the sizes tried and ``verbose=1`` prints them. The subset start and
        ``learning_rows="auto"`` take ``max_basis=100``'s sizes; with more rows than
        ``learning_rows`` the size is chosen on the learning subsample, and the model of
        every row has that size. Not available with a
        non-Gaussian ``likelihood``. Set an int for a latency or memory budget (the
        prediction's cost is O(p) per row for the mean, O(p^2) for the variance).
    selection : {"matching_pursuit", "exact", "vfe", "info_gain", "random"} or BaseSelector, \
            default="matching_pursuit"
        Forward-selection strategy. ``"matching_pursuit"``: Keerthi & Chu's DMAX (the cost
        decrease with only the new weight optimised) on a random working set;
        ``"exact"``: the exact decrease of the cost (Smola & Bartlett) on a random working set;
        ``"vfe"``: the exact increase of Titsias' bound (the objective of
        ``hyperparameter_objective="vfe"``, Titsias 2009) on a random working set, at the
        cost of ``"exact"``;
        ``"info_gain"``: the fast information-gain approximation of Seeger et al. over all
        remaining points; ``"random"``: uniform. A selector object (see
        :mod:`skgpsparse.selection`) is cloned and used as is.
    working_set_size : int, default=None
        Candidates scored per step by ``"exact"``, ``"vfe"`` and ``"matching_pursuit"``
        (kappa; ``None`` means 59).
    n_exchange : int, default=0
        Exchange steps after forward selection: delete the basis vector whose removal increases
        the cost least (eq. (5)), then forward-select a replacement; a step whose replacement
        would leave the cost higher than before is undone, so exchange never raises the cost.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        Maximiser of the approximate log marginal likelihood (GPML eq. (8.17), or the bound
        chosen by ``hyperparameter_objective``) over the kernel hyperparameters and
        ``log(noise_variance)``, on the selected basis; scikit-learn's
        contract ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)``, with
        ``obj_func(theta, eval_gradient=True) -> (-lml, -gradient)``. ``None`` keeps the
        hyperparameters fixed. Learning starts from the exact GP likelihood on a random subset
        of ``max(max_basis, 100)`` points (as the exchange paper's experiments set their
        hyperparameters), then alternates basis selection and learning on the basis.
    hyperparameter_objective : {"vfe", "dtc"}, default="vfe"
        What ``optimizer`` maximises. ``"vfe"`` is the default because its error bars are
        calibrated where DTC's are too wide (see the "Choosing a model" page). ``"dtc"``:
        the marginal likelihood of the
        projected-process model, GPML eq. (8.17), ``log N(y | 0, Q_ff + s2 I)`` with the
        Nystrom approximation ``Q_ff = K_fu K_uu^-1 K_uf``. ``"vfe"``: Titsias' collapsed
        variational bound (Titsias 2009, eq. (9)), eq. (8.17) minus
        ``tr(K_ff - Q_ff) / (2 s2)``. DTC does not charge for the prior variance that the
        basis leaves unexplained at the training points, so its optimum tends to inflate the
        signal amplitude, and with it the predictive variance. The bound charges for it and
        stays below the exact GP's log marginal likelihood (equal to it when every training
        point is in the basis), so its hyperparameters approach the full GP's as the basis
        grows; with a basis too small for the data it tends to over-estimate the noise
        variance and under-fit instead (Bauer, van der Wilk and Rasmussen 2016). Both cost
        O(n p^2) per evaluation; the basis selection and the form of the predictions are the
        same for either.
    noise_calibration : {"loo", "loo_noise", None}, default="loo"
        After learning, set the noise variance and the kernel's amplitude (the basis and the
        length scales fixed) to minimise the leave-one-out negative log predictive density
        of the training targets, with the unexplained prior variance ``k(x, x) - q(x, x)``
        in the predictive variance. Titsias' bound over-estimates the noise when the basis
        is small, and the DTC evidence inflates the amplitude; either widens the error bars.
        The amplitude is a ``ConstantKernel`` factor of the kernel (``C(1.0) * RBF()``)
        whose value is not fixed; it moves within its bounds, and a kernel without one keeps
        its scale. ``"loo_noise"`` sets the noise variance alone. Two or three extra passes
        over the rows, O(n p^2) each. ``None`` keeps the objective's values. Not applied
        when the noise is not learned or every training row is in the basis. With a
        ``noise_variance`` array or ``sample_weight`` (row ``i``'s noise ``s a_i / w_i``) it
        sets the common scale ``s``: each row's leave-one-out residual is standardised by
        its predictive standard deviation, its own noise included, and counts ``w_i`` times
        (a row is left out with its whole weight, not one copy of it).
    refine_basis : int or "auto", default="auto"
        Largest number of L-BFGS iterations that move the basis vectors off the training rows after
        selection and exchange (fewer once ten iterations together gain less than 1e-4 nats per
        training row), maximising the ``hyperparameter_objective`` over the basis inputs (and over
        the hyperparameters with them, unless ``optimizer=None``), from the greedy basis; ``0``
        keeps the selected rows. With hyperparameter learning the basis is then selected once, at
        the starting hyperparameters, and the refinement learns them (``max_iter`` and ``tol`` do
        not apply). Each iteration costs one evaluation of the objective with its gradient,
        O(n p^2 + n p d); the result never scores below the greedy basis. Needs a kernel built from
        ``RBF``, ``Matern``, ``RationalQuadratic``, ``ConstantKernel`` and ``WhiteKernel``
        (gradients in the inputs in closed form) and an in-memory ``X``. ``"vfe"`` is the objective
        to refine with: the DTC evidence rewards moving basis vectors away from the data (Titsias
        2009). ``"auto"`` refines with up to 300 iterations when the objective is ``"vfe"``, the
        hyperparameters are learned by the default optimizer, the basis is smaller than the
        training set, ``X`` is in memory and the kernel has those gradients, and keeps the selected
        rows otherwise (``"dtc"``, fixed hyperparameters, a callable optimizer, a partitioned ``X``
        with ``learning_rows=None`` (a warning says so; with the default ``learning_rows`` the
        refinement runs on the rows gathered to the driver, as in memory), other kernels, every
        row in the basis, where the model is the full GP). With ``sample_weight`` or a
        ``noise_variance`` array the objective is the one with each row's own noise. With a
        non-Gaussian ``likelihood`` the objective is the EP evidence (on ``learning_rows``'
        rule's rows) and ``"auto"`` refines ``"student_t"`` only (user guide).
    max_iter : int, default=10
        Maximum number of alternations between basis selection and hyperparameter learning.
        ``0`` keeps the hyperparameters of the exact GP on the random subset of rows that
        starts every learned fit (the exchange paper's protocol, Sun and Yao 2006): the basis
        is selected (and exchanged) once at them, they are not re-learned on it, ``"auto"``
        does not refine, and an explicit ``refine_basis`` moves the basis inputs only. The
        noise calibration still applies.
    learning_rows : int, "auto" or None, default="auto"
        Rows that learning sees. Above this many training rows the hyperparameters (the
        alternation, or the refinement with the basis inputs) are learned on a random
        subsample of that many rows (drawn by ``random_state``), and the posterior on the
        learned basis, the fitted objective and the leave-one-out calibration use every
        row: each evaluation of the objective is then a pass over the subsample, not over
        every row. ``"auto"`` means ``max(20000, 200 * max_basis)`` rows (with
        ``likelihood="student_t"``, ``max(2000, 20 * max_basis)``: user guide, "Non-Gaussian
        targets"); an int ``m``
        means ``max(m, max_basis)``; ``None`` learns on every row. At scale ``max_basis``
        is still the basis size of the model of every row, ``max_iter``, ``tol`` and
        ``refine_basis`` count the subsample's alternations and iterations (``tol`` per
        subsample row), and ``basis_indices_`` are indices of the training set. Fits on
        fewer rows or with fixed hyperparameters are unchanged (partitioned ``X``: see ``fit``).
    tol : float, default=1e-4
        The alternation stops when one alternation raises the objective (a sum over the
        training rows) by less than ``tol`` per row, ``tol * n_samples`` in all.
    normalize_y : bool, default=False
        Centre and scale the targets before fitting (as scikit-learn's GP regressor).
    random_state : int, RandomState instance or None, default=None
        Randomness of the working sets, of random selection and of the ``learning_rows`` subsample.
    verbose : int, default=0
        Print progress: with 1, a first line (rows, basis size, memory), a line per
        alternation and a line every few seconds from the steps of each phase (selection,
        hyperparameter search, refinement, noise calibration); with 2, a line per step.
    n_jobs : int, default=None
        Threads for the passes over the training rows during basis selection (kernel
        columns, residual and state updates, chunk by chunk; BLAS runs on one thread per
        chunk meanwhile). ``None`` means 1 unless in a :func:`joblib.parallel_backend`
        context, ``-1`` means all processors. The fitted model does not depend on it. Worth
        it on large data on an otherwise idle machine; on a busy one the threads compete and
        can be slower (see the benchmarks page).
    n_targets : int, default=None
        Number of targets, for ``predict`` and ``sample_y`` before ``fit`` (the prior); a
        fit checks that ``y`` has that many columns. ``None`` means one, or whatever ``y``
        has.
    warm_start : bool, default=False
        ``fit`` starts from the previous fit's hyperparameters (not from the exact GP on a
        random subset) and basis vectors that are rows of the new ``X``: the way to re-learn
        the hyperparameters of a model updated by :meth:`partial_fit`. Not taken with a
        non-Gaussian ``likelihood`` (a warning; the fit starts afresh).

    Attributes
    ----------
    kernel_ : kernel instance
        The kernel with the learned hyperparameters (its amplitude set by leave-one-out
        with ``noise_calibration="loo"``).
    noise_variance_ : float or ndarray of shape (n_samples,)
        The learned (or fixed) noise variance, in the units of the fitted targets (set by
        leave-one-out unless ``noise_calibration=None``); with a ``WhiteKernel`` term, the
        fixed ``noise_variance`` (the learned noise is in ``kernel_``). With a
        ``noise_variance`` array, the rows' ``s a_i``; with weights, a unit weight's.
    basis_indices_ : ndarray of shape (n_basis,)
        Training-set indices of the basis vectors; with ``refine_basis``, of the rows they
        were selected from before they moved.
    basis_vectors_ : ndarray of shape (n_basis, n_features)
        The basis vectors: ``X[basis_indices_]``, or where ``refine_basis`` moved them.
    n_basis_ : int
        Number of basis vectors of the fitted model (the size ``max_basis="auto"`` chose).
    basis_size_curve_ : ndarray of shape (n_sizes, 2) or None
        With ``max_basis="auto"``: each basis size the selection reached and Titsias' bound
        per training row there, with the amplitude and noise re-fitted (what the stopping
        rule compared); ``None`` with an int ``max_basis``.
    alpha_ : ndarray of shape (n_basis,) or (n_basis, n_targets)
        Weights of the predictive mean on the basis (in the units of ``y``).
    log_marginal_likelihood_value_ : float
        The ``hyperparameter_objective`` of the fitted model: the approximate log marginal
        likelihood (GPML eq. (8.17)) or the VFE bound.
    n_iter_ : int
        Number of selection / hyperparameter alternations run.
    likelihood_ : Likelihood
        With a non-Gaussian ``likelihood``: the one fitted, its free parameters learned
        (``"student_t"``: the scale, in the units of ``y``; its ``dof`` stays 4). An
        instance's parameters are learned unless their bounds are ``"fixed"``, and are those
        of the targets as given.
    bias_ : float
        With a non-Gaussian ``likelihood``: the latent offset ``b`` (the log rate of the prior's
        median function for counts).
    n_refine_iter_ : int
        L-BFGS iterations run by ``refine_basis`` (0 when the basis stayed on the rows).
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
    regression", NIPS 18, 2005. M. K. Titsias, "Variational learning of inducing variables in
    sparse Gaussian processes", AISTATS 2009. M. Bauer, M. van der Wilk and C. E. Rasmussen,
    "Understanding probabilistic sparse Gaussian process approximations", NIPS 29, 2016.
    M. Seeger, C. K. I. Williams and N. D. Lawrence, "Fast forward
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

    Known noise per row (scikit-learn's ``alpha`` array), and weights as repeated rows:
    >>> noise = np.full(200, 0.01); noise[:100] = 0.04  # the first half is noisier
    >>> per_row = SparseGPRegressor(noise_variance=noise, noise_variance_bounds="fixed",
    ...                             max_basis=15, random_state=0).fit(X, y)
    >>> per_row.noise_variance_[[0, 199]]
    array([0.04, 0.01])
    >>> w = rng.randint(0, 3, 200)  # row i counts w[i] times; w[i] = 0 drops it
    >>> weighted = SparseGPRegressor(max_basis=15, random_state=0).fit(X, y, sample_weight=w)
    """

    _parameter_constraints: dict = {
        "kernel": [None, Kernel],
        "likelihood": [StrOptions(set(LIKELIHOODS)), Likelihood],
        "noise_variance": [Interval(numbers.Real, 0, None, closed="left"), "array-like"],
        "noise_variance_bounds": [StrOptions({"fixed"}), "array-like"],
        "max_basis": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "selection": [
            StrOptions({"random", "exact", "matching_pursuit", "info_gain", "vfe"}),
            BaseSelector,
        ],
        "working_set_size": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "n_exchange": [Interval(numbers.Integral, 0, None, closed="left")],
        "optimizer": [StrOptions({"fmin_l_bfgs_b"}), callable, None],
        "hyperparameter_objective": [StrOptions(set(OBJECTIVES))],
        "noise_calibration": [StrOptions({"loo", "loo_noise"}), None],
        "refine_basis": [Interval(numbers.Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "learning_rows": LEARNING_ROWS_OPTIONS,
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "normalize_y": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [numbers.Integral, None],
        "n_targets": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "warm_start": ["boolean"],
    }

    def __init__(
        self,
        kernel=None,
        *,
        likelihood="gaussian",
        noise_variance=1e-2,
        noise_variance_bounds=(1e-6, 1e2),
        max_basis=100,
        selection="matching_pursuit",
        working_set_size=None,
        n_exchange=0,
        optimizer="fmin_l_bfgs_b",
        hyperparameter_objective="vfe",
        noise_calibration="loo",
        refine_basis="auto",
        max_iter=10,
        learning_rows="auto",
        tol=1e-4,
        normalize_y=False,
        random_state=None,
        verbose=0,
        n_jobs=None,
        n_targets=None,
        warm_start=False,
    ):
        self.kernel = kernel
        self.likelihood = likelihood
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.max_basis = max_basis
        self.selection = selection
        self.working_set_size = working_set_size
        self.n_exchange = n_exchange
        self.optimizer = optimizer
        self.hyperparameter_objective = hyperparameter_objective
        self.noise_calibration = noise_calibration
        self.refine_basis = refine_basis
        self.max_iter = max_iter
        self.learning_rows = learning_rows
        self.tol = tol
        self.normalize_y = normalize_y
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.n_targets = n_targets
        self.warm_start = warm_start

    # ------------------------------------------------------------------ fit
    @fit_method(_PRIVATE_STATE)
    def fit(self, X, y, sample_weight=None):
        """Select the basis and learn the hyperparameters (a fit that raises changes nothing).

        Parameters
        ----------
        X : array-like or partitioned array of shape (n_samples, n_features)
            Training inputs. An array whose rows a row backend holds in partitions (one of
            :mod:`skgpsparse.rows`, e.g. chunked on a cluster: see the user guide's cluster page)
            is fitted with each partition and its per-row state kept where it lives: the in-memory
            fit's model, its learning and refinement run on the driver over the ``learning_rows``
            rows gathered from the partitions, every pass over all rows on the partitions. A
            ``float32`` array is not copied: the model is computed in ``float64``, but the columns
            that only score ``"matching_pursuit"``'s candidates are ``float32`` (faster at large
            ``n``), so near-ties can pick another basis than ``X.astype(np.float64)`` would; the
            model on a given basis is the same.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets. Several targets are fitted together, as by scikit-learn's
            ``GaussianProcessRegressor``: one basis, kernel and noise variance, chosen for the
            sum of the targets' costs and log marginal likelihoods.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights: row ``i`` has the noise ``noise_variance / w_i`` and
            the evidence's terms of ``w_i`` copies, so an integer weight repeats the row
            (exactly where the fit is deterministic: see the user guide) and a zero weight
            removes it. On a partitioned ``X``: numpy or of ``X``'s kind, when learning on
            gathered rows (user guide).

        Returns
        -------
        self : SparseGPRegressor
            The fitted model.
        """
        begin_fit(self, X, _PRIVATE_STATE)  # checks, warm start, state cleared (_warm)
        with blas_thread_limit(_FIT_BLAS_THREADS):
            return self._fit(X, y, sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None, noise_variance=None):
        """Add rows: the first call fits, later ones update the posterior exactly (O(p^2)).

        Rows are not kept; the basis grows to ``max_basis``; hyperparameters and scaling stay.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like of shape (n_samples,), default=None
            The batch's row weights, as in :meth:`fit`.
        noise_variance : array-like of shape (n_samples,), default=None
            The batch's per-row noise ``a_i`` with a ``noise_variance`` array (after a fit).

        Returns
        -------
        self : SparseGPRegressor
        """
        return partial_fit(self, X, y, sample_weight, noise_variance)

    def _fit(self, X, y, sample_weight=None):
        if self.likelihood != "gaussian" and is_auto(self.max_basis):
            raise ValueError(
                "max_basis='auto' is available with likelihood='gaussian' (its stopping "
                "rule reads Titsias' bound); with likelihood="
                f"{self.likelihood!r} pass an int max_basis, e.g. 100."
            )
        backend = backend_for(X, y)
        if backend is not None:  # rows held in partitions (skgpsparse.rows)
            return fit_partitioned(self, backend, X, y, sample_weight)
        if is_structured(self):  # strings, sequences...: fitted on their row numbers
            return fit_indexed(
                self, X, y, lambda rows, y_rows: self._fit(rows, y_rows, sample_weight)
            )
        if self.likelihood != "gaussian":  # the latent model under the likelihood
            return fit_likelihood(self, X, y, sample_weight)
        return fit_in_memory(self, X, y, sample_weight)

    def __getstate__(self):
        """Pickle without the training data: a fitted model stores what prediction needs.

        ``log_marginal_likelihood(theta)`` on an unpickled model raises and asks for a refit.
        """
        state = dict(super().__getstate__())  # a copy: the live model keeps its data
        state.pop("_X_train", None)
        state.pop("_y_train", None)
        return state

    log_marginal_likelihood = log_marginal_likelihood

    # ------------------------------------------------------------------ predict
    predict = predict
    _predict_validated = predict_validated
    log_predictive_density = log_predictive_density
    sample_y = sample_y

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.requires_fit = False  # predict and sample_y before fit give the prior
        return tags
