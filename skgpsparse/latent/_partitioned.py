"""The latent model's all-rows posterior on row partitions: the in-memory model.

For the classifier's binary models (``positive``: the class against the rest) and the
regressor's non-Gaussian ones (``positive``: a
:class:`~skgpsparse.inference._ep_partitioned.Targets`, the real targets' scaling).

Learning runs on the driver, with the in-memory code, over the rows learning sees
(:mod:`skgpsparse._learning_rows`), gathered from the partitions: every row when there are at most
``learning_rows`` (then the whole binary fit is the in-memory one, on rows that fit in the driver's
memory by that rule), else the in-memory fit's random subsample, drawn by the same random state
(:func:`~skgpsparse.latent.learning._ep_rounds._learn_rounds` on it). EP over every row
under the kept kernel, bias and basis then runs on the partitions
(:mod:`skgpsparse.inference._ep_partitioned`), as the in-memory fit's
:func:`~skgpsparse.latent.learning._ep_rounds._round_on_all_rows` does in memory. With
fixed hyperparameters above that size the basis is selected on the partitions
(the classifier's ``PartitionedBinary`` ADF state) and EP runs there too.
"""

import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from .._learning_rows import learning_size, learning_subsample
from .._row_weights import total_weight
from ..inference._ep_partitioned import encode_targets, partitioned_ep
from ._model import _FIT_BLAS_THREADS, LatentSparseGP
from ._predictors import AllRowsPredictor
from .learning._ep_rounds import _learn_rounds
from .learning._hyperparameters import check_bounds
from .learning._refine import refine_basis
from .objectives._hyperprior import with_length_scale_prior

__all__ = ["driver_subsample", "fit_binary_on_rows", "gathered_rows", "partitioned_posterior"]


def gathered_rows(rows, params):
    """``(X, labels)`` of every row when learning sees them all (the in-memory fit draws no
    subsample there), else ``None``."""
    m = learning_size(params["learning_rows"], params["max_basis"])
    if m is None or rows.n > m:
        return None
    return rows.take(np.arange(rows.n))


def driver_subsample(learning_rows, n, max_basis, rng, what):
    """Sorted indices of the rows a partitioned fit's learning gathers to the driver: the in-memory
    fit's subsample (:func:`~skgpsparse._learning_rows.learning_subsample`, the same draw).
    ``learning_rows=None`` (every row) is an error naming ``what`` needs it."""
    if learning_rows is None:
        raise ValueError(
            f"{what} on a partitioned array needs learning_rows ('auto' or an int): learning runs "
            "on the driver over that many rows. Got learning_rows=None."
        )
    return learning_subsample(learning_rows, n, max_basis, rng)


def _labels(labels, positive):
    return encode_targets(labels, positive)


def fit_binary_on_rows(params, rows, positive, rng, gathered, partitioned_binary):
    """The binary all-rows model of class ``positive`` against the rest.

    ``gathered``: :func:`gathered_rows` (the in-memory fit on them), or ``None`` (learning on
    a subsample, or a fixed-hyperparameter selection on the partitions by the model
    ``partitioned_binary()`` returns, and EP on the partitions).
    """
    if gathered is not None:
        X, labels = gathered
        return LatentSparseGP(**params).fit(X, _labels(labels, positive), rng)
    # the in-memory fit's BLAS threads (p x p and p x block work, _binary.py)
    with threadpool_limits(limits=_FIT_BLAS_THREADS, user_api="blas"):
        return _fit_partitioned(LatentSparseGP(**params), rows, positive, rng,
                                partitioned_binary)


def _fit_partitioned(model, rows, positive, rng, partitioned_binary):
    n = rows.n
    if model.optimizer is not None:
        idx = driver_subsample(model.learning_rows, n, model.max_basis, rng,
                               "posterior='all_rows' with learned hyperparameters")
        weights = model.sample_weight
        if weights is not None:  # the learning rows' weights; zero weights stay out
            idx = idx[weights[idx] > 0]
            model._row_weights = weights[idx]
        X_l, labels = rows.take(idx)
        model._progress.line(
            f"learning on {idx.size} of {n} rows gathered from {rows.n_partitions} "
            "partitions; EP on all of them on the partitions"
        )
        best, n_iter = _learn_rounds(model, X_l, _labels(labels, positive), rng,
                                     subsample=True)
        _, kernel, bias, basis, _, curve, model.likelihood = best
        basis, X_u = idx[basis], X_l[basis]
    else:
        selector = partitioned_binary()
        kernel = clone(model.kernel)
        bias = selector._initial_bias(kernel, None, None) + model.bias_offset
        state = selector._select(kernel, None, None, bias, rng)
        basis = state.basis_indices.copy()
        state.release()  # its p x n block on the partitions, before EP's comes
        curve, n_iter = selector._last_exchange_curve, 1
        X_u = rows.take(basis)[0]
    if model.refine_basis:
        loss = _refined(model, rows, positive, rng, (None, kernel, bias, basis, (None, None),
                                                     curve, model.likelihood), X_u)
    else:
        loss = partitioned_posterior(model, rows, positive, kernel, bias, basis, X_u, curve)
    if model.optimizer is None:
        model.loss_curve_ = [loss]
    else:
        check_bounds(model, model.kernel_)
    model.n_iter_ = n_iter
    return model


def _refined(model, rows, positive, rng, best, X_u):
    """The in-memory fit's refinement (``_ep_rounds._refined``): the basis inputs refined on
    the driver over the rows it draws (every row, or ``refine_rows``' subsample, gathered;
    EP on them from one ADF pass); then EP on the partitions under them."""
    idx = learning_subsample(model.refine_rows, rows.n, model.max_basis, rng)
    idx = np.arange(rows.n) if idx is None else idx
    X_r, labels = rows.take(idx)
    weights = None if model.sample_weight is None else model.sample_weight[idx]
    refined, Z, model.refine_iter_ = refine_basis(model, best, X_r, _labels(labels, positive),
                                                  X_u, model.refine_basis, weights)
    _, kernel, bias, basis, _, curve, model.likelihood = refined
    return partitioned_posterior(model, rows, positive, kernel, bias, basis, Z, curve)


def partitioned_posterior(model, rows, positive, kernel, bias, basis, X_u, curve):
    """``model``'s posterior by EP over every row on the partitions (from one ADF pass) under
    ``kernel``, ``bias`` and the basis ``X_u = X[basis]``; returns the loss (``-log Z`` per
    row with the length-scale hyperprior; the partitions hold the rows' weights, if any:
    :func:`~skgpsparse.inference._ep_partitioned.set_row_weights`)."""
    n = rows.n
    value, post, L, (tau, nu) = partitioned_ep(rows, positive, kernel, X_u, bias, "adf",
                                               likelihood=model.likelihood)
    n_eff = total_weight(n, model.sample_weight)
    loss = float(with_length_scale_prior(lambda theta, eval_gradient=False: value / n_eff,
                                         kernel, n_eff)(np.append(kernel.theta, bias), False))
    model._progress.line(f"EP on all {n} rows (partitions): -logZ/n {loss:.6f}")
    model.kernel_, model.bias_, model.basis_indices_ = kernel, bias, basis
    model.exchange_loss_curve_ = [float(v) for v in curve]
    model.site_precision_ = tau
    model.site_mean_ = np.divide(nu, tau, out=np.zeros(n), where=tau != 0)
    model._train = None  # the rows stay in the partitions
    model.basis_vectors_ = np.asarray(X_u, dtype=np.float64)
    model._basis_labels = _labels(rows.take(basis)[1], positive)
    model._predictor = AllRowsPredictor.from_posterior(
        kernel, model.basis_vectors_, L, post.L_B, post.mean_w, bias, model.likelihood
    )
    model.log_marginal_likelihood_value_ = -value
    return loss
