"""The shared one-vs-rest fit (:mod:`skgpsparse.classification.multiclass._shared_learning`) in
memory: its stages after the learning.

The shared kernel and the biases are learned on a class-stratified subsample
(:func:`~skgpsparse.classification.multiclass._shared_learning.learn_shared`); then each class
selects its own basis under them (the binary fit's selection, :func:`shared_stage`), tries its own
kernel on that basis (:mod:`skgpsparse.classification.multiclass._class_kernels`; kept where its
evidence pays the charge, with its basis selected again under it) and runs EP on all rows
(:func:`fit_shared`). The selection sees the rows the binary fit learns and selects on:
every row up to ``learning_rows``, the binary fit's random subsample above it
(:func:`~skgpsparse._learning_rows.learning_subsample`), so that EP is the only pass over every
row. Above ``learning_rows`` that EP is plain (damped) from one ADF pass, the step a partitioned
fit runs on its row partitions (:mod:`skgpsparse.classification.partitioned._shared_fit`), whose
models then equal these; below it, where a partitioned fit gathers every row and runs this fit
itself, it is Anderson-accelerated (:mod:`skgpsparse.inference._ep_acceleration`: on pmlb letter
14-25 sweeps a class against 18-200 plain).
"""

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from ..._learning_rows import learning_subsample, with_basis_rows
from ..._row_weights import total_weight
from ...inference._ep import all_rows_ep
from ...inference._sparse_prior import SparsePrior, reusing_priors
from ...latent._model import _FIT_BLAS_THREADS, LatentSparseGP
from ...latent.learning._basis_size import choose_basis_size
from ...latent.objectives._ep_evidence import PRIOR
from ._class_kernels import class_kernel, trial_rows
from ._shared_learning import learn_shared

__all__ = ["fit_shared", "restore_training_rows", "selection_rows", "shared_stage"]

# Each class's own-kernel trial (:mod:`._class_kernels`); False gives the fit without it (the
# package's tests compare the two).
CLASS_KERNELS = True


def selection_rows(params, n, rng):
    """Sorted indices of the rows each class selects its basis on, ``None`` for all ``n``:
    the binary fit's learning subsample (none with fixed hyperparameters, as there)."""
    if params["optimizer"] is None:
        return None
    return learning_subsample(params["learning_rows"], n, params["max_basis"], rng)


def shared_stage(params, X, y_enc, n_classes, n, rng, *, warm=None, bases=None,
                 bias_offset=0.0, n_jobs=None):
    """The shared kernel and biases, each class's own kernel where it pays, and each class's
    basis, on the rows ``X, y_enc``.

    Parameters
    ----------
    params : dict
        Arguments of ``LatentSparseGP`` (``posterior="all_rows"``).
    X : ndarray of shape (m, n_features)
        The selection rows (:func:`selection_rows`).
    y_enc : ndarray of shape (m,)
        Their class indices.
    n_classes : int
    n : int
        The training rows (the shared learning's size grows with them).
    rng : numpy.random.RandomState
        Draws the learning rows, the selectors' working sets and a seed per class.
    warm : list of float, default=None
        Each class's starting bias (``None``: the class balance).
    bases : list of (ndarray or None), default=None
        Each class's previous basis (indices of ``X``), its selection's start.
    bias_offset : float, default=0.0
        Added to every starting bias (a restart).
    n_jobs : int, default=None
        Jobs (joblib) over the classes' kernel trials and selections.

    Returns
    -------
    chosen : list of (Kernel, float, ndarray, list of float, ndarray or None, bool)
        Each class's kernel and bias (the shared ones, or its own where its trial pays:
        :mod:`skgpsparse.classification.multiclass._class_kernels`), its basis (indices of
        ``X``), its exchange curve, its size curve (``max_basis="auto"``,
        :mod:`skgpsparse.latent.learning._basis_size`) and whether the kernel is its own.
    shared : (list of float, int)
        The learning's loss curve and rounds.
    """
    with threadpool_limits(limits=_FIT_BLAS_THREADS, user_api="blas"):
        kernel, biases, n_iter, model = learn_shared(params, X, y_enc, n_classes, n, rng,
                                                     warm, bias_offset)
    seeds = rng.randint(np.iinfo(np.int32).max, size=n_classes)
    bases = [None] * n_classes if bases is None else bases
    n_trial = None  # the training rows' summed weights, estimated from the selection rows'
    if params["optimizer"] is not None and CLASS_KERNELS:
        n_trial = n * total_weight(y_enc.size, params.get("sample_weight")) / y_enc.size
    chosen = Parallel(n_jobs=n_jobs)(
        delayed(_class_basis)(params, kernel, biases[k], bases[k], X,
                              np.where(y_enc == k, 1.0, -1.0), seeds[k], n_trial)
        for k in range(n_classes)
    )
    for k, (*_, line) in enumerate(chosen):
        if line:
            model._progress.line(f"class {k}: {line}")
    return [c[:-1] for c in chosen], (model.loss_curve_, n_iter)


def _class_basis(params, kernel, bias, basis, X, y, seed, n_trial=None):
    """One class's kernel and bias, basis (indices of ``X``), exchange curve,
    ``max_basis="auto"``'s size curve (None with an int), whether the kernel is its own and
    its kernel trial's line (for ``verbose``).

    The binary fit's selection under the shared kernel and bias, from ``basis`` (a warm
    start) if given, at the size the class chooses there; then, given ``n_trial`` (the
    training rows the trial's charge is for), the class's own-kernel trial
    (:func:`~skgpsparse.classification.multiclass._class_kernels.class_kernel`) on that basis,
    and if it keeps its own kernel the selection again under it.
    """
    with threadpool_limits(limits=_FIT_BLAS_THREADS, user_api="blas"):
        binary = LatentSparseGP(**dict(params, warm=None if basis is None
                                                  else (bias, basis)))
        rng, size_curve = check_random_state(seed), None
        if binary.basis_cap is not None:  # max_basis="auto": the class's own size, from 100
            binary.max_basis, size_curve = choose_basis_size(binary, kernel, X, y, bias, rng,
                                                             binary.basis_cap,
                                                             start=binary.max_basis)
            if size_curve is not None and binary._warm_basis is not None:
                binary._warm_basis = binary._warm_basis[: binary.max_basis]
        chosen = binary._select(kernel, X, y, bias, rng).basis_indices.copy()
        curve, own, line = [float(v) for v in binary._last_exchange_curve], False, ""
        if n_trial is not None:
            rows = trial_rows(y.size)
            weights = binary.sample_weight
            kernel, bias, own, line = class_kernel(
                params, kernel, bias, X[rows], y[rows], X[chosen], n_trial,
                None if weights is None else weights[rows])
            if own:  # the basis under the class's own kernel
                chosen = binary._select(kernel, X, y, bias, rng).basis_indices.copy()
                curve = [float(v) for v in binary._last_exchange_curve]
        return kernel, bias, chosen, curve, size_curve, own, line


def fit_shared(params, X, y_enc, n_classes, rng, *, warm=None, bias_offset=0.0,
               n_jobs=None):
    """The one-vs-rest binary models of a shared fit in memory (module docstring).

    Parameters
    ----------
    params : dict
        Arguments of ``LatentSparseGP``
        (:func:`~skgpsparse.classification._fitting.binary_params`), with ``posterior="all_rows"``;
        its kernel is the start of the shared one.
    X : ndarray of shape (n, n_features)
    y_enc : ndarray of shape (n,)
        Class indices ``0..n_classes-1``.
    n_classes : int
    rng : numpy.random.RandomState
        Draws the selection rows, the learning rows, the selector's working sets (if it
        draws) and a seed per class for its own selection.
    warm : list of (bias, basis indices or None), default=None
        A warm start (:func:`~skgpsparse.classification._fitting._warm_params`), one per class: the
        biases start there (not at the class balance), and each class's selection starts from its
        previous basis when that is given (which joins the selection rows).
    bias_offset : float, default=0.0
        Added to every class's starting bias (a restart,
        :mod:`skgpsparse.classification.multiclass._one_vs_rest`).
    n_jobs : int, default=None
        Jobs (joblib) over the classes' own stages, their basis selection and EP on all rows;
        the shared learning runs in this process. The models do not depend on it.

    Returns
    -------
    models : list of LatentSparseGP
        One per class, fitted: the shared kernel, their own basis, bias and EP sites on all
        rows; the shared fit's ``loss_curve_``, ``n_iter_`` and exchange curve.
    """
    rows = selection_rows(params, y_enc.size, rng)
    bases = None if warm is None else [w[1] for w in warm]
    X_s, y_s = X, y_enc
    if rows is not None:
        rows, bases = with_basis_rows(rows, [None] * n_classes if bases is None else bases)
        X_s, y_s = X[rows], y_enc[rows]
    weights = params.get("sample_weight")
    chosen, shared = shared_stage(
        params if rows is None or weights is None else dict(params, sample_weight=weights[rows]),
        X_s, y_s, n_classes, y_enc.size, rng, bias_offset=bias_offset, n_jobs=n_jobs,
        warm=None if warm is None else [w[0] for w in warm], bases=bases,
    )
    models = Parallel(n_jobs=n_jobs)(
        delayed(_class_model)(params, shared, kernel, bias,
                              basis if rows is None else rows[basis], curve, X,
                              np.where(y_enc == k, 1.0, -1.0), rows is None, size_curve, own)
        for k, (kernel, bias, basis, curve, size_curve, own) in enumerate(chosen)
    )
    return restore_training_rows(models, X, y_enc, weights)


def restore_training_rows(models, X, y_enc, weights=None):
    """``models`` (one per class), each all-rows model given back its training rows (and
    their ``weights``): a model back from a worker process was pickled without them, and the
    driver has them (``log_marginal_likelihood(theta)`` and ``partial_fit`` of the all-rows
    posterior read them)."""
    for k, binary in enumerate(models):
        if binary.posterior == "all_rows" and not hasattr(binary, "_train"):
            binary._train = (X, np.where(y_enc == k, 1.0, -1.0))
            binary.sample_weight = weights
    return models


@reusing_priors()
def _class_model(params, shared, kernel, bias, basis, curve, X, y, accelerate,
                 size_curve=None, own=False):
    """One class's binary model: EP over all rows under its kernel (the shared one, or its own
    if ``own``), its bias and its ``basis`` (the prior and the converged EP run are reused by
    its predictor and evidence)."""
    with threadpool_limits(limits=_FIT_BLAS_THREADS, user_api="blas"):
        binary = LatentSparseGP(**params)
        binary.basis_indices_ = basis
        prior = SparsePrior(kernel, X, X[basis], PRIOR, weights=binary.sample_weight)
        tau, nu, _, _ = all_rows_ep(prior, y, bias, accelerate=accelerate,
                                    likelihood=binary.likelihood)
        loss_curve, n_iter = shared
        binary.loss_curve_, binary.n_iter_ = list(loss_curve), n_iter
        binary.exchange_loss_curve_ = list(curve)
        binary.basis_size_curve_ = size_curve
        binary._own_kernel = own
        # a kernel object per class, as the independent fits' (log_marginal_likelihood's
        # clone_kernel=False sets each class's theta in place)
        binary.kernel_, binary.bias_ = clone(kernel), float(bias)
        binary.site_precision_ = tau
        binary.site_mean_ = np.divide(nu, tau, out=np.zeros(y.size), where=tau > 0)
        binary._train = (X, y)
        binary._set_fitted_basis(X, y)
        return binary
