"""SparseGPClassifier: probit GP classification on a greedily selected basis (EP or ADF)."""

import numbers
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .._fitted_state import fit_method
from .._validation import plain_float_rows
from ..kernels._structured import fit_indexed, is_structured, query_rows
from ..likelihoods import Likelihood
from ..rows import backend_for, predicts_by_partition
from ..selection import BaseSelector
from . import _prediction
from ._fitting import LEARNING_ROWS_OPTIONS, begin_fit, check_kernel, fit_models, train_rows
from ._marginal_likelihood import log_marginal_likelihood
from ._prediction import by_row_blocks, check_binary_latent, latent, log_proba, margins, proba
from ._streaming import partial_fit as _partial_fit
from ._streaming import streams as _streams
from .partitioned._fit import fit_partitioned

__all__ = ["SparseGPClassifier"]

# Private fitted state, cleared by fit with the public attributes (see _fitted_state).
_PRIVATE_STATE = ("_binary", "_predictors", "_stream_buffer", "_fit_signature")


class SparseGPClassifier(ClassifierMixin, BaseEstimator):
    """Sparse Gaussian process classifier: a greedy basis, probit noise, EP or ADF.

    A GP classifier (probit likelihood ``p(y | f) = Phi(y (f + b))`` with a learned bias ``b``)
    on a small set of at most ``max_basis`` training points chosen by greedy forward
    selection (validation paper §2.3-2.5; additive-model paper §2-3). By default
    (``posterior="all_rows"``) the basis is the inducing set of a FITC prior and EP matches
    every training row's likelihood; the hyperparameters (kernel ``theta`` and ``b``)
    maximise that EP evidence, alternating with re-selection of the basis (by the IVM's
    entropy criterion, deterministic: below ``learning_rows`` it ignores ``random_state``). With
    ``posterior="basis"`` (the papers' method) the posterior is ADF on the basis rows only and
    the hyperparameters minimise the validation NLP outside the basis (eq. (4)), two-loop
    design. Fitting costs O(n max_basis^2) time and O(n max_basis) memory; predicting
    O(max_basis) per row (mean), O(max_basis^2) (variance). More than two classes: one vs
    rest (by default one kernel shared by the classes) or one vs one (``multi_class``).

    Parameters
    ----------
    kernel : kernel instance, default=None
        Prior covariance; ``None`` means
        ``ConstantKernel(1.0, constant_value_bounds=(1e-5, 100.0)) * RBF(sqrt(n_features))``.
        The length scale starts at ``sqrt(n_features)`` (distances between standardised
        points); the latent amplitude is capped at a standard deviation of 10 (``Phi(-10) <
        1e-23``; the NLP with fixed sites can run it to its bound). Standardise the features.
        With the all-rows posterior and an optimizer, the fit then tries one length scale per
        feature (ARD), started from the fitted one, kept only if its log evidence is higher
        by more than half the BIC charge, ``(n_features - 1) / 4 * log(n_samples)`` nats (a few
        hundred rows keep one: so fitted, per-feature length scales are overconfident). A
        kernel you pass is used as it is. With the all-rows posterior, per-feature length
        scales carry a log-normal hyperprior around their geometric mean (one e-fold standard
        deviation; ``objectives._hyperprior``). ``None``: no warning at its cap or
        per-feature upper bounds.
    max_basis : int or "auto", default="auto"
        Number of basis vectors (``d_max``). ``"auto"``: after the fit at 100, a basis grows in
        doublings (100, 200, ...) at its kernel and bias, EP over every (learning) row after
        each, until one adds < 0.001 nats per row to the log evidence (undone; at 100 the fit
        is kept, else the rounds rerun at the size); at most 800, n / 2 or the memory. Each
        class chooses its size (``n_basis_``, ``basis_size_curve_``); 100 under
        ``posterior="basis"``. An int (a latency or memory budget): with the all-rows
        posterior it may hold every row (the full GP's EP; clipped to ``n_samples`` with a
        warning); with ``posterior="basis"`` it is clipped to ``n_samples - 1`` with a warning
        (eq. (4) keeps a held-out point), and a warning says when under half the rows are left.
    selection : {"auto", "adaptive", "nlp", "entropy", "info_gain", "random"} or \
            BaseSelector, default="auto"
        How the next basis vector is chosen:

        - ``"auto"``: ``"entropy"`` under the all-rows posterior (there the basis only
          parameterises the prior, and a deterministic criterion makes the fitted model
          independent of ``random_state``), ``"adaptive"`` under the basis posterior (the
          additive-model paper's method).
        - ``"adaptive"``: working set of ``working_set_size`` (default 2) drawn with
          probabilities ``1 - Phi(y_j (f_j + b) / sqrt(1 + A_jj))`` (additive-model paper
          eq. (11)), best by NLP_a over all points (eq. (5), (10)).
        - ``"nlp"``: uniform working set (default 59), best by NLP eq. (4) (validation paper);
          with ``site_update="optimize"`` the slowest combination by far (``site_update``).
        - ``"entropy"``: largest posterior entropy reduction (IVM, Lawrence et al. 2003).
        - ``"info_gain"``: largest information gain (Seeger et al.).
        - ``"random"``: uniform draw.
        - a :class:`~skgpsparse.selection.BaseSelector` instance (cloned); the criteria its
          state accepts are ``"entropy"``, ``"info_gain"``, ``"nlp"`` and ``"nlp_all"``.
    working_set_size : int, default=None
        Candidates scored per step (``kappa``); ``None`` means the default of ``selection``
        (all remaining points for "entropy" and "info_gain"). Ignored by "random".
    site_update : {"moment_matching", "optimize"}, default="moment_matching"
        Site parameters ``(p_j, m_j)`` of an added basis vector: ADF moment matching (eq. (2)),
        or ``"optimize"``: minimise the NLP over ``(log p_j, m_j)`` for every working-set
        candidate, with the bound that keeps the posterior variances non-negative
        (additive-model paper §3; a bounded number of L-BFGS-B evaluations, vectorised over the
        working set). The candidates are then compared at their optimised sites; the objective
        is the selection's own (NLP_a eq. (5) for "adaptive", eq. (4) for "nlp"; eq. (5) for the
        other selections). Cost: each step evaluates the loss at all ``n`` rows up to about
        thirty times, from two starts, for every working-set candidate (2 under the default
        selection, 59 under ``"nlp"``); the measured limits are on the benchmarks page ("Where
        the slow fits stop").
    n_exchange : int, default=0
        Exchange steps after each forward selection: delete the basis vector whose deletion
        raises NLP_a (eq. (5)) least, all deletions scored in one batched computation, then add
        a replacement with ``selection``. Each deletion is O(n max_basis) by Givens rotations.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        Minimiser of the NLP over ``[kernel.theta..., b]``, scikit-learn's contract: a callable
        ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)`` where
        ``obj_func(theta, eval_gradient=True)`` returns the NLP and its gradient. The default
        runs a few L-BFGS-B iterations per outer iteration. ``None`` keeps the kernel's
        hyperparameters and the initial bias, ``b = sqrt(1 + mean k(x, x)) Phi^-1(fraction of
        positives)`` (so that the prior predicts the class balance), and fits once.
    posterior : {"auto", "all_rows", "basis"}, default="auto"
        ``"all_rows"``: the basis is the inducing set of a FITC prior, EP matches EVERY
        training row's likelihood (Naish-Guzman & Holden 2008) and ``[theta, b]`` maximise
        its evidence between re-selections (``hyperparameter_objective`` unused); O(n
        max_basis^2) per EP sweep. The probabilities depend on the data rather than on which
        rows the selection drew, and the evidence of all labels keeps a user's kernel (no
        amplitude cap) from overfitting. ``"basis"``: the papers' method, ADF with the basis
        rows' likelihoods only (as the IVM), with ``hyperparameter_objective``; its
        probabilities move with the basis drawn (``random_state``). ``"auto"``:
        ``"all_rows"``, on a partitioned ``X`` too (its EP sweeps run on the row partitions).
    likelihood : "probit" or Likelihood, default="probit"
        ``p(y | f + b)`` of each binary problem (labels as -1 and +1): the papers' probit, or
        a :class:`skgpsparse.likelihoods.Likelihood` (a logistic by quadrature, say), which
        every engine, objective and prediction then asks for its moments.
    hyperparameter_objective : {"nlp", "evidence"}, default="nlp"
        Objective of the hyperparameters ``[theta, b]`` with the basis fixed: the NLP over the
        non-basis points with the sites fixed (eq. (4)); the outer loop keeps the model with the
        lowest NLP. Or ``"evidence"`` (the IVM): minus the EP approximate log marginal likelihood
        of the basis labels (GPML eq. (3.65)), with EP re-run on the basis for every evaluated
        ``[theta, b]``, plus a Gaussian prior ``N(b_0, 1 + mean k(x, x))`` on the bias; the outer
        loop keeps the visited model (a basis selected under its own ``[theta, b]``) with the
        lowest training NLP over all points (NLP_a eq. (5)). The IVM needs larger bases than the
        NLP design (the validation paper used ``max_basis`` = N/2 for it).
    max_iter : int, default=20
        Largest number of outer iterations (basis selection + hyperparameter step); with the
        default kernel the rounds with one length scale per feature count towards it.
    tol : float, default=1e-3
        The outer loop stops when the NLP has not improved by ``tol`` for 5 iterations (a
        re-selected basis' training NLP varies by about 1e-3 between iterations); with
        ``posterior="all_rows"``, when a round improves minus the log evidence per row by less,
        or the next round's gain, extrapolated from the last two, would.
    learning_rows : int, "auto" or None, default="auto"
        As the regressor's, for ``posterior="all_rows"``: above it the rounds learn on a random
        subsample of that many rows (``max_iter``, ``tol`` count its rounds), then EP on all;
        the shared multi-class fit learns on at most 1,000 rows (fewer if this is smaller).
    n_restarts : int, default=0
        Extra fits from other starts of the bias ``b``: the class-balance start plus 4, -4,
        2, -2, 6, -6, 1, -1, 8, -8 (probit units), at most 10. All-rows posterior: each fitted
        on all rows, the highest evidence kept (``n_restarts + 1`` fits). ``"basis"``: each
        start fitted on ``1 - validation_fraction`` of the rows (stratified) for two outer
        iterations; the class-balance start is kept unless another's held-out NLP is lower by
        more than 2 paired standard errors than it and the class prior, then refitted on all
        rows. Shared multi-class fit: one offset for every class's bias, the highest summed
        evidence kept. Ignored when ``optimizer=None``.
    validation_fraction : float, default=0.2
        Share of each class held out to choose among the restarts' starts (``"basis"``).
    multi_class : {"auto", "shared", "independent", "one_vs_rest", "one_vs_one"}, \
            default="auto"
        More than two classes (two: one binary fit, whatever this says). ``"shared"`` (the
        all-rows posterior), one vs rest: one kernel learned on the classes' summed evidence
        over a stratified subsample, then per class a basis, a bias, its own kernel where its
        evidence pays for it, and EP on all rows; class probabilities ``softmax(log p_k - t
        log(1 - p_k))``, ``t`` in [0, 1] chosen by the training rows' leave-one-out log loss
        (``logit_weight_``). ``"independent"``, or scikit-learn's ``"one_vs_rest"`` (the
        same fit): a whole binary fit per class against the rest (its own kernel, bias, basis
        and EP), about ``K`` fits, ``p_k`` normalised (scikit-learn's, ``t = 0``).
        ``"one_vs_one"`` (scikit-learn's): a whole binary fit per pair of classes on their
        rows, ``K (K - 1) / 2`` fits on about ``2 n / K`` rows each; :meth:`predict` by their
        votes, :meth:`decision_function` the votes (``OneVsOneClassifier``'s), and no
        probabilities (:meth:`predict_proba` raises, as scikit-learn's); in memory only.
        ``"auto"``: ``"shared"`` under the all-rows posterior, ``"independent"`` under
        ``posterior="basis"`` and on a partitioned ``X`` (with a warning: the shared fit is
        not distributed). Costs and accuracy in the user guide.
    n_jobs : int, default=None
        Parallel jobs (joblib's reading: ``None`` means 1 unless in a
        :func:`joblib.parallel_backend` context, ``-1`` means all processors). With more than
        two classes, the binary models are fitted in parallel (the shared fit: each
        class's basis selection and EP on all rows; its shared learning runs in one
        process); with two, the row blocks of each scored working set are spread over
        threads (BLAS runs on one thread per block meanwhile). The fitted model does not
        depend on it.
    random_state : int, RandomState instance or None, default=None
        Randomness of the working sets, random selection and the ``learning_rows`` subsample
        (below ``learning_rows`` the default fit draws nothing).
    verbose : int, default=0
        Print one line per outer iteration (NLP, basis size, bias, kernel, time), and every
        few seconds one from each phase's steps (selection, hyperparameters, EP; 2: all).
    warm_start : bool, default=False
        ``fit`` starts from the last fit's kernel and bias (not searching for a start), and
        from its basis when the basis rows are rows of ``X`` at the same index (the shared
        multi-class fit: the shared kernel, every class's bias and basis); with the same kernel
        structure, kind of input, width and multi_class only, else it warns and fits cold.
    stream_buffer : int, default=2000
        :meth:`partial_fit` refits (warm-started) on the rows seen while they are at most this
        many (and at least ``max_basis``), when they have grown by a quarter and when they
        reach it; later rows leave the basis and hyperparameters as they are.
    stream_ep_sweeps : int, default=10
        Parallel EP sweeps over each :meth:`partial_fit` batch after its ADF pass (0: ADF).
    class_weight : dict, "balanced" or None, default=None
        Each class's weight times ``sample_weight`` (``partial_fit``: a dict only, see it).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    kernel_ : kernel instance
        Fitted kernel; more than two classes, scikit-learn's ``CompoundKernel`` of ``kernels_``
        (the same objects), or the shared fit's one kernel where no class keeps its own.
    kernels_ : list of kernel instances
        The kernel of each of ``estimators_`` (more than two classes).
    bias_ : float or ndarray of shape (n_classes,)
        Fitted bias ``b`` (per class with more than two classes).
    basis_indices_, basis_vectors_, site_precision_, site_mean_ : ndarray or list of ndarray
        Basis set (indices into the training set and inputs) and its site parameters (of every
        training row with ``posterior="all_rows"``; after :meth:`partial_fit`, of the last
        batch's rows, the earlier ones folded into the posterior); a list per class with more
        than two.
    n_iter_ : int or ndarray of shape (n_classes,)
        Outer iterations run.
    n_basis_ : int or ndarray of shape (n_classes,)
        Basis vectors of the fitted model(s) (the size ``max_basis="auto"`` chose).
    basis_size_curve_ : ndarray of shape (n_sizes, 2), None, or a list of them per class
        ``max_basis="auto"``: each size reached and the EP log evidence per row there (the
        rule's curve); None with an int.
    log_marginal_likelihood_value_ : float
        EP log evidence of the basis labels under the fitted kernel and bias (see
        :meth:`log_marginal_likelihood`); the mean over the binary models with more than two
        classes.
    loss_curve_ : list of float, or list of such lists
        Objective (NLP eq. (4), minus the log evidence plus the bias prior, or with
        ``posterior="all_rows"`` minus the all-rows log evidence per row) after each iteration.
    exchange_loss_curve_ : list of float, or list of such lists
        NLP_a (eq. (5)) of the kept model's basis before the first exchange step and after each
        exchange step (just the first value when ``n_exchange=0``; NaN with the all-rows
        posterior and ``selection="random"``, which form no basis posterior).
    estimators_ : list
        The binary models (more than two classes): per class, or per pair ``(i, j)``, ``i < j``,
        ordered ``(0, 1), (0, 2), ...`` (``"one_vs_one"``: on the two classes' rows).
    multi_class_ : {"shared", "independent", "one_vs_one"}
        The fit that ran (more than two classes; ``multi_class`` resolved).
    logit_weight_ : float
        ``t`` of the class probabilities (one vs rest, more than two classes; see
        ``multi_class``): 0 is the one-vs-rest probabilities normalised, 1 their logits' softmax.
    n_samples_seen_ : int
        Rows seen by :meth:`partial_fit` (only after it), those of weight zero not counted.
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
    sparse Gaussian process classifier design. A. Naish-Guzman and S. Holden, The generalized
    FITC approximation, NIPS 2007.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from skgpsparse import SparseGPClassifier
    >>> X, y = make_moons(n_samples=100, noise=0.1, random_state=0)
    >>> clf = SparseGPClassifier(max_basis=15, max_iter=3, random_state=0).fit(X, y)
    >>> len(clf.basis_indices_), bool(clf.score(X, y) > 0.9)
    (15, True)
    """

    _parameter_constraints: dict = {
        "kernel": [Kernel, None],
        "max_basis": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "selection": [StrOptions({"auto", "adaptive", "nlp", "entropy", "info_gain", "random"}),
                      BaseSelector],
        "working_set_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "site_update": [StrOptions({"moment_matching", "optimize"})],
        "n_exchange": [Interval(numbers.Integral, 0, None, closed="left")],
        "optimizer": [StrOptions({"fmin_l_bfgs_b"}), callable, None],
        "hyperparameter_objective": [StrOptions({"nlp", "evidence"})],
        "posterior": [StrOptions({"auto", "all_rows", "basis"})],
        "likelihood": [StrOptions({"probit"}), Likelihood],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "learning_rows": LEARNING_ROWS_OPTIONS,
        "n_restarts": [Interval(numbers.Integral, 0, 10, closed="both")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "multi_class": [
            StrOptions({"auto", "shared", "independent", "one_vs_rest", "one_vs_one"})
        ],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "stream_buffer": [Interval(numbers.Integral, 0, None, closed="left")],
        "stream_ep_sweeps": [Interval(numbers.Integral, 0, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        kernel=None,
        *,
        max_basis="auto",
        selection="auto",
        working_set_size=None,
        site_update="moment_matching",
        n_exchange=0,
        optimizer="fmin_l_bfgs_b",
        hyperparameter_objective="nlp",
        posterior="auto",
        likelihood="probit",
        max_iter=20,
        tol=1e-3,
        learning_rows="auto",
        n_restarts=0,
        validation_fraction=0.2,
        multi_class="auto",
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        stream_buffer=2000,
        stream_ep_sweeps=10,
        class_weight=None,
    ):
        self.kernel = kernel
        self.max_basis = max_basis
        self.selection = selection
        self.working_set_size = working_set_size
        self.site_update = site_update
        self.n_exchange = n_exchange
        self.optimizer = optimizer
        self.hyperparameter_objective = hyperparameter_objective
        self.posterior = posterior
        self.likelihood = likelihood
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rows = learning_rows
        self.n_restarts = n_restarts
        self.validation_fraction = validation_fraction
        self.multi_class = multi_class
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.stream_buffer = stream_buffer
        self.stream_ep_sweeps = stream_ep_sweeps
        self.class_weight = class_weight

    @fit_method(_PRIVATE_STATE)
    def fit(self, X, y, sample_weight=None):
        """Fit the sparse GP classifier (a fit that raises leaves the previous model as it was).

        Parameters
        ----------
        X : array-like or partitioned array of shape (n_samples, n_features)
            Training inputs. An array whose rows a row backend holds in partitions (see
            :mod:`skgpsparse.rows` and the user guide's cluster page) gives the in-memory
            fit's model: learning runs on the driver over the ``learning_rows`` rows
            gathered from the partitions, EP over every row on the partitions.
        y : array-like of shape (n_samples,)
            Class labels (any type scikit-learn accepts).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (times ``class_weight``): ``c`` counts a row ``c`` times, 0 removes it.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        check_kernel(self.kernel)
        previous = begin_fit(self, X, _PRIVATE_STATE)  # state cleared; warm-start models
        backend = backend_for(X, y)
        if backend is not None:  # rows held in partitions (skgpsparse.rows)
            return fit_partitioned(self, backend, X, y, sample_weight)
        if is_structured(self):  # strings, sequences...: fitted on their row numbers
            return fit_indexed(self, X, y, self.fit, sample_weight=sample_weight)
        X, y = validate_data(self, X, y, dtype=np.float64)
        X, y_enc, weights = train_rows(self, X, y, sample_weight)  # sets classes_
        return fit_models(self, X, y_enc, previous, weights)

    partial_fit = available_if(_streams)(_partial_fit)  # a stream's batch (all-rows posterior)

    log_marginal_likelihood = log_marginal_likelihood

    def _models(self):
        check_is_fitted(self)
        return [self._binary] if self.classes_.size == 2 else self.estimators_

    def _validate_X(self, X):
        """``X`` as float64 and the binary models' predictors."""
        # A finite float ndarray skips validate_data's fixed cost (single rows, BO loops); the
        # array is the one validate_data would return, and every other input goes through it.
        predictors = getattr(self, "_predictors", None)
        if predictors is not None:
            X_plain = plain_float_rows(self, X)
            if X_plain is not None:
                return X_plain, predictors
        check_is_fitted(self)
        return query_rows(self, X, self._predictors)

    @predicts_by_partition
    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at ``X``.

        The latent function here is the probit's argument ``g(x) = f(x) + b`` (bias included),
        so that ``P(y = classes_[1] | x) = Phi(mean / sqrt(1 + var))`` (validation paper
        eq. (2.7)). Two classes only, as scikit-learn's (else a ValueError).

        Parameters
        ----------
        X : as in :meth:`predict_proba`

        Returns
        -------
        latent_mean : ndarray of shape (n_samples,)
            ``f_* + b`` with ``f_* = k_*u Pi^1/2 B^-1 Pi^1/2 m_u``.
        latent_var : ndarray of shape (n_samples,)
            ``s2_* = k_** - k_*u Pi^1/2 B^-1 Pi^1/2 k_u*``, clipped at 0.
        """
        check_is_fitted(self)
        check_binary_latent(self.classes_.size)  # ValueError beyond two, as scikit-learn's
        return by_row_blocks(latent, *self._validate_X(X))

    @predicts_by_partition
    def decision_function(self, X):
        """Moderated margin ``(f_* + b) / sqrt(1 + s2_*) = Phi^-1(P(y = +1 | x_*))``.

        Monotone in :meth:`predict_proba` (its probit inverse), so ranks and argmax agree; the
        unmoderated ``f_* + b`` is the mean of :meth:`latent_mean_and_variance`.

        Parameters
        ----------
        X : as in :meth:`predict_proba`

        Returns
        -------
        margin : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive means ``classes_[1]``; otherwise one column per
            one-vs-rest model (``"one_vs_one"``: per class, ``OneVsOneClassifier``'s votes).
        """
        return by_row_blocks(margins, *self._validate_X(X))

    @predicts_by_partition
    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space.

        Parameters
        ----------
        X : as in :meth:`predict_proba`

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        return by_row_blocks(log_proba, *self._validate_X(X))

    @predicts_by_partition
    def predict_proba(self, X):
        """Class probabilities, ``P(y = +1 | x_*) = Phi((f_* + b) / sqrt(1 + s2_*))`` (eq. 2.7).

        With more than two classes, the one-vs-rest probabilities combined per row (see
        ``multi_class``); with ``"one_vs_one"`` a ValueError, as scikit-learn's GPC.

        Parameters
        ----------
        X : array-like or partitioned array of shape (n_samples, n_features)
            Query points. A partitioned array (see ``fit``) gives an array of its kind
            partitioned as its rows, computed lazily (one task per partition, the fitted
            model shipped with it).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return by_row_blocks(proba, *self._validate_X(X))

    @predicts_by_partition
    def predict(self, X):
        """Most probable class of each row of ``X``.

        Parameters
        ----------
        X : as in :meth:`predict_proba`

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The class of highest :meth:`predict_proba` (one vs one: most votes).
        """
        return by_row_blocks(partial(_prediction.labels, self), *self._validate_X(X))
