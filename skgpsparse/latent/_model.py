"""The binary sparse ADF GP classifier: two-loop design, site updates, exchange, objectives."""

import time
import warnings

import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from .._memory import FitMemory, max_basis_advice
from .._progress import Progress
from .._row_weights import total_weight
from ..inference._adf import ADFState
from ..inference._online import OnlinePosterior
from ..inference._row_columns import stores_columns
from ..likelihoods import Probit
from ..selection import BaseSelector, GreedySelector, RandomSelector, check_working_set_size
from ._predictors import AllRowsPredictor, BinaryPredictor
from .learning._drawn_basis import DrawnBasis, draws_only
from .learning._duplicate_inputs import DuplicateInputs
from .learning._ep_rounds import fit_all_rows
from .learning._evidence_rounds import fit_evidence
from .learning._hyperparameters import (
    BIAS_BOUNDS,
    PATIENCE,
    check_bounds,
    initial_bias,
    minimize_theta,
)
from .objectives._basis_evidence import negative_log_evidence
from .objectives._ep_evidence import AllRowsObjective, joint_theta
from .objectives._nlp_loss import nlp_loss

# BLAS threads during fit: the selection's products are matrix-vector ones over the p x n
# matrix M (memory bound), where a second thread cost 3.7x the CPU time at n = 20,000,
# p = 128 (benchmarks/scale/results/floor.md), and the NLP gradient's products are small; two
# BLAS threads made whole fits slower in wall time even on the idle two-core machine
# (n = 1,000, p = 100: 1.21 s against 0.61 s; n = 20,000, p = 200: 19.0 s against 16.6 s).
_FIT_BLAS_THREADS = 1
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


def fit_memory(n, n_features, p, n_theta, learn, working_set, n_parallel=1, all_rows=False,
               name="SparseGPClassifier"):
    """:class:`~skgpsparse._memory.FitMemory` of a classifier fit on ``n`` rows, basis ``p``.

    One binary fit holds the posterior's ``p x n`` matrix ``M``
    (:class:`~skgpsparse.inference._adf.ADFState`), the last scored working set's posterior columns
    (``kappa x n``, kept for up to 64 candidates), the inputs' scaled copy and about ten
    ``n``-vectors, and about four ``p x p`` factors; learning the hyperparameters adds the
    objective's ``p x p`` matrices with ``dK_uu`` (``p x p x n_theta``) and the NLP gradient's row
    block (four ``rows x p`` arrays of about 32 MB). ``n_parallel`` binary fits (one-vs-rest with
    ``n_jobs``) run at the same time. ``all_rows`` (``posterior="all_rows"``) adds the EP's
    ``p x n`` array ``V = L^-1 K_uf`` (:mod:`skgpsparse.inference._ep`; its passes read it by row
    blocks) where it is held whole (:func:`~skgpsparse.inference._row_columns.stores_columns`)
    and, when learning, the evidence gradient's ``n x p`` ``M P^T`` and one row block of
    its kernel contraction in place of the NLP gradient's four.
    """
    kept = working_set if working_set <= 64 else 0
    lower_p = f"lower `max_basis` (now {p})"
    parts = [
        ("the posterior's max_basis x n block", 8.0 * p * n, lower_p),
        (
            "the max_basis x max_basis factors" + (" and gradient blocks" if learn else ""),
            8.0 * p * p * ((10 + n_theta) if learn else 4)
            # the NLP gradient's four row blocks; the evidence gradient's M P^T and one
            # block of its kernel contraction (tracemalloc, tests/test_bounded_memory.py)
            + ((2 if all_rows else 4) * min(32 * 2**20, 8.0 * n * p) if learn else 0.0),
            (lower_p, "pass optimizer=None (fixed hyperparameters)") if learn else lower_p,
        ),
        (
            "the rows' inputs and working columns",
            8.0 * n * (n_features + 12 + kept),
            f"fit on fewer rows (now {n})",
        ),
    ]
    if all_rows and stores_columns(n, p, 8 * n * n_features):  # else formed by blocks
        parts.append((
            "the all-rows EP's max_basis x n array",
            # V (tracemalloc in tests/test_bounded_memory.py: with fixed hyperparameters the
            # selection's state is freed before EP; a learned fit's peak is in its gradient
            # blocks)
            8.0 * p * n,
            (lower_p, "pass posterior='basis' (the basis rows' likelihoods only)"),
        ))
    if n_parallel > 1:
        one = sum(size for _, size, _ in parts)
        parts.append((
            f"the {n_parallel - 1} other one-vs-rest fits at the same time",
            (n_parallel - 1) * one,
            f"lower `n_jobs` (now {n_parallel} fits at once)",
        ))

    def need(q):
        return fit_memory(
            n, n_features, q, n_theta, learn, working_set, n_parallel, all_rows, name
        ).total

    return FitMemory(name, parts, max_basis_advice(need, p))


class LatentSparseGP:
    """Binary model, labels in {-1, +1}: the two-loop design of the validation paper §2.5."""

    def __init__(
        self,
        kernel,
        max_basis,
        selector,
        optimizer,
        max_iter,
        tol,
        verbose,
        site_update="moment_matching",
        n_exchange=0,
        hyperparameter_objective="nlp",
        bias_offset=0.0,
        n_threads=1,
        posterior="basis",
        per_feature_choice=False,
        learning_rows=None,
        warm=None,
        likelihood=None,
        sample_weight=None,
        expected_at_bounds=(),
        name="SparseGPClassifier",
        basis_cap=None,
        refine_basis=0,
        refine_rows=None,
    ):
        self.kernel = kernel
        # posterior="all_rows": L-BFGS iterations moving the basis inputs (learning._refine)
        # on every row, or on a subsample of refine_rows (skgpsparse._learning_rows)
        self.refine_basis, self.refine_rows, self.refine_iter_ = refine_basis, refine_rows, 0
        # max_basis="auto" (learning._basis_size): the largest size tried, max_basis the
        # stand-in until the size is chosen; None: max_basis is the size
        self.basis_cap = basis_cap
        self.basis_size_curve_ = None
        # the rows' weights (each row counts as that many copies; None: once each), and
        # those of the rows the current step sees (a learning subsample's)
        self.sample_weight = self._row_weights = sample_weight
        # hyperparameters of the package's default kernel whose upper bound is not warned
        # about (_fitting.default_kernel, learning._hyperparameters.check_bounds)
        self.expected_at_bounds = expected_at_bounds
        # the estimator whose fit this is, in progress lines and memory errors
        self.name = name
        # p(y | f + b): every engine, objective and predictor asks it (skgpsparse.likelihoods)
        self.likelihood = Probit() if likelihood is None else likelihood
        # rows the all-rows posterior's learning sees (skgpsparse._learning_rows)
        self.learning_rows = learning_rows
        # a warm start (_fitting._warm_params): (bias, basis indices or None) of the last fit
        self.warm = warm
        self._warm_basis = None if warm is None else warm[1]
        # the package's default kernel: try one length scale per feature (_ep_rounds)
        self.per_feature_choice = per_feature_choice
        # "basis": ADF over the basis rows' likelihoods; "all_rows": EP over every row's
        self.posterior = posterior
        # threads over the row blocks of each scored working set (ADFState)
        self.n_threads = n_threads
        # added to the class-balance start of b (restarts, _classification_restarts)
        self.bias_offset = bias_offset
        self.site_update = site_update
        self.n_exchange = n_exchange
        self.hyperparameter_objective = hyperparameter_objective
        self.max_basis = max_basis
        self.selector = selector
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self._progress = Progress(name, verbose)

    def _select(self, kernel, X, y, bias, rng):
        """Inner loop: forward selection from an empty basis (Algorithm 1, steps 2-5), or
        the first time after a warm start, from the previous fit's basis."""
        self._twins_of(X)
        if (self.posterior == "all_rows" and self._warm_basis is None
                and draws_only(self.selector, self.n_exchange)):
            return self._select_into(DrawnBasis(X.shape[0], self.max_basis), rng)
        state = ADFState(
            kernel, X, y, bias, self.max_basis, likelihood=self.likelihood,
            site_update=self.site_update, n_threads=self.n_threads,
            # the basis posterior's sites and NLP weigh the rows; the all-rows posterior's
            # selection scores each row once (its basis is only the prior's inducing set)
            weights=self._row_weights if self.posterior == "basis" else None,
        )
        warm_basis, self._warm_basis = self._warm_basis, None
        for j in () if warm_basis is None else warm_basis:
            self._add(state, int(j))
        return self._select_into(state, rng)

    def _twins_of(self, X):
        """The rows of ``X`` sharing an input (:mod:`.learning._duplicate_inputs`), under
        the all-rows posterior (None otherwise, or when no input repeats); computed once per
        ``X``."""
        cached = getattr(self, "_twins", None)
        if cached is None or cached[0] is not X:
            twins = DuplicateInputs(X) if self.posterior == "all_rows" else None
            self._twins = (X, twins if twins is not None and twins.any else None)
        return self._twins[1]

    def _add(self, state, j):
        """Add row ``j`` to the basis of ``state``; under the all-rows posterior its twins
        (rows with its input) leave the candidates."""
        state.add(j)
        twins = getattr(self, "_twins", (None, None))[1]
        if twins is not None and twins.groups.size == state.n_samples:
            state.exclude_rows(twins.of(j))

    def _select_into(self, state, rng):
        """Grow ``state`` to ``max_basis`` basis vectors, then run the exchange steps."""
        while state.size < self.max_basis:
            if not state.candidates().size:
                warnings.warn(
                    f"Basis selection stopped at {state.size} basis vectors (max_basis="
                    f"{self.max_basis}): every remaining point has zero posterior variance "
                    "(duplicates of basis points or a degenerate kernel) or, under the "
                    "all-rows posterior, repeats a basis row's input.",
                    RuntimeWarning,
                    stacklevel=4,
                )
                break
            self._add(state, self.selector.select(state, rng))
            self._progress.step(lambda: f"basis {state.size}/{self.max_basis}")
        self._exchange(state, rng)
        return state

    def _exchange(self, state, rng):
        """Backward deletion by least NLP_a increase, then forward re-selection (n_exchange)."""
        curve = [state.nlp(all_points=True)]
        for _ in range(self.n_exchange):
            if state.size < 1:
                break
            k = int(np.argmin(state.deletion_scores()))
            j = int(state.basis_indices[k])
            state.remove(k)
            twins = getattr(self, "_twins", (None, None))[1]
            if twins is not None and twins.groups.size == state.n_samples:
                state.exclude_rows(twins.of(j), False)  # the deleted row's twins come back
            if not state.candidates().size:
                break
            self._add(state, self.selector.select(state, rng))
            curve.append(state.nlp(all_points=True))
            self._progress.step(lambda: f"exchange step {len(curve) - 1}/{self.n_exchange}, "
                                        f"NLP_a {curve[-1]:.6f}")
        self._last_exchange_curve = curve

    def fit(self, X, y, rng):
        self._progress = Progress(self.name, self.verbose)
        need = fit_memory(
            X.shape[0], X.shape[1], self.max_basis, self.kernel.n_dims,
            self.optimizer is not None, getattr(self.selector, "working_set_size", None) or 0,
            all_rows=self.posterior == "all_rows", name=self.name,
        )
        all_rows = self.posterior == "all_rows"
        objective = "the all-rows EP evidence" if all_rows else self.hyperparameter_objective
        self._progress.line(
            f"fit: {X.shape[0]} rows x {X.shape[1]} features, basis of {self.max_basis}, "
            f"objective {objective}; the fit needs {need.summary()}"
        )
        with threadpool_limits(limits=_FIT_BLAS_THREADS, user_api="blas"):
            if self.posterior == "all_rows":
                return fit_all_rows(self, X, y, rng)  # _ep_rounds: EP over every row
            if self.hyperparameter_objective == "evidence":
                return fit_evidence(self, X, y, rng)  # the IVM's outer loop
            return self._fit_nlp(X, y, rng)

    def _fit_nlp(self, X, y, rng):
        """The two-loop design with NLP eq. (4) as the hyperparameter objective (§2.5)."""
        kernel = clone(self.kernel)
        bias = self._initial_bias(kernel, X, y) + self.bias_offset
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
                best = (loss, kernel, bias, basis, prec, mean, self._last_exchange_curve)
            else:
                since_best += 1
            self._progress.line(
                f"iter {it + 1:3d}  NLP {loss:.6f}  basis {state.size}"
                f"  b {bias:+.4f}  kernel {kernel}  ({time.perf_counter() - tic:.2f} s)"
            )
            if self.optimizer is None or since_best >= PATIENCE:
                break
        self.n_iter_ = it + 1
        # additive-model paper §5: keep the best model by training NLP
        _, self.kernel_, self.bias_, self.basis_indices_, prec, mean, curve = best
        if self.optimizer is not None:
            # Tell the user when a learned hyperparameter sits at a bound (sklearn's warning:
            # e.g. the amplitude at its upper bound makes the predictions overconfident).
            check_bounds(self, self.kernel_)
        self.exchange_loss_curve_ = [float(v) for v in curve]
        self.site_precision_, self.site_mean_ = prec, mean
        self._set_fitted_basis(X, y)
        return self

    def _initial_bias(self, kernel, X, y):
        if self.warm is not None:
            return self.warm[0]
        return initial_bias(kernel, X, y, self.likelihood, self._row_weights)

    def _objective(self, kernel, bias, X, y, basis, prec, mean, eval_gradient=False):
        """NLP eq. (4) with basis and sites fixed."""
        return nlp_loss(kernel, X, y, bias, basis, mean, prec, likelihood=self.likelihood,
                        eval_gradient=eval_gradient, weights=self._row_weights)

    def _optimize(self, kernel, bias, X, y, basis, prec, mean):
        def obj_func(theta, eval_gradient=True):
            k = kernel.clone_with_theta(theta[:-1])
            out = self._objective(k, theta[-1], X, y, basis, prec, mean, eval_gradient)
            value = out[0] if eval_gradient else out
            if not np.isfinite(value):  # keep the line search away, never return NaN
                value = np.finfo(float).max / 1e10
                out = (value, np.zeros(theta.shape)) if eval_gradient else value
            return out

        theta0 = np.append(kernel.theta, bias)
        bounds = np.vstack([kernel.bounds.reshape(-1, 2), BIAS_BOUNDS])
        obj_func = self._progress.counting("hyperparameters", obj_func)
        theta, loss = minimize_theta(self.optimizer, obj_func, theta0, bounds)
        return kernel.clone_with_theta(theta[:-1]), float(theta[-1]), loss

    def online_posterior(self):
        """The all-rows posterior as an :class:`~skgpsparse.inference._online.OnlinePosterior`
        (``O(max_basis^2)``), made from the fit's sites once, its rows then dropped: what the
        estimators' ``partial_fit`` updates."""
        if getattr(self, "_online", None) is None:
            train = getattr(self, "_train", None)
            if self.posterior != "all_rows" or train is None:
                raise ValueError(
                    "partial_fit can update a model fitted with the all-rows posterior only, and "
                    "not a pickled one (it does not keep its sites' rows); fit it again, or "
                    "start the stream with partial_fit."
                )
            X, y = train
            tau = self.site_precision_
            self._online = OnlinePosterior.from_sites(
                self.kernel_, self.basis_vectors_, self.bias_, X, tau, tau * self.site_mean_,
                likelihood=self.likelihood, weights=getattr(self, "sample_weight", None),
            )
            self._train = None
        return self._online

    def stream(self, X, y, ep_sweeps, tol, weights=None):
        """Rows into :meth:`online_posterior` (one ADF pass, then up to ``ep_sweeps`` EP sweeps
        over them, each row's site counted ``weights`` times), the predictor formed from it;
        returns the rows' sites ``(tau, nu)``."""
        online = self.online_posterior()
        tau, nu = online.update(X, y, ep_sweeps=ep_sweeps, tol=tol, weights=weights)
        self._predictor = AllRowsPredictor.from_posterior(
            online.kernel, online.basis_vectors, *online.weight_posterior(), online.bias,
            online.likelihood,
        )
        return tau, nu

    def __getstate__(self):
        """Pickle without the training rows that ``posterior="all_rows"`` keeps for
        ``log_marginal_likelihood(theta)``: a fitted model stores what prediction needs."""
        state = self.__dict__.copy()
        for name in ("_train", "sample_weight", "_row_weights"):
            state.pop(name, None)
        return state

    def _set_predictive_factors(self):
        """Form what prediction needs under the final kernel (:class:`BinaryPredictor`)."""
        if self.posterior == "all_rows":
            X, y = self._train
            tau = self.site_precision_
            args = (X, y, tau, tau * self.site_mean_, self.bias_)
            self._predictor = AllRowsPredictor(
                self.kernel_, self.basis_vectors_, *args, likelihood=self.likelihood,
                weights=self.sample_weight,
            )
            return
        self._predictor = BinaryPredictor(
            self.kernel_, self.basis_vectors_, self.site_precision_, self.site_mean_, self.bias_,
            self.likelihood,
        )

    def _set_fitted_basis(self, X, y, Z=None):
        """The basis (``Z``: its refined inputs), its labels, the predictive factors and the
        evidence of a finished fit."""
        self.basis_vectors_ = X[self.basis_indices_] if Z is None else Z
        self._basis_labels = y[self.basis_indices_]
        weights = self._row_weights  # of the basis rows (their evidence counts the copies)
        self._basis_weights = None if weights is None else weights[self.basis_indices_]
        self._set_predictive_factors()
        self.log_marginal_likelihood_value_ = float(self.log_marginal_likelihood())

    def log_marginal_likelihood(self, theta=None, eval_gradient=False):
        """EP log marginal likelihood of the basis labels (GPML eq. (3.65)) at ``theta``.

        The approximate evidence of the sparse model: EP on the basis latents with the
        likelihoods of the basis labels and the fitted bias, warm-started at the fitted sites
        (``posterior="all_rows"``: EP over every training label under the sparse prior).
        ``theta`` is the kernel's (``None``: the fitted one); the gradient is with respect to
        it.
        """
        kernel = self.kernel_ if theta is None else self.kernel_.clone_with_theta(theta)
        prec = self.site_precision_
        if self.posterior == "all_rows":  # the EP evidence of all labels (inference._ep)
            if getattr(self, "_train", None) is None:
                raise ValueError(
                    "log_marginal_likelihood(theta) with posterior='all_rows' needs the "
                    "training rows, which a pickled model does not keep (nor a partitioned fit "
                    "above learning_rows): it stores what prediction needs. Refit the model in "
                    "memory to evaluate the evidence at another theta."
                )
            X, y = self._train
            weights = getattr(self, "sample_weight", None)
            objective = AllRowsObjective(
                self.kernel_, X, y, self.basis_vectors_, (prec, prec * self.site_mean_),
                likelihood=self.likelihood, weights=weights,
            )
            out = objective(joint_theta(kernel, self.likelihood, self.bias_), eval_gradient)
            n = total_weight(y.size, weights)
            if not eval_gradient:
                return -out * n
            return -out[0] * n, -out[1][:kernel.n_dims] * n
        if getattr(self, "_basis_weights", None) is not None:
            return self._weighted_basis_evidence(kernel, eval_gradient)
        out = negative_log_evidence(
            kernel,
            self.basis_vectors_,
            self._basis_labels,
            self.bias_,
            likelihood=self.likelihood,
            site_precision=prec,
            site_natural_mean=prec * self.site_mean_,
            eval_gradient=eval_gradient,
        )
        if not eval_gradient:
            return -out
        return -out[0], -out[1][:-1]

    def _weighted_basis_evidence(self, kernel, eval_gradient):
        """The basis labels' EP evidence when each counts as its row's weight ``c`` (the
        basis posterior's sites hold ``c`` copies' precision): the all-rows EP on the basis
        rows under the DTC prior of the basis itself (``Q_uu = K_uu`` to the jitter), whose
        power-EP update and evidence count the copies (:mod:`skgpsparse.inference._ep`)."""
        c, X_u = self._basis_weights, self.basis_vectors_
        tau = self.site_precision_ / c  # one copy's site
        objective = AllRowsObjective(
            self.kernel_, X_u, self._basis_labels, X_u, (tau, tau * self.site_mean_),
            prior="dtc", likelihood=self.likelihood, weights=c,
        )
        out = objective(joint_theta(kernel, self.likelihood, self.bias_), eval_gradient)
        n = float(np.sum(c))
        return -out * n if not eval_gradient else (-out[0] * n, -out[1][:kernel.n_dims] * n)

    def latent_mean_and_variance(self, X):
        """Mean of ``f_* + b`` and variance of ``f_*`` (validation paper eq. (2.7)), by blocks."""
        return self._predictor.latent_mean_and_variance(X)

    def moderated_margin(self, X):
        """``(f_* + b) / sqrt(1 + s2_*)``, so that ``P(y = +1 | x_*) = Phi(margin)`` (eq. 2.7)."""
        return self._predictor.moderated_margin(X)
