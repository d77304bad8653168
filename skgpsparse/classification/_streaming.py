"""``SparseGPClassifier.partial_fit``: learning from a stream of row batches.

The first call fits as ``fit`` does (the all-rows posterior: basis, kernel and bias learned, EP
over the rows). Each binary model's posterior is then held as an
:class:`~skgpsparse.inference._online.OnlinePosterior`, ``O(max_basis^2)`` numbers, and the rows
are forgotten: later batches enter it by one ADF pass (the sparse online GP of Csato and Opper) and
``stream_ep_sweeps`` EP sweeps over the batch, with the basis and hyperparameters fixed.

While the rows seen number at most ``stream_buffer``, they are also kept in a buffer, and the
model is refitted on it, warm-started from the last fit (:func:`~._fitting.fit_models`),
whenever the buffer has grown by a quarter since that fit and once when it is full: so the
basis and hyperparameters are learned on (nearly) all the rows seen, as ``fit`` would learn
them, until ``stream_buffer`` rows, whatever the batch size, at the cost of a few fits on
``stream_buffer`` rows (a geometric sum of ratio 1 / 1.25: five at most). Memory:
``O(max_basis^2 + stream_buffer + batch)`` rows' worth, whatever the number of rows streamed.

Row weights (``sample_weight`` times a dict ``class_weight``): a row of weight ``c`` stands for
``c`` copies, as in ``fit``. Rows of weight zero are dropped first; the buffer keeps the weights
of its rows and its refits pass them to :func:`~._fitting.fit_models` (as ``fit`` does); the
online ADF pass adds a row's site ``c`` times (:mod:`~skgpsparse.inference._online`), and the
EP sweeps over the batch carry the weights as the fit's EP. The buffer counts rows, not weights
(it bounds memory). ``class_weight="balanced"`` needs every label of the stream and is refused,
as scikit-learn's ``SGDClassifier.partial_fit`` does.
"""

import warnings

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import _check_partial_fit_first_call, check_classification_targets
from sklearn.utils.validation import _check_sample_weight, validate_data

from .._auto_basis import start_size
from .._warm_start import fit_signature
from ..kernels._structured import STRUCTURED_STREAM, refuse_structured
from ..rows import in_memory_only
from ._fitting import fit_models, store_binary, store_one_vs_rest
from .multiclass._one_vs_one import class_pairs, pair_rows

__all__ = ["partial_fit", "streams"]

# EP's tolerance on the batch's sites (that of the all-rows fit, inference._ep._EP_TOL).
_EP_TOL = 1e-6
# While the buffer fills, it is refitted when it has grown by this factor since the last fit.
# Streaming 10 chunks of ringnorm and waveform (realization 1): a factor 2 left the streamed
# default 5.4 % and 3.0 % above the batch fit's test NLP, 1.25 4.4 % and 1.4 %, at 1.3x and
# 1.8x its CPU time (benchmarks/scale/results/stream_datasets*.md).
_REFIT_GROWTH = 1.25


@_fit_context(prefer_skip_nested_validation=True)
def partial_fit(self, X, y, classes=None, sample_weight=None):
    """Update the classifier with a batch of rows (the first call fits as ``fit`` does).

    Later batches enter each binary model's posterior by one ADF pass and
    ``stream_ep_sweeps`` EP sweeps over the batch, with the basis and hyperparameters
    fixed (learned on the first ``stream_buffer`` rows, see ``stream_buffer``); the rows
    are not kept, so memory does not grow with the rows streamed. Needs the all-rows
    posterior (``posterior="auto"`` or ``"all_rows"``; with ``posterior="basis"`` the
    classifier has no ``partial_fit`` attribute) and in-memory arrays; a fitted model (by
    ``fit``) is updated as well, unless it has been pickled.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        A batch of rows.
    y : array-like of shape (n_samples,)
        Their labels, each one of ``classes``.
    classes : array-like of shape (n_classes,), default=None
        Every class of the stream: required on the first call (a batch may hold only
        some of them), and if given later, the same.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each row of the batch, times the class's weight when
        ``class_weight`` is a dict: a row of integer weight ``c`` counts as ``c`` copies of
        itself and a row of weight zero as absent (it is dropped). The buffer's refits learn
        on the buffered rows with their weights, as ``fit`` does; later batches enter the
        online posterior with each row's site counted ``c`` times (ADF and EP). The ADF pass
        of a weighted row only approximates that of ``c`` rows in a row (each copy would see
        the copies before it); ``stream_ep_sweeps`` EP sweeps converge to the repeated rows'
        sites. ``class_weight="balanced"`` is refused (it needs the labels of the whole
        stream): give a dict, e.g. ``compute_class_weight("balanced", ...)`` of a sample of
        the labels. A model fitted with weights by ``fit`` is updated as well.

    Returns
    -------
    self : object
        The updated classifier.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse import SparseGPClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(600, 2); y = (X[:, 0] + 0.3 * rng.randn(600) > 0).astype(int)
    >>> clf = SparseGPClassifier(max_basis=10, max_iter=2, stream_buffer=200)
    >>> for rows in np.array_split(np.arange(600), 6):
    ...     clf = clf.partial_fit(X[rows], y[rows], classes=[0, 1])
    >>> int(clf.n_samples_seen_), bool(clf.score(X, y) > 0.9)
    (600, True)
    """
    if getattr(self, "classes_", None) is not None:  # fitted (by fit or a first batch)
        return _partial_fit(self, X, y, classes, sample_weight)
    before = dict(vars(self))
    try:
        return _partial_fit(self, X, y, classes, sample_weight)
    except BaseException:  # a first call that fails leaves the classifier unfitted
        vars(self).clear()
        vars(self).update(before)
        raise


def streams(clf):
    """True if ``clf``'s posterior takes ``partial_fit`` (the all-rows one); else raise the
    ValueError that says why (``partial_fit``'s ``available_if`` check: a classifier with
    ``posterior="basis"`` has no ``partial_fit``, as scikit-learn's checks expect)."""
    if clf.posterior == "basis":
        raise ValueError(
            "partial_fit needs the all-rows posterior (posterior='auto' or 'all_rows'), got "
            "posterior='basis': its sites are on the basis rows only, new rows cannot enter."
        )
    return True


def _partial_fit(clf, X, y, classes, sample_weight=None):
    """:func:`partial_fit` (module docstring)."""
    in_memory_only(X, y, "partial_fit")
    refuse_structured(clf, "partial_fit", STRUCTURED_STREAM)
    streams(clf)
    _refuse_balanced(clf)
    sample_weight = _sample_weights(sample_weight, X)  # before the first call sets classes_
    first = _check_partial_fit_first_call(clf, classes)
    X, y = validate_data(clf, X, y, reset=first, dtype=np.float64)
    check_classification_targets(y)
    if first and clf.classes_.size < 2:
        raise ValueError(
            f"`classes` must hold 2 or more distinct classes; got {clf.classes_.tolist()}."
        )
    y_enc = _encode(y, clf.classes_)
    weights = _batch_weights(clf, sample_weight, X, y_enc)
    if weights is not None:  # rows of weight zero are absent; all ones: unweighted
        kept = weights > 0
        if first and not np.any(kept):
            raise ValueError(
                "sample_weight (times class_weight) is zero for every row of the first batch: "
                "nothing to fit."
            )
        X, y_enc, weights = X[kept], y_enc[kept], weights[kept]
        weights = None if np.all(weights == 1.0) else weights
    n_rows = y_enc.size  # the rows of positive weight: n_samples_seen_ counts them
    if first:
        clf.n_samples_seen_ = 0
        clf._stream_buffer = None
        _refit(clf, X, y_enc, previous=None, weights=weights)
        _open_buffer(clf, X, y_enc, weights)
        clf.n_samples_seen_ = n_rows
        clf._fit_signature = fit_signature(clf.kernel, X, clf.multi_class)  # warm fits check it
        return clf
    if not hasattr(clf, "n_samples_seen_"):  # fitted by fit: its rows, one site each
        sizes = [model.site_precision_.size for model in _models(clf)]
        # one vs one: each row is in K - 1 of the pairs
        share = clf.classes_.size - 1 if _pairwise(clf) else len(sizes)
        clf.n_samples_seen_ = sum(sizes) // share
    buffer = getattr(clf, "_stream_buffer", None)
    if buffer is not None and y_enc.size:
        X_buf, y_buf, n_fitted, w_buf = buffer
        # a buffer kept only for max_basis rows (stream_buffer below it) takes whole batches
        take = y_enc.size if clf.stream_buffer < start_size(clf.max_basis) else min(
            clf.stream_buffer - y_buf.size, y_enc.size
        )
        w_buf = _join_weights(w_buf, y_buf.size, weights, take)
        X_buf = np.concatenate([X_buf, X[:take]])
        y_buf = np.concatenate([y_buf, y_enc[:take]])
        full = y_buf.size >= _buffer_rows(clf)
        if full or y_buf.size >= _REFIT_GROWTH * n_fitted:
            _refit(clf, X_buf, y_buf, previous=_models(clf), weights=w_buf)
            X, y_enc = X[take:], y_enc[take:]
            weights = None if weights is None else weights[take:]
            n_fitted = y_buf.size
        clf._stream_buffer = None if full else (X_buf, y_buf, n_fitted, w_buf)
    if y_enc.size:
        _stream(clf, X, y_enc, weights)
    clf.n_samples_seen_ += n_rows
    return clf


def _refuse_balanced(clf):
    """A ValueError for ``class_weight="balanced"``: the class counts of the whole stream are
    not known at any batch (scikit-learn's ``SGDClassifier.partial_fit`` refuses it too)."""
    if isinstance(clf.class_weight, str):
        raise ValueError(
            f"class_weight={clf.class_weight!r} is not supported by partial_fit: it needs the "
            "labels of the whole stream. Pass a dict instead, e.g. compute_class_weight("
            "'balanced', classes=classes, y=y_sample) on a large enough sample of the labels."
        )


def _sample_weights(sample_weight, X):
    """``sample_weight`` validated by scikit-learn's ``_check_sample_weight`` (a new array,
    the caller's never modified), or None."""
    if sample_weight is None:
        return None
    # a later batch may weigh every row zero (it is then left out); the first may not
    weights = _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True, copy=True,
        allow_all_zero_weights=True,
    )
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight must be finite; got a NaN or an infinite weight.")
    return weights


def _batch_weights(clf, sample_weight, X, y_enc):
    """The batch rows' weights, ``sample_weight`` (validated, :func:`_sample_weights`)
    times the dict ``class_weight`` of each row's class (over the stream's ``classes_``);
    None when neither is given."""
    if sample_weight is None and clf.class_weight is None:
        return None
    weights = np.ones(y_enc.size) if sample_weight is None else sample_weight
    if clf.class_weight is not None:
        per_class = compute_class_weight(
            clf.class_weight, classes=clf.classes_, y=clf.classes_[y_enc]
        )
        weights *= per_class[y_enc]
    return weights


def _join_weights(w_buf, n_buf, weights, take):
    """The buffer's weights after ``take`` rows of the batch join its ``n_buf`` rows: None
    while every row has weight one, else the weights (ones for the unweighted rows)."""
    if w_buf is None and weights is None:
        return None
    before = np.ones(n_buf) if w_buf is None else w_buf
    joined = np.ones(take) if weights is None else weights[:take]
    return np.concatenate([before, joined])


def _encode(y, classes):
    """Indices of ``y``'s labels in ``classes``; a clear error for a label outside them."""
    unseen = ~np.isin(y, classes)
    if np.any(unseen):
        raise ValueError(
            f"`y` holds labels {np.unique(y[unseen]).tolist()} that are not in `classes` "
            f"{classes.tolist()} (given on the first call to partial_fit)."
        )
    return np.searchsorted(classes, y)


def _models(clf):
    return [clf._binary] if clf.classes_.size == 2 else clf.estimators_


def _pairwise(clf):
    return clf.classes_.size > 2 and clf.multi_class_ == "one_vs_one"


def _rows(clf, X, y_enc, k, weights=None):
    """The rows of binary model ``k``, their labels in {-1, +1} and weights: class 1 against
    0, class ``k`` against the rest, or (one vs one) the rows of pair ``k``'s two classes."""
    if _pairwise(clf):
        rows, labels = pair_rows(y_enc, class_pairs(clf.classes_.size)[k])
        return X[rows], labels, (None if weights is None else weights[rows])
    positive = 1 if clf.classes_.size == 2 else k
    return X, np.where(y_enc == positive, 1.0, -1.0), weights


def _refit(clf, X, y_enc, previous, weights=None):
    """Fit on ``X`` (as ``fit``, warm-started from ``previous``, the rows' ``weights``), then
    keep posteriors only."""
    fit_models(clf, X, y_enc, previous, weights)
    for model in _models(clf):
        model.online_posterior()


def _buffer_rows(clf):
    """The rows the buffer holds before the basis and hyperparameters are left as they are:
    ``stream_buffer``, and at least ``max_basis`` (the rows a full basis needs; then the
    batch that reaches them enters whole; ``"auto"``: 100, each refit choosing its size)."""
    return max(clf.stream_buffer, start_size(clf.max_basis))


def _open_buffer(clf, X, y_enc, weights=None):
    """Keep the first call's rows while they are fewer than :func:`_buffer_rows`.

    A first batch smaller than ``max_basis`` (a single row, say) cannot learn the model that
    later batches are then fixed to: one basis vector, and a bias at its bound when the batch
    has one class (a +5 bias and a test NLP of ~4 on a stream whose first batch was one
    row, with ``stream_buffer=0``). Its rows are kept, whatever ``stream_buffer``, and the
    model refitted on them with whole later batches until there are ``max_basis`` of them
    (with a warning).
    """
    p = start_size(clf.max_basis)
    if X.shape[0] < clf.stream_buffer:
        clf._stream_buffer = (X, y_enc, X.shape[0], weights)
    elif X.shape[0] < p:
        warnings.warn(
            f"partial_fit: the first batch has {X.shape[0]} row(s), fewer than max_basis="
            f"{clf.max_basis}; its rows are kept and the model refitted on them and the next "
            f"batches until {p} rows are seen (stream_buffer={clf.stream_buffer} "
            "is fewer), "
            "as a basis and hyperparameters learned on so few rows would stay for good.",
            UserWarning,
            stacklevel=4,
        )
        clf._stream_buffer = (X, y_enc, X.shape[0], weights)


def _stream(clf, X, y_enc, weights=None):
    """Each binary model's posterior updated with the rows (ADF, then EP sweeps; each row's
    site counted ``weights`` times)."""
    models = _models(clf)
    for k, model in enumerate(models):
        X_k, y_k, w_k = _rows(clf, X, y_enc, k, weights)
        if not y_k.size:  # a pair whose two classes are not in the batch
            model.site_precision_ = model.site_mean_ = np.zeros(0)
            continue
        tau, nu = model.stream(X_k, y_k, clf.stream_ep_sweeps, _EP_TOL, weights=w_k)
        # the sites of this batch's rows (the earlier rows' are folded into the posterior)
        model.site_precision_ = tau
        model.site_mean_ = np.divide(nu, tau, out=np.zeros_like(nu), where=tau > 0)
    if len(models) == 1:
        store_binary(clf, models[0])
    else:
        store_one_vs_rest(clf, models)
