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
    "count_metrics",
    "fit_and_score",
    "fit_sgpr",
    "fit_svgp",
    "fit_svgp_likelihood",
    "fit_svgp_minibatch",
    "gaussian_count_log_mass",
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


def fit_and_score(model, X, y, X_test, y_test):
    """Fit a regressor on one thread (warnings silenced) and score it on the test rows.

    :func:`regression_metrics` of its predictions with the noise, and ``fit_cpu``: the
    fit's process time.
    """
    import warnings

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = time.process_time()
        model.fit(X, y)
        cpu = time.process_time() - cpu
        mean, std = model.predict(X_test, return_std=True)
    rec = regression_metrics(y_test, mean, std**2 + model.noise_variance_)
    rec["fit_cpu"] = cpu
    return rec


def classification_metrics(y01, p1):
    """Test NLP (mean negative log probability of the true label) and error rate."""
    p1 = np.clip(p1, 1e-300, 1.0 - 1e-16)
    nlp = -np.mean(np.where(y01 == 1, np.log(p1), np.log1p(-p1)))
    return {"nlp": float(nlp), "error": float(np.mean((p1 > 0.5) != (y01 == 1)))}


def count_metrics(y, mean, log_density, clip):
    """Mean Poisson deviance of the predicted means (clipped below at ``clip``, which a
    Gaussian's mean needs: the deviance takes positive means only), the mean test log
    probability of the counts ``lpd`` (``log_density``: one per row) and ``clipped``: how
    many means were clipped."""
    from sklearn.metrics import mean_poisson_deviance

    return {"deviance": float(mean_poisson_deviance(y, np.maximum(mean, clip))),
            "lpd": float(np.mean(log_density)), "clipped": int(np.sum(mean < clip))}


def gaussian_count_log_mass(y, mean, var):
    """``log P(y - 1/2 < Y < y + 1/2)`` for ``Y ~ N(mean, var)``: the probability that a
    Gaussian predictive gives a count ``y`` when rounded (the mass below -1/2 is lost to it).
    """
    from scipy.special import log_ndtr

    s = np.sqrt(np.maximum(var, np.finfo(float).tiny))
    a, b = (y - 0.5 - mean) / s, (y + 0.5 - mean) / s
    # Phi(b) - Phi(a) = Phi(-a) - Phi(-b): difference the small tails, for accuracy
    upper = a > 0
    hi, lo = np.where(upper, -a, b), np.where(upper, -b, a)
    log_hi, log_lo = log_ndtr(hi), log_ndtr(lo)
    return log_hi + np.log1p(-np.exp(np.minimum(log_lo - log_hi, -1e-300)))


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


def fit_svgp_likelihood(X, y, X_test, y_test, likelihood, *, n_inducing=100, maxiter=1000,
                        seed=0, df=4.0, scale=0.1 ** 0.5):
    """GPflow's SVGP with a Poisson or Student-t likelihood, full-batch L-BFGS, one thread.

    Whitened SVGP, ARD squared exponential kernel (unit variance, length scales started at
    ``sqrt(d)``), ``n_inducing`` inducing inputs started at k-means centres of the training
    rows (``seed``) and optimised with the variational parameters and the hyperparameters.
    ``likelihood="poisson"``: GPflow's ``Poisson`` (log link, the rate ``exp(f)``) with a
    trainable constant mean started at ``log(mean(y))``; ``"student_t"``: GPflow's ``StudentT``
    with ``df`` degrees of freedom (fixed: GPflow does not learn them) and a learned scale
    started at ``scale``, zero mean (standardised targets).

    Returns
    -------
    record : dict
        ``mean`` and ``var`` (the predictive mean and variance of y at the test rows),
        ``log_density`` (``log p(y_* | x_*)`` of each test row, by GPflow's quadrature over the
        latent), ``fit_cpu``, ``fit_wall``, ``predict_wall``, ``iterations`` and the learned
        likelihood parameter (``scale`` for the Student-t).
    """
    tf, gpflow = _tensorflow()
    X = np.ascontiguousarray(X, dtype=float)
    X_test = np.ascontiguousarray(X_test, dtype=float)
    Y = np.asarray(y, float).reshape(-1, 1)
    d = X.shape[1]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    Z = _kmeans_inducing(X, n_inducing, seed)
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=np.full(d, np.sqrt(d)))
    if likelihood == "poisson":
        lik = gpflow.likelihoods.Poisson()
        mean_function = gpflow.mean_functions.Constant(np.log(max(float(np.mean(y)), 1e-3)))
    elif likelihood == "student_t":
        lik = gpflow.likelihoods.StudentT(scale=float(scale), df=float(df))
        mean_function = None
    else:
        raise ValueError(f"likelihood must be 'poisson' or 'student_t', got {likelihood!r}")
    model = gpflow.models.SVGP(kernel, lik, Z, mean_function=mean_function, whiten=True,
                               num_data=X.shape[0])
    init_cpu, init_wall = time.process_time() - cpu0, time.perf_counter() - wall0
    loss = model.training_loss_closure((X, Y))
    fit_cpu, fit_wall, nit = _timed_minimize(gpflow, model, loss, maxiter)
    tic = time.perf_counter()
    mean, var = model.predict_y(X_test)
    log_density = model.predict_log_density((X_test, np.asarray(y_test, float).reshape(-1, 1)))
    predict_wall = time.perf_counter() - tic
    rec = {"mean": mean.numpy()[:, 0], "var": var.numpy()[:, 0],
           "log_density": np.asarray(log_density.numpy()).reshape(-1),
           "fit_cpu": fit_cpu + init_cpu, "fit_wall": fit_wall + init_wall,
           "predict_wall": predict_wall, "iterations": nit,
           "gpflow": gpflow.__version__, "tensorflow": tf.__version__}
    if likelihood == "student_t":
        rec["scale"] = float(model.likelihood.scale.numpy())
    return rec


def _kmeans_inducing(X, n_inducing, seed, max_rows=20_000):
    """``n_inducing`` k-means centres of at most ``max_rows`` random training rows (scipy)."""
    from scipy.cluster.vq import kmeans2

    rng = np.random.default_rng(seed)
    rows = X if X.shape[0] <= max_rows else X[rng.choice(X.shape[0], max_rows, replace=False)]
    Z, _ = kmeans2(np.asarray(rows, float), int(n_inducing), minit="++", seed=seed)
    return Z


def _svgp_metrics(model, kind, X, y):
    """Test metrics of a fitted SVGP: regression, binary or multi-class."""
    mean, var = model.predict_y(np.asarray(X, float))
    mean, var = mean.numpy(), var.numpy()
    if kind == "gaussian":
        return regression_metrics(y, mean[:, 0], var[:, 0])
    if kind == "bernoulli":
        return classification_metrics(np.asarray(y), mean[:, 0])
    y = np.asarray(y, int)
    p_true = np.clip(mean[np.arange(y.size), y], 1e-300, None)
    return {"nlp": float(-np.mean(np.log(p_true))),
            "error": float(np.mean(np.argmax(mean, axis=1) != y))}


def fit_svgp_minibatch(X, y, X_test, y_test, likelihood, *, n_inducing=100, batch_size=1000,
                       learning_rate=0.01, max_steps=10_000, eval_every=500, monitor_rows=5000,
                       tol=1e-3, patience=3, seed=0, num_classes=None, train_inducing=True,
                       on_checkpoint=None):
    """GPflow's SVGP trained by Adam on minibatches (Hensman et al. 2013; 2015), one thread.

    The recipe of GPflow's "GPs for big data" notebook: a whitened SVGP with ``num_data = n``,
    ARD squared exponential kernel (length scales started at ``sqrt(d)``), ``n_inducing``
    inducing inputs started at k-means centres of (at most 20,000) training rows, and Adam
    (``learning_rate``) on the minibatch ELBO of ``batch_size`` rows, the rows visited in a
    fresh random order each epoch. The inducing inputs are trained too unless
    ``train_inducing=False`` (the notebook fixes them). ``likelihood`` is ``"gaussian"``,
    ``"bernoulli"`` (GPflow's default probit link, as skgpsparse's classifier) or
    ``"softmax"`` (``num_classes`` latent GPs sharing the kernel and inducing inputs; GPflow's
    Monte Carlo softmax likelihood).

    Every ``eval_every`` steps the training is paused (the pause is not counted in the fit
    CPU time) to record the test metrics and a monitor: the in-sample predictive NLP (NLPD for
    ``"gaussian"``) of ``monitor_rows`` fixed training rows. The stopping rule uses only the
    monitor: the first checkpoint after which it has not improved by ``tol`` for ``patience``
    checkpoints. Training always runs ``max_steps`` so that the whole curve is recorded;
    ``on_checkpoint(point)``, if given, is called with each checkpoint's record as it is made.

    Returns
    -------
    record : dict
        ``curve``: one dict per checkpoint (``steps``, ``epochs``, ``fit_cpu`` (cumulative,
        with the k-means start), ``fit_wall``, ``monitor`` and the test metrics of
        :func:`regression_metrics` or :func:`classification_metrics`); ``stop``: the index in
        ``curve`` where the stopping rule ends training; ``init_cpu``, the settings.
    """
    tf, gpflow = _tensorflow()
    n, d = X.shape
    X = np.ascontiguousarray(X, dtype=float)
    kind = likelihood
    cpu0, wall0 = time.process_time(), time.perf_counter()
    Z = _kmeans_inducing(X, n_inducing, seed)
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=np.full(d, np.sqrt(d)))
    if kind == "gaussian":
        lik, latents = gpflow.likelihoods.Gaussian(variance=0.1), 1
    elif kind == "bernoulli":
        lik, latents = gpflow.likelihoods.Bernoulli(), 1
    elif kind == "softmax":
        lik, latents = gpflow.likelihoods.Softmax(int(num_classes)), int(num_classes)
    else:
        raise ValueError(f"likelihood must be 'gaussian', 'bernoulli' or 'softmax', got {kind!r}")
    model = gpflow.models.SVGP(kernel, lik, Z, num_latent_gps=latents, whiten=True, num_data=n)
    if not train_inducing:
        gpflow.set_trainable(model.inducing_variable, False)
    Y = np.asarray(y, np.int64 if kind == "softmax" else float).reshape(-1, 1)
    variables = model.trainable_variables
    optimizer = tf.keras.optimizers.Adam(learning_rate=learning_rate)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = model.training_loss((xb, yb))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    rng = np.random.default_rng(seed)
    monitor_idx = rng.choice(n, size=min(n, monitor_rows), replace=False)
    init_cpu = time.process_time() - cpu0
    fit_cpu, fit_wall = init_cpu, time.perf_counter() - wall0
    curve, order, pos, stop, best, since = [], rng.permutation(n), 0, None, np.inf, 0
    cpu, wall = time.process_time(), time.perf_counter()
    for k in range(1, max_steps + 1):
        if pos + batch_size > n:
            order, pos = rng.permutation(n), 0
        rows = order[pos:pos + batch_size]
        pos += batch_size
        step(tf.constant(X[rows]), tf.constant(Y[rows]))
        if k % eval_every == 0:
            fit_cpu += time.process_time() - cpu
            fit_wall += time.perf_counter() - wall
            mon = _svgp_metrics(model, kind, X[monitor_idx], np.asarray(y)[monitor_idx])
            point = {"steps": k, "epochs": k * batch_size / n, "fit_cpu": fit_cpu,
                     "fit_wall": fit_wall,
                     "monitor": mon["nlpd" if kind == "gaussian" else "nlp"]}
            point.update(_svgp_metrics(model, kind, X_test, y_test))
            curve.append(point)
            if on_checkpoint is not None:
                on_checkpoint(point)
            if point["monitor"] < best - tol:
                best, since = point["monitor"], 0
            else:
                since += 1
            if stop is None and since >= patience:
                stop = len(curve) - 1
            cpu, wall = time.process_time(), time.perf_counter()
    return {"curve": curve, "stop": len(curve) - 1 if stop is None else stop,
            "init_cpu": init_cpu, "n_inducing": n_inducing, "batch_size": batch_size,
            "learning_rate": learning_rate, "train_inducing": train_inducing,
            "likelihood": kind, "gpflow": gpflow.__version__, "tensorflow": tf.__version__}
