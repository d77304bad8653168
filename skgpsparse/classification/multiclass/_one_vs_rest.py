"""More than two classes: which multi-class fit runs (``multi_class``), and the one-vs-rest fits.

``multi_class="auto"`` (the default) is the shared fit
(:mod:`skgpsparse.classification.multiclass._shared_learning`: one kernel learned on the classes'
summed evidence, a basis, bias and EP per class) wherever it exists, the all-rows posterior in
memory; the independent fits (a whole binary fit per class,
:func:`~skgpsparse.classification.learning._restarts.fit_binary`) under ``posterior="basis"``. On
five PMLB sets the shared fit reached the independent fits' test NLP or better at a fraction of
their CPU, except letter (+0.009 NLP at a fifth of the CPU, +0.016 before its learning basis
grew with the classes): benchmarks/README.md, "Many classes".
``multi_class="one_vs_rest"`` (scikit-learn's name) is ``"independent"``; ``"one_vs_one"`` is
:mod:`skgpsparse.classification.multiclass._one_vs_one`.
"""

import copy
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils import check_random_state

from ..learning._restarts import bias_offsets, fit_binary
from ._shared_fit import fit_shared, restore_training_rows

__all__ = ["multi_class_mode", "one_vs_rest"]


def multi_class_mode(clf, posterior, *, fixed_on_partitions=False):
    """``"shared"``, ``"independent"`` or ``"one_vs_one"``: the fit ``clf`` runs (``K > 2``).

    ``posterior`` is the binary models' (``"all_rows"`` or ``"basis"``). ``"auto"`` is the
    shared fit under the all-rows posterior; ``"one_vs_rest"`` is ``"independent"``.
    ``fixed_on_partitions``: a partitioned fit with more rows than ``learning_rows`` and
    fixed hyperparameters (``optimizer=None``), where the
    shared fit would select each class's basis on every row in memory: it runs the
    independent fits on the partitions instead (with fixed hyperparameters the shared fit
    shares nothing; the same kernel, biases and selection rule, other random streams), with
    a warning when that is not what was asked for.
    """
    mode = {"one_vs_rest": "independent"}.get(clf.multi_class, clf.multi_class)
    if mode == "shared" and posterior != "all_rows":
        raise ValueError(
            "multi_class='shared' needs the all-rows posterior (posterior='auto' or "
            f"'all_rows'); got posterior={clf.posterior!r}. Use multi_class='independent' "
            "(or 'auto')."
        )
    if mode == "auto":
        mode = "shared" if posterior == "all_rows" else "independent"
    if fixed_on_partitions and mode == "shared":
        warnings.warn(
            f"multi_class={clf.multi_class!r} with optimizer=None on a partitioned array with "
            "more rows than learning_rows fits each class's model on the partitions as "
            "multi_class='independent' does: with fixed hyperparameters the shared fit "
            "shares nothing (the same kernel, biases and selection rule), but its selection "
            "would need every row in memory. The models differ from an in-memory fit's by "
            "the selectors' random working sets. Pass multi_class='independent' to silence "
            "this warning.",
            UserWarning,
        )
        mode = "independent"
    return mode


def _fit_independent(params, restarts, X, y, seed):
    return fit_binary(params, X, y, check_random_state(seed), *restarts)


def one_vs_rest(clf, per_model, restarts, X, y_enc, rng):
    """The binary models of ``clf``'s one-vs-rest fit (more than two classes) and its mode.

    ``per_model`` holds each class's binary parameters
    (:func:`~skgpsparse.classification._fitting.binary_params`, the same for every class unless a
    warm start gives each its previous model). ``"shared"``:
    :func:`~skgpsparse.classification.multiclass._shared_learning.fit_shared`, warm-started from
    the previous models' kernel, biases and bases, with ``restarts`` as :func:`_shared_restarts`;
    ``"independent"``, a whole binary fit per class
    (:func:`~skgpsparse.classification.learning._restarts.fit_binary`, with ``restarts``), in
    parallel over ``clf.n_jobs``, each from its own seed drawn from ``rng``.

    Returns
    -------
    models : list of LatentSparseGP
    mode : {"shared", "independent"}
    """
    n_classes = int(y_enc.max()) + 1
    mode = multi_class_mode(clf, per_model[0]["posterior"])
    if mode == "shared":
        warm = [pm.get("warm") for pm in per_model]
        params = {**per_model[0], "warm": None}  # the previous kernel is the start
        warm = None if any(w is None for w in warm) else warm
        return _shared_restarts(params, X, y_enc, n_classes, rng, warm, clf.n_jobs,
                                restarts[0]), mode
    seeds = rng.randint(np.iinfo(np.int32).max, size=n_classes)
    targets = [np.where(y_enc == k, 1.0, -1.0) for k in range(n_classes)]
    models = Parallel(n_jobs=clf.n_jobs)(
        delayed(_fit_independent)(per_model[k], restarts, X, targets[k], seeds[k])
        for k in range(n_classes)
    )
    return restore_training_rows(models, X, y_enc, per_model[0].get("sample_weight")), mode


def _shared_restarts(params, X, y_enc, n_classes, rng, warm, n_jobs, n_restarts):
    """The shared fit from every bias start of
    :func:`~skgpsparse.classification.learning._restarts.bias_offsets` (the same offset for every
    class), the one with the highest summed log evidence of the ``K`` models kept, the earlier on
    ties (the all-rows restarts' rule, scikit-learn's ``n_restarts_optimizer``): restarts never end
    below no restart. Each start draws from the random state the plain fit would use."""
    offsets = bias_offsets(n_restarts if params["optimizer"] is not None else 0)
    best, values = None, []
    for offset in offsets:
        start = rng if offsets.size == 1 else copy.deepcopy(rng)
        models = fit_shared(params, X, y_enc, n_classes, start, warm=warm,
                            bias_offset=offset, n_jobs=n_jobs)
        values.append(sum(m.log_marginal_likelihood_value_ for m in models))
        if best is None or values[-1] > max(values[:-1]):
            best = models
    if offsets.size > 1:
        for model in best:
            model.restart_offsets_ = offsets
            model.restart_losses_ = -np.array(values) / (n_classes * y_enc.size)
    return best
