"""How the shared fit's one-vs-rest probabilities combine into class probabilities.

Class ``k``'s binary model gives ``p_k = P(y = k | x)`` against the rest. scikit-learn's
one-vs-rest normalises them, ``p_k / sum_j p_j``; read as independent evidence (each binary
model's odds a likelihood ratio for its class), they combine as ``p_k prod_{j != k} (1 - p_j)``
normalised, the softmax of the logits ``log p_k - log(1 - p_k)``. The shared fit uses the
family between the two,

    P(y = k | x) = softmax_k( log p_k - t log(1 - p_k) ),    0 <= t <= 1,

(``t = 0`` the normalisation, ``t = 1`` the logit softmax), with ``t`` chosen on the training
rows: the multi-class log loss of each row's leave-one-out predictive (EP's cavity of every
class model, :mod:`skgpsparse.latent._leave_one_out`), so the rows are not judged by posteriors
that saw them and no row is held out. Each class's score is affine in ``t``, so the loss (a
log-sum-exp of affine functions minus an affine one) is convex in ``t``: a bounded scalar
search finds its minimum. Near-separable sets with many classes (letter, pendigits) choose
``t`` near 1, overlapping ones (sleep, connect-4) ``t = 0``: benchmarks/README.md, "Many
classes".
"""

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from ...latent._leave_one_out import leave_one_out_moments

__all__ = [
    "LOO_ROWS", "choose_logit_weight", "class_columns", "combined_log_proba", "loo_rows",
    "set_logit_weight",
]

# Rows whose leave-one-out loss chooses t: every row up to this many, else this many evenly
# spaced (one number is chosen; a fit on more rows pays one class-model pass over these).
LOO_ROWS = 20_000


def loo_rows(n):
    """The training rows (positions) that choose ``t``: all ``n``, or :data:`LOO_ROWS` evenly
    spaced (the same rows in memory and on partitions)."""
    if n <= LOO_ROWS:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, LOO_ROWS).round().astype(np.intp))


def combined_log_proba(log_p, log_q, t):
    """Log class probabilities from each class's ``log p_k`` and ``log(1 - p_k)`` (columns)."""
    if t == 0.0:  # the normalisation itself (scikit-learn's one-vs-rest arithmetic)
        scores = log_p
    else:
        scores = log_p - t * log_q
    return scores - logsumexp(scores, axis=1, keepdims=True)


def class_columns(models):
    """``log p_k`` and ``log(1 - p_k)``, a column per class, from each class model's
    ``(likelihood, mean, var)``: its latent marginal ``N(mean, var)`` at the rows."""
    log_p, log_q = [], []
    for likelihood, mean, var in models:
        log_p.append(likelihood.log_predictive(1.0, mean, var))
        log_q.append(likelihood.log_predictive(-1.0, mean, var))
    return np.column_stack(log_p), np.column_stack(log_q)


def _loss(log_p, log_q, labels, weights, t):
    log_proba = combined_log_proba(log_p, log_q, t)
    chosen = log_proba[np.arange(labels.size), labels]
    return -float(np.average(chosen, weights=weights))


def choose_logit_weight(models, X, labels, rows, weights=None):
    """``t`` of the shared fit's models: the minimum over ``[0, 1]`` of the leave-one-out
    multi-class log loss on the training rows ``rows`` (their inputs ``X`` and class indices
    ``labels``; ``weights`` the rows' weights in the fit, None for one each: a row of weight
    ``c`` counts as ``c`` rows, each left out on its own, as when the rows are repeated).

    Returns
    -------
    t : float
    losses : tuple of float
        The loss at ``t = 0``, at ``t = 1`` and at the chosen ``t`` (for ``verbose``).
    """
    log_p, log_q = class_columns(
        (model._predictor.likelihood, *leave_one_out_moments(model, X, rows))
        for model in models
    )
    loss = lambda t: _loss(log_p, log_q, labels, weights, t)  # noqa: E731
    found = minimize_scalar(loss, bounds=(0.0, 1.0), method="bounded",
                            options={"xatol": 1e-3})
    t = float(found.x)
    ends = loss(0.0), loss(1.0)
    # the bounded search never evaluates the ends themselves: keep one if it is lower
    if min(ends) <= found.fun:
        t = 0.0 if ends[0] <= ends[1] else 1.0
    return t, (ends[0], ends[1], loss(t))


def set_logit_weight(clf, models, n, take, weights=None):
    """``clf.logit_weight_``: chosen (:func:`choose_logit_weight`) for the shared fit's
    ``models`` on ``n`` training rows, 0 for any other multi-class fit (scikit-learn's
    normalisation).

    ``take(rows)`` gives the inputs and class indices of the training rows at positions
    ``rows`` (an array in memory, a row store's gather on partitions); ``weights`` are the
    training rows' weights in the fit (None: one each).
    """
    clf.logit_weight_ = 0.0
    if clf.multi_class_ != "shared":
        return
    rows = loo_rows(n)
    X, labels = take(rows)
    t, (at_0, at_1, at_t) = choose_logit_weight(
        models, X, labels, rows, None if weights is None else weights[rows]
    )
    clf.logit_weight_ = t
    if clf.verbose:
        print(f"[{type(clf).__name__}] class probabilities: logit weight t = {t:.3f} "
              f"(leave-one-out log loss on {rows.size} rows: {at_0:.4f} at t = 0, "
              f"{at_1:.4f} at t = 1, {at_t:.4f} chosen)", flush=True)
