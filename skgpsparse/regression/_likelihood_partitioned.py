"""The regressor's non-Gaussian fit on rows held in partitions: the in-memory model.

As the classifier's binary models on partitions (:mod:`skgpsparse.latent._partitioned`): the
targets (``n`` numbers) and weights are gathered to the driver to be checked and scaled; with
at most ``learning_rows`` rows every row is gathered and the fit is the in-memory one, else
the kernel, bias and basis are learned on the in-memory fit's subsample (the same draw of the
same random state) gathered to the driver, and EP over every row runs on the partitions
(:mod:`skgpsparse.inference._ep_partitioned`, the targets scaled there as
:class:`~skgpsparse.inference._ep_partitioned.Targets`).
"""

import numpy as np
from sklearn.utils import check_random_state

from .._learning_rows import learning_size
from .._row_weights import weighted_rows
from ..inference._ep_partitioned import Targets, set_row_weights
from ..latent._partitioned import fit_binary_on_rows
from ._likelihood_fit import (
    check_targets,
    fit_likelihood,
    latent_params,
    learning_rows_of,
    store_likelihood_fit,
    target_scaling,
)

__all__ = ["fit_likelihood_partitioned"]


def fit_likelihood_partitioned(model, backend, X, y, sample_weight=None):
    """Fit ``model`` (a SparseGPRegressor with a non-Gaussian likelihood) on the ``backend``'s
    ``X`` and ``y``; ``sample_weight`` numpy or of the backend's kind (gathered)."""
    X, y, _ = backend.validate(X, y, min_rows=1, dtypes=(np.float64,), labels=False)
    n = X.shape[0]
    if y.ndim == 2 and y.shape[1] > 1:
        raise ValueError(
            f"likelihood={model.likelihood!r} fits one target: y must be 1-D (got shape "
            f"{y.shape})."
        )
    weights = sample_weight
    if weights is not None and backend.owns(weights):
        weights = backend.gather(weights)
    m = learning_size(learning_rows_of(model, min(model.max_basis, n)), min(model.max_basis, n))
    if m is not None and n <= m:  # learning sees every row: the in-memory fit on them
        return fit_likelihood(model, backend.gather(X), backend.gather(y), weights)
    if model.optimizer is None or model.learning_rows is None:
        raise ValueError(
            f"likelihood={model.likelihood!r} on a partitioned array learns on rows gathered "
            "to the driver (learning_rows='auto' or an int, learned hyperparameters); with "
            "optimizer=None or learning_rows=None fit an in-memory array."
        )
    model.n_features_in_ = X.shape[1]
    y_all = np.asarray(backend.gather(y), dtype=np.float64).reshape(-1)  # n numbers
    _, y_kept, w_kept, _ = weighted_rows(np.empty((n, 0)), y_all, weights)
    params, likelihood = latent_params(model, n, X.shape[1], w_kept)
    check_targets(likelihood, y_kept, w_kept)
    centre, scale = target_scaling(model, y_kept, w_kept)
    if weights is not None:  # zero weights stay in the partitions, as rows of no weight
        params["sample_weight"] = np.asarray(weights, dtype=np.float64)
    with backend.open(X, y.reshape(-1)) as rows:
        if weights is not None:
            set_row_weights(rows, params["sample_weight"])
        latent = fit_binary_on_rows(params, rows, Targets(centre, scale),
                                    check_random_state(model.random_state), None, None)
    store_likelihood_fit(model, latent, centre, scale)
    return model
