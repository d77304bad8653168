"""``SparseGPRegressor.partial_fit`` with a non-Gaussian likelihood: batches into the latent
model's online posterior.

As the classifier's stream (the sparse online GP of Csato and Opper): the first call fits
(``fit``: basis, kernel, bias and the likelihood's parameters learned, EP over the rows); the
latent model's posterior is then held as an
:class:`~skgpsparse.inference._online.OnlinePosterior` (``O(max_basis^2)`` numbers) and the rows
are forgotten. A later batch enters it by one ADF pass and up to :data:`EP_SWEEPS` EP sweeps
over the batch, the basis and hyperparameters fixed. While fewer than ``max_basis`` rows have
been seen the rows are kept and the model refitted on them with each batch (a basis and
hyperparameters learned on so few rows would stay for good), with a warning.

The streamed posterior is EP's over the batches one at a time: the sites of earlier batches
are not revisited, so it differs from ``fit`` on every row by what their revisits would move
(measured in ``tests/regression/test_likelihood_regression.py``).
"""

import warnings

import numpy as np
from sklearn.utils.validation import _check_sample_weight, validate_data

from ..kernels._structured import STRUCTURED_STREAM, refuse_structured
from ..rows import in_memory_only
from ._likelihood_fit import check_targets

__all__ = ["EP_SWEEPS", "likelihood_partial_fit"]

# EP sweeps over each later batch, and their tolerance (the all-rows fit's, inference._ep).
EP_SWEEPS = 10
_EP_TOL = 1e-6


def likelihood_partial_fit(model, X, y, sample_weight=None):
    """``model.partial_fit(X, y, sample_weight)`` for a non-Gaussian ``likelihood``."""
    in_memory_only(X, y, "partial_fit")
    refuse_structured(model, "partial_fit", STRUCTURED_STREAM)
    buffer = getattr(model, "_stream", None)
    if buffer is None and not hasattr(model, "_latent"):
        model.fit(X, y, sample_weight=sample_weight)
        _keep_if_few(model, *_rows(model, X, y, sample_weight, reset=False))
        return model
    X, y, w = _rows(model, X, y, sample_weight, reset=False)
    if buffer is not None and buffer != "online":  # fewer than max_basis rows seen so far
        X_b, y_b, w_b = buffer
        w_b = None if w_b is None and w is None else np.concatenate([
            np.ones(y_b.size) if w_b is None else w_b, np.ones(y.size) if w is None else w])
        X_b, y_b = np.concatenate([X_b, X]), np.concatenate([y_b, y])
        model.fit(X_b, y_b, sample_weight=w_b)
        _keep_if_few(model, X_b, y_b, w_b)
        return model
    if y.size:
        _stream(model, X, y, w)
    return model


def _rows(model, X, y, sample_weight, reset):
    """The batch validated against the fit: ``(X, y, weights)``, rows of weight zero out."""
    X, y = validate_data(model, X, y, reset=reset, y_numeric=True, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = None
    if sample_weight is not None:
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True,
                                 copy=True, allow_all_zero_weights=True)
        kept = w > 0
        X, y, w = X[kept], y[kept], w[kept]
        w = None if np.all(w == 1.0) else w
    check_targets(model.likelihood_, y, w)
    return X, y, w


def _keep_if_few(model, X, y, w):
    """Keep the rows seen while they are fewer than ``max_basis`` (the module docstring)."""
    if y.size < model.max_basis:
        warnings.warn(
            f"partial_fit: {y.size} row(s) seen, fewer than max_basis={model.max_basis}; they "
            "are kept and the model refitted on them with the next batches until "
            f"{model.max_basis} rows are seen.",
            UserWarning,
            stacklevel=4,
        )
        model._stream = (X, y, w)
    else:
        model._stream = "online"


def _stream(model, X, y, weights):
    """The batch into the online posterior (ADF, then EP sweeps), the predictor updated."""
    y_fit = (y - model._y_train_mean) / model._y_train_std
    model._latent.stream(X, y_fit, EP_SWEEPS, _EP_TOL, weights=weights)
    model._predictor.latent = model._latent._predictor
