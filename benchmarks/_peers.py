"""GPflow's SGPR and SVGP on one thread, and the metrics both sides of a comparison share.

The peers are measured in the same run as skgpsparse, on the same split and with the same
scoring code (:func:`regression_metrics`, :func:`classification_metrics`), so that a table's
rows differ only by the model. GPflow and TensorFlow come from the ``peers`` extra
(``pip install ".[peers]"``) and are imported only when a peer is fitted; the tests and CI
never need them.
"""

import os
import time

import numpy as np

__all__ = [
    "classification_metrics",
    "fit_sgpr",
    "fit_svgp",
    "regression_metrics",
    "standardise",
]

_LOG_2PI = np.log(2.0 * np.pi)


def standardise(X_train, X_test, y_train=None, y_test=None):
    """Inputs (and targets) scaled by the training rows' mean and standard deviation."""
    mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
    sd[sd == 0] = 1.0
    out = [(X_train - mu) / sd, (X_test - mu) / sd]
    if y_train is not None:
        ym, ys = y_train.mean(), y_train.std()
        out += [(y_train - ym) / ys, (y_test - ym) / ys]
    return out


def regression_metrics(y, mean, var):
    """Test NMSE, NLPD and mean z^2 of Gaussian predictions ``N(mean, var)`` (noise included).

    NMSE is the mean squared error over the test targets' variance; NLPD the mean negative log
    predictive density; ``z^2 = (y - mean)^2 / var``, whose mean is 1 for calibrated error bars.
    """
    var = np.maximum(var, np.finfo(float).tiny)
    r2 = (y - mean) ** 2
    return {
        "nmse": float(np.mean(r2) / np.var(y)),
        "nlpd": float(np.mean(0.5 * (_LOG_2PI + np.log(var) + r2 / var))),
        "z2": float(np.mean(r2 / var)),
    }


def classification_metrics(y01, p1):
    """Test NLP (mean negative log probability of the true label) and error rate."""
    p1 = np.clip(p1, 1e-300, 1.0 - 1e-16)
    nlp = -np.mean(np.where(y01 == 1, np.log(p1), np.log1p(-p1)))
    return {"nlp": float(nlp), "error": float(np.mean((p1 > 0.5) != (y01 == 1)))}


def _tensorflow():
    """TensorFlow and GPflow on one thread, or a clear error naming the extra."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import gpflow
        import tensorflow as tf
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'The GPflow peers need the "peers" extra: pip install ".[peers]" '
            f"(GPflow and TensorFlow). Import failed: {exc}"
        ) from exc
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        pass  # already initialised: the first call's setting holds
    gpflow.config.set_default_float(np.float64)
    return tf, gpflow


def _timed_minimize(gpflow, model, loss, maxiter):
    """Full-batch L-BFGS on ``loss``; returns (CPU s, wall s, iterations)."""
    cpu, wall = time.process_time(), time.perf_counter()
    res = gpflow.optimizers.Scipy().minimize(
        loss, model.trainable_variables, options={"maxiter": int(maxiter)}, compile=True
    )
    return time.process_time() - cpu, time.perf_counter() - wall, int(res.nit)


def fit_sgpr(X, y, X_test, y_test, n_inducing, *, optimise_inducing, maxiter=1000, seed=0,
             inducing=None, lengthscale=None, variance=1.0, noise_variance=0.1):
    """GPflow's SGPR (Titsias' bound), ARD squared exponential, on one thread.

    The inducing inputs are ``inducing`` if given, else a random subset of ``n_inducing``
    training rows (``seed``); they are optimised with the hyperparameters if
    ``optimise_inducing``, fixed otherwise. Length scales start at ``lengthscale`` (default
    ``sqrt(d)`` in every dimension), the variance at ``variance`` and the noise at
    ``noise_variance`` (GPflow's SGPR starting noise is 1).

    Returns
    -------
    record : dict
        ``nmse``, ``nlpd``, ``z2`` (see :func:`regression_metrics`), ``fit_cpu``, ``fit_wall``,
        ``predict_wall``, ``iterations``, ``noise_variance``.
    """
    tf, gpflow = _tensorflow()
    d = X.shape[1]
    if inducing is None:
        rng = np.random.RandomState(seed)
        inducing = X[rng.choice(X.shape[0], size=n_inducing, replace=False)]
    ls = np.full(d, np.sqrt(d)) if lengthscale is None else np.asarray(lengthscale, float)
    kernel = gpflow.kernels.SquaredExponential(variance=float(variance), lengthscales=ls)
    model = gpflow.models.SGPR(
        (X, y.reshape(-1, 1)), kernel, inducing_variable=np.array(inducing, dtype=float),
        noise_variance=float(noise_variance),
    )
    if not optimise_inducing:
        gpflow.set_trainable(model.inducing_variable, False)
    fit_cpu, fit_wall, nit = _timed_minimize(gpflow, model, model.training_loss, maxiter)
    tic = time.perf_counter()
    mean, var = model.predict_y(X_test)
    predict_wall = time.perf_counter() - tic
    rec = regression_metrics(y_test, mean.numpy()[:, 0], var.numpy()[:, 0])
    rec.update(fit_cpu=fit_cpu, fit_wall=fit_wall, predict_wall=predict_wall, iterations=nit,
               noise_variance=float(model.likelihood.variance.numpy()))
    return rec


def fit_svgp(X, y01, X_test, y01_test, n_inducing, *, seed=0, maxiter=2000, ard=True):
    """GPflow's SVGP with a Bernoulli (probit) likelihood, full-batch L-BFGS, one thread.

    Inducing inputs start at a random subset of ``n_inducing`` training rows (``seed``) and are
    optimised with the variational parameters (whitened) and the hyperparameters; squared
    exponential kernel, ARD length scales started at ``sqrt(d)`` (one shared length scale
    with ``ard=False``).

    Returns
    -------
    record : dict
        ``nlp``, ``error`` (see :func:`classification_metrics`), ``fit_cpu``, ``fit_wall``,
        ``predict_wall``, ``iterations`` and ``p1`` (the test probabilities of class 1, for
        the spread over seeds).
    """
    tf, gpflow = _tensorflow()
    d = X.shape[1]
    rng = np.random.RandomState(seed)
    Z = X[rng.choice(X.shape[0], size=n_inducing, replace=False)]
    ls = np.full(d, np.sqrt(d)) if ard else float(np.sqrt(d))
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=ls)
    model = gpflow.models.SVGP(
        kernel, gpflow.likelihoods.Bernoulli(), np.array(Z, dtype=float), whiten=True,
        num_data=X.shape[0],
    )
    data = (np.asarray(X, float), np.asarray(y01, float).reshape(-1, 1))
    loss = model.training_loss_closure(data)
    fit_cpu, fit_wall, nit = _timed_minimize(gpflow, model, loss, maxiter)
    tic = time.perf_counter()
    p1, _ = model.predict_y(np.asarray(X_test, float))
    predict_wall = time.perf_counter() - tic
    p1 = p1.numpy()[:, 0]
    rec = classification_metrics(np.asarray(y01_test), p1)
    rec.update(fit_cpu=fit_cpu, fit_wall=fit_wall, predict_wall=predict_wall, iterations=nit,
               p1=p1.tolist())
    return rec


