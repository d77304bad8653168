"""The classifier's fit around its binary models: their parameters and the stored results.

Shared by the in-memory fit (``SparseGPClassifier.fit``) and the fit over row partitions
(:mod:`skgpsparse.classification.partitioned._fit`), so that both build the binary models alike and
store them alike.
"""

import warnings

import numpy as np
from joblib import effective_n_jobs
from sklearn.gaussian_process.kernels import RBF, CompoundKernel, ConstantKernel
from sklearn.utils import check_random_state

from .._auto_basis import start_size
from .._fitted_state import reset_fitted_state
from .._labels import encode_labels
from .._learning_rows import LEARNING_ROWS_OPTIONS
from .._row_weights import distinct_rows, refuse_weights, weighted_rows
from .._warm_start import WarmStartWarning, fit_signature, warm_start_allowed
from ..kernels._structured import IndexedKernel
from ..latent._model import _make_selector, fit_memory
from ..likelihoods import Probit
from ._basis_size import auto_basis_cap, auto_chooses, stand_in
from ._prediction import OneVsRestPredictors, PairPredictors
from .learning._restarts import fit_binary
from .multiclass._combination import set_logit_weight
from .multiclass._one_vs_one import class_pairs, fit_one_vs_one
from .multiclass._one_vs_rest import multi_class_mode, one_vs_rest

# LEARNING_ROWS_OPTIONS is re-exported for the estimator's parameter constraints
__all__ = [
    "LEARNING_ROWS_OPTIONS", "begin_fit", "binary_params", "check_kernel", "default_kernel",
    "fit_models", "previous_models", "store_binary", "store_one_vs_rest", "train_rows",
]

# Upper bound of the default kernel's amplitude (a variance): latent standard deviation 10.
_MAX_AMPLITUDE = 100.0
# The default kernel's hyperparameters whose upper bound is reached by design, not warned
# about (learning._hyperparameters.check_bounds): the amplitude's cap, where the evidence
# runs along a ridge with the bias (an RBF approaches a linear kernel as amplitude and length
# scale grow together), and a per-feature length scale's, a feature the fit switched off.
# A cap of 1e4 instead was still reached by 11 of 68 benchmark fits (23 reach 100) and moved
# the test NLP both ways (letter -0.017, twonorm +0.006;
# benchmarks/studies/results/default_bounds.md).
DEFAULT_KERNEL_AT_BOUNDS = ("k1__constant_value", "k2__length_scale")

# Fitted attributes of each binary model, listed per class with more than two classes.
PER_MODEL_ATTRIBUTES = (
    "basis_indices_",
    "basis_vectors_",
    "site_precision_",
    "site_mean_",
    "loss_curve_",
    "exchange_loss_curve_",
    "basis_size_curve_",
)


def default_kernel(n_features):
    """``C(1) * RBF(sqrt(d))``, the amplitude capped at variance 100 (latent std 10)."""
    amplitude = ConstantKernel(1.0, constant_value_bounds=(1e-5, _MAX_AMPLITUDE))
    return amplitude * RBF(float(np.sqrt(n_features)))


def check_kernel(kernel):
    """Refuse a ``CompoundKernel`` first, as scikit-learn's GPC does (before any other check
    touches the kernel: ``CompoundKernel(0)`` is not even iterable)."""
    if isinstance(kernel, CompoundKernel):
        raise ValueError(
            "kernel cannot be a CompoundKernel: each binary model has its own kernel (the "
            "fitted ones are in `kernels_`, and a multi-class `kernel_` is their "
            "CompoundKernel)."
        )


def binary_params(clf, n, n_features, n_classes, posterior=None):
    """Arguments of each binary model of ``clf`` on ``n`` rows (``max_basis`` below ``n``).

    ``posterior`` overrides the one ``clf.posterior`` means (a partitioned fit: ``"basis"``); the
    selection ``"auto"`` follows it.
    """
    check_kernel(clf.kernel)
    posterior = posterior or ("all_rows" if clf.posterior == "auto" else clf.posterior)
    max_basis = stand_in(clf, n)  # "auto": 100 (or n) until the size is chosen
    if max_basis > n and posterior == "all_rows":
        max_basis = n  # every row in the basis: the full GP's EP
        warnings.warn(
            f"max_basis={clf.max_basis} exceeds the number of samples {n}; using "
            f"max_basis={n}.",
            UserWarning,
        )
    elif max_basis >= n and posterior != "all_rows":
        max_basis = max(n - 1, 1)
        warnings.warn(
            f"`max_basis`={clf.max_basis} is not smaller than n_samples={n}; using "
            f"max_basis={max_basis} so that the NLP keeps a held-out point.",
            UserWarning,
        )
    if (posterior == "basis" and clf.hyperparameter_objective == "nlp"
            and clf.optimizer is not None and 2 * max_basis > n):
        # eq. (4) judges the hyperparameters on the rows outside the basis: with few of them
        # it fits those rows (on 200 noisy rows, 199 in the basis: a bias of -10 and chance
        # accuracy), as a validation set that small would
        warnings.warn(
            f"With posterior='basis' the hyperparameters minimise the NLP over the rows "
            f"outside the basis, {n - max_basis} of {n} with max_basis={max_basis}: so few "
            "can overfit them. Keep max_basis at most half the rows, or use "
            "posterior='all_rows' (every row in the basis is then the full GP's EP).",
            UserWarning,
        )
    kernel = default_kernel(n_features) if clf.kernel is None else clf.kernel
    selection = clf.selection
    if isinstance(selection, str) and selection == "auto":
        # all rows' likelihoods: the basis only parameterises the prior, and the deterministic
        # entropy criterion makes the fit independent of the seed; the basis posterior keeps
        # the additive-model paper's adaptive sampling
        selection = "entropy" if posterior == "all_rows" else "adaptive"
    return {
        "kernel": kernel,
        "max_basis": max_basis,
        "selector": _make_selector(selection, clf.working_set_size),
        "optimizer": clf.optimizer,
        "site_update": clf.site_update,
        "n_exchange": clf.n_exchange,
        "hyperparameter_objective": clf.hyperparameter_objective,
        "posterior": posterior,
        "likelihood": Probit() if isinstance(clf.likelihood, str) else clf.likelihood,
        # the default kernel may become one length scale per feature (learning._ep_rounds): only
        # where the all-rows evidence learns the hyperparameters
        "per_feature_choice": (clf.kernel is None and posterior == "all_rows"
                               and clf.optimizer is not None),
        "expected_at_bounds": DEFAULT_KERNEL_AT_BOUNDS if clf.kernel is None else (),
        "max_iter": clf.max_iter,
        "learning_rows": clf.learning_rows,
        "tol": clf.tol,
        "verbose": clf.verbose,
        # n_jobs: threads over the rows of a binary problem, else over the one-vs-rest models
        "n_threads": effective_n_jobs(clf.n_jobs) if n_classes == 2 else 1,
    }


def _fit_binary(params, restarts, X, y, seed):
    return fit_binary(params, X, y, check_random_state(seed), *restarts)


def fit_models(clf, X, y_enc, previous=None, weights=None):
    """Fit and store the binary models of ``clf`` on ``X`` and labels ``y_enc`` (class indices).

    One model for two classes, one per class against the rest otherwise
    (:func:`~skgpsparse.classification.multiclass._one_vs_rest.one_vs_rest`), or one per pair
    of classes (``multi_class="one_vs_one"``,
    :func:`~skgpsparse.classification.multiclass._one_vs_one.fit_one_vs_one`); ``previous``
    (:func:`previous_models`) are the models a warm start starts from. ``weights``: the rows'
    positive weights (:mod:`skgpsparse._row_weights`; None: an unweighted fit).
    """
    index = clf.__dict__.pop("_row_index", None)  # train_rows' (a stream's refits: None)
    n_classes = clf.classes_.size
    pairwise = n_classes > 2 and clf.multi_class == "one_vs_one"
    params = binary_params(clf, X.shape[0], X.shape[1], n_classes)
    if weights is not None:
        if params["posterior"] != "all_rows" and clf.hyperparameter_objective == "evidence":
            refuse_weights(clf, weights, "posterior='basis' with hyperparameter_objective="
                           "'evidence'", "use the NLP objective or posterior='all_rows'")
        if params["posterior"] != "all_rows" and clf.n_restarts and clf.optimizer is not None:
            refuse_weights(clf, weights, "posterior='basis' with n_restarts > 0 (its held-out "
                           "choice of a start)", "use n_restarts=0 or posterior='all_rows'")
        params["sample_weight"] = weights
    # before the first n x max_basis allocation: one binary fit, or n_jobs of them at once
    n_parallel = min(effective_n_jobs(clf.n_jobs), n_classes) if n_classes > 2 else 1
    kappa = getattr(params["selector"], "working_set_size", None) or 0
    # the default kernel's per-feature trial has n_features - 1 more hyperparameters
    n_theta = params["kernel"].n_dims + (X.shape[1] - 1) * params["per_feature_choice"]
    if auto_chooses(clf, params["posterior"]):  # the largest size tried: rows and memory
        params["basis_cap"] = auto_basis_cap(X.shape[0], X.shape[1], n_theta,
                                             clf.optimizer is not None, kappa, n_parallel)
    fit_memory(
        X.shape[0], X.shape[1], params.get("basis_cap") or params["max_basis"], n_theta,
        clf.optimizer is not None, kappa, n_parallel, params["posterior"] == "all_rows",
    ).check()
    rng = check_random_state(clf.random_state)
    restarts = (clf.n_restarts, clf.validation_fraction)
    n_models = len(class_pairs(n_classes)) if pairwise else 1 if n_classes == 2 else n_classes
    per_model = _warm_params(params, previous, X, n_models)
    if n_classes == 2:
        y_pm = np.where(y_enc == 1, 1.0, -1.0)
        store_binary(clf, _fit_binary(per_model[0], restarts, X, y_pm, rng))
    elif pairwise:
        clf.multi_class_ = multi_class_mode(clf, params["posterior"])
        store_one_vs_rest(clf, fit_one_vs_one(per_model, restarts, X, y_enc, rng, clf.n_jobs))
    else:
        models, clf.multi_class_ = one_vs_rest(clf, per_model, restarts, X, y_enc, rng)
        set_logit_weight(clf, models, X.shape[0], lambda rows: (X[rows], y_enc[rows]), weights)
        store_one_vs_rest(clf, models)
    if index is not None:  # basis_indices_ index the X given (zero-weight rows included)
        clf.basis_indices_ = (index[clf.basis_indices_] if n_classes == 2
                              else [index[b] for b in clf.basis_indices_])
    return clf


def train_rows(clf, X, y, sample_weight=None):
    """``(X, y_enc, weights)`` of an in-memory fit of ``clf`` on the validated ``X, y``: the
    rows of positive weight (:func:`~skgpsparse._row_weights.weighted_rows`, ``sample_weight``
    times ``clf.class_weight``; ``weights`` None when all one) and their class indices, with
    ``clf.classes_`` set; a ValueError when one class is left. Under the basis posterior with
    at most ``max_basis`` distinct rows, repeated rows come once with their summed weight
    (:func:`~skgpsparse._row_weights.distinct_rows`). The rows' positions in the ``X`` given
    are kept for :func:`fit_models`, whose ``basis_indices_`` then index that ``X``."""
    X, y, weights, index = weighted_rows(X, y, sample_weight, clf.class_weight)
    clf.classes_, y_enc = encode_labels(y)
    if (clf.posterior == "basis" and clf.hyperparameter_objective == "nlp"
            and not (clf.n_restarts and clf.optimizer is not None)):
        # every distinct row fits in the basis: repeated rows as weights, in a fixed order
        X, y_enc, weights, first = distinct_rows(X, y_enc, weights, start_size(clf.max_basis))
        if first is not None:
            index = first if index is None else index[first]
    clf._row_index = index  # the rows' positions in the X given (fit_models maps basis_indices_)
    if clf.classes_.size == 1:
        raise ValueError(
            f"{type(clf).__name__} requires 2 or more distinct classes; got 1 class "
            f"(only class {clf.classes_[0]} is present)"
        )
    return X, y_enc, weights


def begin_fit(clf, X, private):
    """What ``clf.fit(X, ...)`` does first: take the previous models a warm start starts from
    (:func:`previous_models`), clear the previous fitted state (``private``: the private
    names) and note the fit's :class:`~skgpsparse._warm_start.FitSignature` (a fit that then
    fails puts the previous one back: :func:`~skgpsparse._fitted_state.keeps_previous_fit`).
    Returns the previous models or None. The inner fit of structured inputs (its kernel an
    :class:`~skgpsparse.kernels._structured.IndexedKernel`, :func:`fit_indexed`) finds the
    state cleared and keeps the outer fit's signature."""
    if isinstance(clf.kernel, IndexedKernel):
        return None
    signature = fit_signature(clf.kernel, X, clf.multi_class)
    previous = previous_models(clf, signature)
    reset_fitted_state(clf, private)
    clf._fit_signature = signature
    return previous


def previous_models(clf, signature):
    """The binary models of ``clf``'s last fit if ``warm_start`` is set and the fit of
    ``signature`` may start from it (:func:`~skgpsparse._warm_start.warm_start_allowed`:
    the same kernel structure, kind of input, width and multi_class, else a warning), else
    None."""
    if not getattr(clf, "warm_start", False) or not hasattr(clf, "classes_"):
        return None
    if not warm_start_allowed(clf, signature):
        return None
    return [clf._binary] if clf.classes_.size == 2 else list(clf.estimators_)


def _warm_params(params, previous, X, n_models):
    """``params`` of each binary model, started from ``previous`` models (a warm start).

    A warm start takes each previous model's kernel and bias as the start of the
    hyperparameters (no search for a better start), and its basis as the first round's
    start when every basis vector is still the row it was (the same ``X``, or rows appended
    to it); it needs the same classes (and :func:`previous_models` the same kernel structure,
    inputs and features), and warns and starts cold otherwise.
    """
    if previous is None:
        return [params] * n_models
    if len(previous) != n_models:  # the kernel, inputs and width: previous_models
        warnings.warn(
            f"SparseGPClassifier: warm_start=True ignored because the previous fit had "
            f"{len(previous)} binary model(s), this one has "
            f"{n_models} (other classes); fitting from scratch.",
            WarmStartWarning,
        )
        return [params] * n_models
    out = []
    for model in previous:
        basis = np.asarray(model.basis_indices_)[: params["max_basis"]]
        same = basis.size and basis.max() < X.shape[0] and np.array_equal(
            X[basis], model.basis_vectors_[: basis.size]
        )
        warm = (float(model.bias_), basis if same else None)
        out.append(dict(params, kernel=model.kernel_, warm=warm))
    return out


def store_binary(clf, model):
    """The fitted attributes of a two-class ``clf`` from its binary model."""
    clf._binary = model
    for name in ("kernel_", "bias_", "n_iter_", *PER_MODEL_ATTRIBUTES):
        setattr(clf, name, getattr(model, name))
    clf.n_basis_ = len(model.basis_indices_)
    clf.log_marginal_likelihood_value_ = model.log_marginal_likelihood_value_
    clf._predictors = [model._predictor]
    return clf


def store_one_vs_rest(clf, models):
    """The fitted attributes of ``clf`` from its binary models (one vs rest, or one per pair
    with ``clf.multi_class_ == "one_vs_one"``)."""
    clf.estimators_ = models
    clf.kernels_ = [est.kernel_ for est in models]
    # scikit-learn's kernel_: a CompoundKernel of the binary models' kernels (the same
    # objects, so that log_marginal_likelihood's clone_kernel=False moves it too); the shared
    # fit's one kernel, the first class's (every class's kernel has its theta), unless a
    # class keeps its own (multiclass._class_kernels)
    shared = getattr(clf, "multi_class_", None) == "shared" and not any(
        getattr(est, "_own_kernel", False) for est in models)
    clf.kernel_ = clf.kernels_[0] if shared else CompoundKernel(clf.kernels_)
    clf.bias_ = np.array([est.bias_ for est in models])
    clf.n_iter_ = np.array([est.n_iter_ for est in models])
    clf.n_basis_ = np.array([len(est.basis_indices_) for est in models])
    for name in PER_MODEL_ATTRIBUTES:
        setattr(clf, name, [getattr(est, name) for est in models])
    predictors = [est._predictor for est in models]
    if getattr(clf, "multi_class_", None) == "one_vs_one":
        clf._predictors = PairPredictors(predictors, clf.classes_.size)
    else:  # the combination's t (multiclass._combination.set_logit_weight)
        clf._predictors = OneVsRestPredictors(predictors, getattr(clf, "logit_weight_", 0.0))
    # as scikit-learn's one-vs-rest GPC: the mean over the binary models
    clf.log_marginal_likelihood_value_ = float(
        np.mean([est.log_marginal_likelihood_value_ for est in models])
    )
    return clf
