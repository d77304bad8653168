"""Prediction of the sparse GP classifier: the estimator's outputs from its binary models'
latent moments (:mod:`skgpsparse.latent._predictors`) by blocks of rows.

The class probabilities are the likelihood's predictive probabilities under each model's latent
marginal ``N(f_* + b; mean, var)`` (:mod:`skgpsparse.likelihoods`; for the probit
``Phi(mean / sqrt(1 + var))``, validation paper eq. (2.7)); with more than two classes they
combine per row as :mod:`skgpsparse.classification.multiclass._combination` says (the
one-vs-rest normalisation, or the shared fit's family ``softmax(log p_k - t log(1 - p_k))``).
One model per pair of classes (``multi_class="one_vs_one"``) gives votes, not probabilities
(:func:`pair_votes`).
"""

import numpy as np
from sklearn.utils.multiclass import _ovr_decision_function

from ..rows._blocks import block_rows, map_row_blocks
from .multiclass._combination import class_columns, combined_log_proba

__all__ = [
    "OneVsRestPredictors", "PairPredictors", "by_row_blocks",
    "check_binary_latent", "check_probabilities", "class_scores", "labels", "latent",
    "log_proba", "margins", "pair_votes", "proba",
]


def by_row_blocks(output, X, predictors):
    """``output(X_block, predictors)`` over blocks of rows of ``X``, into outputs made once.

    A block is as many rows as the largest binary model's ``rows x p`` kernel block allows
    (about 32 MB), so each model computes it in one piece; the call holds one block's arrays
    beyond its input and output, whatever the number of rows.
    """
    if X.shape[0] <= 1:  # a single row is one block: nothing to plan (its latency)
        return output(X, predictors)
    n_rows = block_rows(max(predictor.cross.Z.shape[0] for predictor in predictors))
    return map_row_blocks(lambda X_block: output(X_block, predictors), X, n_rows)


def check_binary_latent(n_classes):
    """scikit-learn's GPC refuses the latent mean and variance of more than two classes
    (``decision_function`` gives the one-vs-rest margins)."""
    if n_classes > 2:
        raise ValueError(
            "Returning the mean and variance of the latent function f is only supported for "
            f"binary classification, received {n_classes} classes."
        )


def latent(X, predictors):
    """``(mean, var)`` of ``f_* + b`` per binary model: 1-D for one, a column each for more."""
    out = [predictor.latent_mean_and_variance(X) for predictor in predictors]
    if len(out) == 1:
        return out[0]
    return np.column_stack([m for m, _ in out]), np.column_stack([v for _, v in out])


class OneVsRestPredictors(list):
    """The predictors of the one-vs-rest models, one per class, and ``logit_weight``, the
    ``t`` of their combination (:mod:`~skgpsparse.classification.multiclass._combination`;
    0: scikit-learn's normalisation)."""

    def __init__(self, predictors, logit_weight=0.0):
        super().__init__(predictors)
        self.logit_weight = logit_weight


class PairPredictors(list):
    """The predictors of the one-vs-one models, in the order of the pairs ``(i, j)``, ``i < j``
    (:func:`~skgpsparse.classification.multiclass._one_vs_one.class_pairs`), and the number of
    classes ``n_classes``."""

    def __init__(self, predictors, n_classes):
        super().__init__(predictors)
        self.n_classes = n_classes


def pair_votes(X, predictors):
    """scikit-learn's ``OneVsOneClassifier.decision_function`` of the pairs' models.

    Each pair ``(i, j)`` votes for ``j`` where its ``P(j | x, i or j)`` is above a half (its
    predicted class) and for ``i`` otherwise; the class's votes plus its summed confidences
    (``+P(j | ...)`` for ``j``, ``-P(j | ...)`` for ``i``) mapped into ``(-1/3, 1/3)``, which
    break ties without turning a vote (``sklearn.utils.multiclass._ovr_decision_function``).
    The confidences are the probabilities, as for scikit-learn's GPC (its binary models have
    no ``decision_function``).
    """
    p = [proba(X, [predictor]) for predictor in predictors]
    # each pair's binary predict: the argmax of its two probabilities, ties to class i
    predictions = np.column_stack([np.argmax(p_k, axis=1) for p_k in p])
    confidences = np.column_stack([p_k[:, 1] for p_k in p])
    return _ovr_decision_function(predictions, confidences, predictors.n_classes)


def _pairwise(predictors):
    return isinstance(predictors, PairPredictors)


def margins(X, predictors):
    """The moderated margins ``Phi^-1(P(y = +1 | x_*))``: 1-D for one model, else a column each
    (one vs one: :func:`pair_votes`)."""
    if _pairwise(predictors):
        return pair_votes(X, predictors)
    out = [predictor.moderated_margin(X) for predictor in predictors]
    return out[0] if len(out) == 1 else np.column_stack(out)


def class_scores(X, predictors):
    """What ``predict`` takes the argmax of: the probabilities, or one vs one the votes."""
    return pair_votes(X, predictors) if _pairwise(predictors) else proba(X, predictors)


def labels(clf, X, predictors):
    """``clf.predict``: the class of ``clf.classes_`` of highest probability (one vs one: of
    most votes). The argmax of ``predict_proba``'s own arithmetic: margins within rounding of
    each other give equal probabilities, and the tie goes to the first class."""
    return clf.classes_[np.argmax(class_scores(X, predictors), axis=1)]


def check_probabilities(predictors):
    """scikit-learn's GPC has no probabilities with one model per pair of classes."""
    if _pairwise(predictors):
        raise ValueError(
            "one_vs_one multi-class mode does not support predicting probability estimates. "
            "Use one_vs_rest mode instead."
        )


def log_proba(X, predictors):
    """Log class probabilities, in log space; one-vs-rest combined (:func:`_combined`)."""
    check_probabilities(predictors)
    if len(predictors) == 1:
        predictor = predictors[0]
        mean, var = predictor.latent_mean_and_variance(X)
        lik = predictor.likelihood
        return np.column_stack([lik.log_predictive(-1.0, mean, var),
                                lik.log_predictive(1.0, mean, var)])
    return _combined(X, predictors)


def proba(X, predictors):
    """Class probabilities; one-vs-rest combined per row (:func:`_combined`)."""
    check_probabilities(predictors)
    if len(predictors) == 1:
        predictor = predictors[0]
        mean, var = predictor.latent_mean_and_variance(X)
        lik = predictor.likelihood
        return np.column_stack([lik.predictive_probability(-1.0, mean, var),
                                lik.predictive_probability(1.0, mean, var)])
    return np.exp(_combined(X, predictors))


def _combined(X, predictors):
    """Log class probabilities from the one-vs-rest ``P(y_k = +1 | x)``: normalised over the
    classes, or with the shared fit's ``logit_weight`` ``t > 0`` the softmax of
    ``log p_k - t log(1 - p_k)``
    (:func:`~skgpsparse.classification.multiclass._combination.combined_log_proba`)."""
    t = getattr(predictors, "logit_weight", 0.0)
    if t == 0.0:
        log_p = np.column_stack([predictor.log_proba(X, 1.0) for predictor in predictors])
        return combined_log_proba(log_p, None, 0.0)
    log_p, log_q = class_columns(
        (predictor.likelihood, *predictor.latent_mean_and_variance(X))
        for predictor in predictors
    )
    return combined_log_proba(log_p, log_q, t)
