"""``multi_class="one_vs_one"``: a binary model per pair of classes, on the rows of the two.

scikit-learn's ``GaussianProcessClassifier(multi_class="one_vs_one")`` (a
``OneVsOneClassifier`` around its binary GPC): for each pair ``i < j`` of classes, in the order
``(0, 1), (0, 2), ..., (K - 2, K - 1)``, a whole binary fit
(:func:`~skgpsparse.classification.learning._restarts.fit_binary`: its own kernel, bias, basis
and EP) on the rows of class ``i`` (label -1) and ``j`` (label +1). Prediction is by votes
(:func:`~skgpsparse.classification._prediction.pair_votes`); there are no class
probabilities, as in scikit-learn. ``K (K - 1) / 2`` fits, each on about ``2 n / K`` rows.
"""

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils import check_random_state

from ..learning._restarts import fit_binary

__all__ = ["class_pairs", "fit_one_vs_one", "pair_rows"]


def class_pairs(n_classes):
    """The pairs ``(i, j)``, ``i < j``, of ``n_classes`` classes in scikit-learn's order."""
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


def pair_rows(y_enc, pair):
    """Indices of the rows of the two classes of ``pair`` and their labels (``j``: +1)."""
    rows = np.flatnonzero((y_enc == pair[0]) | (y_enc == pair[1]))
    return rows, np.where(y_enc[rows] == pair[1], 1.0, -1.0)


def _pair_params(params, rows):
    """A pair's binary parameters: ``max_basis`` at most its rows (less one for the basis
    posterior, whose eq. (4) needs a held-out row), as ``binary_params`` clips it for all
    rows; a warm start's basis, indices of the training set, as indices of the pair's rows
    (dropped unless every basis row is one of them)."""
    n = rows.size
    limit = n if params["posterior"] == "all_rows" else max(n - 1, 1)
    out = dict(params, max_basis=min(params["max_basis"], limit))
    warm = params.get("warm")
    if warm is not None and warm[1] is not None:
        basis = np.asarray(warm[1])
        at = np.minimum(np.searchsorted(rows, basis), n - 1)
        out["warm"] = (warm[0], at if np.array_equal(rows[at], basis) else None)
    return out


def _fit_pair(params, restarts, X, y, seed):
    return fit_binary(params, X, y, check_random_state(seed), *restarts)


def fit_one_vs_one(per_model, restarts, X, y_enc, rng, n_jobs):
    """The binary models of the one-vs-one fit, one per pair of :func:`class_pairs`.

    ``per_model`` holds each pair's binary parameters (the same for every pair unless a warm
    start gives each its previous model); each pair is fitted with ``restarts`` from its
    own seed drawn from ``rng``, in parallel over ``n_jobs``. A model's ``basis_indices_``
    are indices of the training rows ``X`` (as the other fits'), its sites those of its
    pair's rows.
    """
    n_classes = int(y_enc.max()) + 1
    pairs = class_pairs(n_classes)
    seeds = rng.randint(np.iinfo(np.int32).max, size=len(pairs))
    subsets = [pair_rows(y_enc, pair) for pair in pairs]
    models = Parallel(n_jobs=n_jobs)(
        delayed(_fit_pair)(_pair_params(per_model[k], rows), restarts, X[rows], labels,
                           seeds[k])
        for k, (rows, labels) in enumerate(subsets)
    )
    for model, (rows, labels) in zip(models, subsets):
        model.basis_indices_ = rows[model.basis_indices_]
        if model.posterior == "all_rows" and not hasattr(model, "_train"):
            model._train = (X[rows], labels)  # back from a worker, pickled without them
    return models
