"""The shared one-vs-rest fit (:mod:`skgpsparse.classification.multiclass._shared_learning`) on
rows held in partitions.

With more rows than ``learning_rows`` the in-memory shared fit
(:mod:`skgpsparse.classification.multiclass._shared_fit`) sees every row only in its last step,
each class's EP; its learning and the classes' selections run on the binary fit's random subsample
of ``learning_rows`` rows. On a partitioned array the same subsample is gathered to the driver, the
same learning and selections run on it, and each class's EP runs over the partitions
(:func:`~skgpsparse.latent._partitioned.partitioned_posterior`, the plain EP from
one ADF pass that the in-memory fit runs there too): the models are the in-memory fit's, to EP's
rounding.
"""

import numpy as np
from sklearn.base import clone

from ...latent._model import LatentSparseGP
from ...latent._partitioned import driver_subsample, partitioned_posterior
from ..multiclass._shared_fit import shared_stage

__all__ = ["fit_shared_on_rows"]


def fit_shared_on_rows(params, rows, classes, rng, n_jobs=None):
    """The binary models of the shared fit on the row store ``rows`` (labels in ``classes``).

    ``params``: the binary models' (learned hyperparameters, ``posterior="all_rows"``), with more
    rows than ``learning_rows``. ``rng`` draws as the in-memory fit's
    (:func:`~skgpsparse.classification.multiclass._shared_fit.fit_shared`). ``n_jobs``: jobs
    (joblib) over the classes' selections on the driver.
    """
    n_classes = len(classes)
    # the in-memory fit's selection rows (selection_rows: the same draw)
    sub = driver_subsample(params["learning_rows"], rows.n, params["max_basis"], rng,
                           "multi_class='shared'")
    weights = params.get("sample_weight")
    if weights is not None:  # the selection rows' weights; zero weights stay out
        sub = sub[weights[sub] > 0]
    X_s, labels = rows.take(sub)
    chosen, (loss_curve, n_iter) = shared_stage(
        params if weights is None else dict(params, sample_weight=weights[sub]),
        X_s, np.searchsorted(classes, labels), n_classes, rows.n, rng, n_jobs=n_jobs
    )
    models = []
    for k, (kernel, bias, basis, curve, _, own) in enumerate(chosen):
        model = LatentSparseGP(**params)
        model._progress.line(f"class {classes[k]!r}: EP on the partitions")
        # a kernel object per class, as the in-memory fit's
        partitioned_posterior(model, rows, classes[k], clone(kernel), float(bias),
                              sub[basis], X_s[basis], curve)
        model.loss_curve_, model.n_iter_ = list(loss_curve), n_iter
        model._own_kernel = own
        models.append(model)
    return models
