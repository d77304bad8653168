"""``SparseGPRegressor.partial_fit``: new rows into a fitted posterior, then forgotten.

The first call on an unfitted model is ``fit``. A later call validates the batch against the
fitted width and targets, normalises its targets with the first fit's scaling, adds its
likelihood terms to the ``p x p`` statistics (:class:`~._streaming_statistics.StreamingPosterior`:
exact, the model of a fit on every row seen with this basis, kernel and noise) and, while
the basis holds fewer than ``max_basis`` vectors, grows it from the batch's rows.

Growing the basis
-----------------
A new basis vector ``x_j`` adds a row ``v = (k_j - V^T l) / l_pp`` to ``V = L^-1 K_uf``
(``l = L^-1 k_u(x_j)``, ``l_pp^2 = k(x_j, x_j) + jitter - |l|^2``, Seeger et al. 2003 eq.
(6)). For the batch's rows ``v`` is computed; the rows of earlier batches are forgotten, so
their ``k(x_i, x_j)`` is replaced by its Nystrom projection on the current basis,
``k_u(x_i)^T K_uu^-1 k_u(x_j) = V_i^T l``, for which their ``v`` is 0: they keep the
information they gave about the old basis and none about the new direction. This is exact
when every earlier row is in the basis (the projection is then ``k(x_i, x_j)`` itself, the
case of a Bayesian-optimisation loop with ``max_basis`` at least the number of
evaluations) and an approximation otherwise; a ``fit`` (or ``warm_start`` fit) on all rows
removes it. Candidates are the batch's rows (a random working set of ``working_set_size``,
59 by default, for a larger batch) scored by the exact decrease of cost (2) under that
projection (the ``"exact"`` criterion of Smola & Bartlett, which ``"matching_pursuit"``,
``"vfe"`` and ``"info_gain"`` approximate), ``(v^T mu)^2 / (2 (|v|^2 + s2 - c^T P_j c))``
with ``mu`` the batch's residual and ``c = V v``; ``selection="random"`` picks uniformly. No
exchange is made once the basis is full.
"""

import warnings

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, _num_samples, validate_data
from threadpoolctl import ThreadpoolController

from .._validation import plain_float_rows
from ..kernels._columns import kernel_diag
from ..kernels._structured import STRUCTURED_STREAM, refuse_structured
from ..linalg import solve_lower
from ..rows import in_memory_only
from ._basis_size import AUTO_START, is_auto
from ._likelihood_streaming import likelihood_partial_fit
from ._prediction import RegressionPredictor, exact_factor
from ._row_noise import rows_of_positive_weight
from ._streaming_statistics import StreamingPosterior

__all__ = ["blas_thread_limit", "partial_fit", "stream_nbytes"]

_DEFAULT_WORKING_SET = 59
_CONTROLLER = None  # threadpoolctl's, made on first use


def _batch_targets(model, y, target_shape):
    """The batch's normalised targets, shaped as the fitted ones (``(b,)`` or ``(b, m)``)."""
    y = np.asarray(y, dtype=np.float64)
    got, n_targets = y.size // max(len(y), 1), int(np.prod(target_shape))
    if got != n_targets:
        raise ValueError(
            f"partial_fit got `y` with {got} target(s); the model was fitted with "
            f"{n_targets}. Every batch must have the targets of the first call."
        )
    y = y.reshape((len(y),) + target_shape)
    return (y - model._y_train_mean) / model._y_train_std


def _validated(model, X, y):
    """``validate_data(model, X, y, reset=False, ...)``, with a fast path for plain float
    arrays (one observation at a time: scikit-learn's checks cost more than the update)."""
    X_plain = plain_float_rows(model, X)
    if (
        X_plain is not None and type(y) is np.ndarray and y.dtype.kind == "f"
        and y.ndim in (1, 2) and len(y) == len(X_plain) and np.isfinite(y).all()
    ):
        return X_plain, y
    return validate_data(
        model, X, y, reset=False, y_numeric=True, multi_output=True, dtype=np.float64
    )


def _posterior(model):
    """The model's :class:`StreamingPosterior`, made from the fit's factors on first use."""
    stream = model._stream
    if not isinstance(stream, StreamingPosterior):
        s2 = model.noise_variance_  # with per-row noise: their common scale (._row_noise)
        s2 = model._noise_scale if np.ndim(s2) > 0 else s2
        stream = StreamingPosterior(
            stream, s2, model.log_marginal_likelihood_value_,
            model.hyperparameter_objective,
        )
        model._stream = stream
    return stream


def blas_thread_limit(limits=1):
    """A context with at most ``limits`` BLAS threads (one: ``fit``'s and ``partial_fit``'s);
    threadpoolctl's controller is made once (``threadpool_limits`` scans the loaded
    libraries at every call, ~10 ms, more than a one-row update or a warm-started fit on a
    few hundred rows; with several BLAS threads on a busy machine a ``p x p`` triangular
    solve took milliseconds instead of tens of microseconds)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=limits, user_api="blas")


def partial_fit(model, X, y, sample_weight=None, noise_variance=None):
    """Add the rows ``(X, y)`` to a fitted ``SparseGPRegressor`` (see the module docstring).

    ``noise_variance``: the batch's per-row noise ``a`` (an array of its length), with a
    ``noise_variance`` array on the estimator: the first call's rows, else the estimator's
    array, and required from the second call on (the rows enter whitened by
    ``c = (w / a)^(1/2)``, ``_row_noise``).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse import SparseGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (400, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.randn(400)
    >>> model = SparseGPRegressor(max_basis=15, optimizer=None, random_state=0)
    >>> for start in range(0, 400, 100):  # four chunks; the rows are not kept
    ...     model = model.partial_fit(X[start : start + 100], y[start : start + 100])
    >>> model.basis_vectors_.shape, bool(model.score(X, y) > 0.9)
    ((15, 1), True)
    """
    if model.likelihood != "gaussian" and noise_variance is None:
        return likelihood_partial_fit(model, X, y, sample_weight)  # the latent model's stream
    if noise_variance is not None and np.ndim(model.noise_variance) == 0:
        raise ValueError(
            "partial_fit's noise_variance (the batch's per-row noise) needs a noise_variance "
            "array on the estimator (per-row noise, with a common scale); with a scalar "
            "noise_variance give the rows' weights as sample_weight (noise noise_variance / w)."
        )
    with blas_thread_limit():
        return _partial_fit(model, X, y, sample_weight, noise_variance)


def _first_fit(model, X, y, sample_weight, noise_variance):
    """The first call: ``fit``, with the batch's ``noise_variance`` when given (the
    estimator's parameter is restored after)."""
    given = model.noise_variance
    if noise_variance is not None:
        model.noise_variance = noise_variance
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="max_basis=.* exceeds the number")
            model.fit(X, y, sample_weight=sample_weight)
    finally:
        model.noise_variance = given
    if is_auto(model.max_basis):  # the size chosen, or AUTO_START if it took every row
        rows = _num_samples(X)
        model._stream_basis = (model.n_basis_ if model.n_basis_ < rows
                               else max(model.n_basis_, AUTO_START))


def stream_basis_size(model):
    """The basis size ``partial_fit`` grows to: ``max_basis``, or with ``"auto"`` the size
    the first call chose (``AUTO_START`` when that call had every row in the basis)."""
    if is_auto(model.max_basis):
        return model._stream_basis
    return model.max_basis


def _batch_weights(model, X, y, sample_weight, noise_variance):
    """``(X, y, c, w, a)``: the batch's rows of positive weight, their scales
    ``c = (w / a)^(1/2)`` (the rows enter whitened, as in ``fit``: ``_row_noise``), weights
    ``w`` and per-row noise ``a``; ``c``, ``w`` and ``a`` None where they are ones."""
    if np.ndim(model.noise_variance) > 0:
        if noise_variance is None:
            raise ValueError(
                "partial_fit on a model with a noise_variance array needs the batch's per-row "
                "noise: partial_fit(X, y, noise_variance=a) with a of shape (n_samples,)."
            )
        X, y, row_noise, _ = rows_of_positive_weight(noise_variance, X, y, sample_weight)
        return X, y, row_noise.scale, row_noise.weight, row_noise.relative
    if sample_weight is None:
        return X, y, None, None, None
    w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if np.all(w == 1.0):
        return X, y, None, None, None
    kept = w > 0
    return X[kept], y[kept], np.sqrt(w[kept]), w[kept], None


def _partial_fit(model, X, y, sample_weight=None, noise_variance=None):
    in_memory_only(X, y, "partial_fit")
    refuse_structured(model, "partial_fit", STRUCTURED_STREAM)
    if getattr(model, "_stream", None) is None:
        # The first call is fit; max_basis above the batch's rows is not clipped for good:
        # the basis grows from the next batches.
        _first_fit(model, X, y, sample_weight, noise_variance)
        model._X_train = model._y_train = None  # the rows are not kept
        return model
    X, y = _validated(model, X, y)
    X, y, c, w, a = _batch_weights(model, X, y, sample_weight, noise_variance)
    if X.shape[0] == 0:  # every row of weight zero
        return model
    if c is not None:  # rows of their own noise s2 a / w: no exact factor of one s2
        model._stream_weighted = True
    stream = _posterior(model)
    if a is not None:  # the evidence's -1/2 sum_i w_i log a_i per target (._row_noise)
        stream.rows_part -= 0.5 * stream.m * float(np.sum(w * np.log(a)))
        model.noise_variance_ = np.concatenate([model.noise_variance_, stream.s2 * a])
    y = _batch_targets(model, y, stream.Vy.shape[1:])
    predictor = model._predictor
    kernel = model.kernel_
    kdiag = kernel_diag(kernel, X)
    # weighted rows enter whitened: V's columns, y and k(x, x) times c, c and c^2 (_row_noise)
    wy = y if c is None else y * (c if y.ndim == 1 else c[:, None])
    if model.basis_vectors_.shape[0] < stream_basis_size(model):
        # growth needs the batch's V_b whole (b x p): while the basis is not full
        V_b = stream.whiten(predictor.cross.block(X))
        if c is not None:
            V_b *= c
        stream.add_rows(V_b, wy, kdiag if c is None else kdiag * c * c, _weight_sum(w))
        _grow(model, stream, X, wy, V_b, kdiag, c)
        stream.refresh_if_due()
    else:
        # row blocks of the kernel (about 32 MB each); the statistics are exact sums
        for rows, K_bu in predictor.cross.blocks(X):
            V_r = stream.whiten(K_bu)
            if c is not None:
                V_r *= c[rows]
            c_r = None if c is None else c[rows]
            kdiag_r = kdiag[rows] if c is None else kdiag[rows] * c_r**2
            w_r = None if w is None else w[rows]
            stream.add_rows(V_r, wy[rows], kdiag_r, _weight_sum(w_r))
    _store_prediction(model, stream)
    model._X_train = model._y_train = None
    return model


def _weight_sum(w):
    """``sum w`` of a batch's rows (None: unit weights)."""
    return None if w is None else float(np.sum(w))


def _grow(model, stream, X, y, V_b, kdiag, scale=None):
    """Append basis vectors from the batch while the basis is not full; True if any.

    ``scale``: the rows' scales ``(w / a)^(1/2)`` (``y`` and ``V_b`` are then whitened)."""
    rng = None  # made on first use (a RandomState from an int costs ~0.1 ms)
    kernel, s2, jitter = model.kernel_, stream.s2, stream.jitter
    b = X.shape[0]
    offered = np.zeros(b, dtype=bool)
    kappa = model.working_set_size or _DEFAULT_WORKING_SET
    grown = False
    Z, indices = model.basis_vectors_, model.basis_indices_
    first_row = stream.n_rows - b  # the stream's index of the batch's first row
    target = stream_basis_size(model)
    while Z.shape[0] < target:
        candidates = np.flatnonzero(~offered)
        if not len(candidates):
            break
        if model.selection == "random" or len(candidates) > kappa:
            rng = check_random_state(model.random_state) if rng is None else rng
        if model.selection == "random":
            J = rng.choice(candidates, size=1)
        elif len(candidates) > kappa:
            J = rng.choice(candidates, size=kappa, replace=False)
        else:
            J = candidates
        K_uJ = kernel(Z, X[J])  # p x |J|
        l = solve_lower(stream.L, K_uJ)
        d2 = kdiag[J] + jitter - np.sum(l * l, axis=0)
        ok = np.isfinite(d2) & (d2 >= 0.5 * jitter)
        offered[J[~ok]] = True  # numerically in the span of the basis: never again
        if not np.any(ok):
            continue
        J, l, lpp = J[ok], l[:, ok], np.sqrt(d2[ok])
        # v = (k_bj - V_b^T l) / l_pp for the batch's rows; earlier rows: 0 (projection)
        K_bJ = kernel(X, X[J])
        if scale is not None:
            K_bJ *= scale[:, None]
        v = (K_bJ - V_b.T @ l) / lpp
        mu = y - V_b.T @ (stream.P_j @ stream.Vy)  # the batch's residual
        c = V_b @ v
        schur = np.sum(v * v, axis=0) + s2 - np.sum(c * (stream.P_j @ c), axis=0)
        gain = (v.T @ mu) ** 2
        gain = gain if gain.ndim == 1 else gain.sum(axis=1)
        best = int(np.argmax(gain / np.maximum(schur, np.finfo(float).tiny)))
        j, vj = int(J[best]), v[:, best]
        offered[j] = True
        stream.border(K_uJ[:, ok][:, best], kdiag[j], c[:, best], float(vj @ vj), vj @ y)
        stream.add_vfe_trace(float(vj @ vj))
        V_b = np.vstack([V_b, vj])
        Z = np.vstack([Z, X[j]])
        indices = np.append(indices, first_row + j)
        grown = True
    model.basis_vectors_, model.basis_indices_ = Z, indices
    model.n_basis_ = len(indices)
    return grown


def _store_prediction(model, stream):
    """The fitted attributes and the predictor from the statistics."""
    model.alpha_ = stream.alpha * model._y_train_std
    predictor = model._predictor
    # every row seen is a basis vector: the exact GP (its factor of K_uu + s2 I, extended
    # from the previous one by the new basis vectors, O(p^2) each); rows of their own noise
    # (weights, per-row noise) predict by the general form a^T S a, whose S has them
    weighted = (getattr(model, "_stream_weighted", False)
                or getattr(model, "_row_noise", None) is not None)
    full = stream.n_rows == stream.p and not weighted
    exact = exact_factor(stream.L, stream.jitter, stream.s2, predictor.exact) if full else None
    if predictor.L.shape[0] == stream.p:
        predictor.alpha, predictor.S, predictor.exact = model.alpha_, stream.S, exact
    else:  # a grown basis: a new kernel set-up against it
        model._predictor = RegressionPredictor(
            model.kernel_, model.basis_vectors_, model.alpha_, stream.L, stream.S, exact
        )
        model._predictor.inherit_inverse(predictor)
    model.log_marginal_likelihood_value_ = float(stream.value)


def stream_nbytes(model):
    """Bytes of the arrays a fitted model holds (the statistics, predictor and attributes)."""
    total = 0
    for value in vars(model).values():
        if isinstance(value, np.ndarray):
            total += value.nbytes
    stream = getattr(model, "_stream", None)
    if isinstance(stream, StreamingPosterior):
        total += stream.nbytes()
    predictor = getattr(model, "_predictor", None)
    if predictor is not None:
        total += predictor.L.nbytes + predictor.S.nbytes
        total += 0 if predictor.exact is None else predictor.exact.nbytes
    return total
