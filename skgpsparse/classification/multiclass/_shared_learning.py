"""``multi_class="shared"``: the one-vs-rest models share their kernel and length-scale
decision; each class keeps its own basis, bias and EP sites.

One-vs-rest with ``K`` classes fits ``K`` binary problems ``y_k = +1`` (class ``k``) against
``-1`` (the rest). Fitted independently (``multi_class="independent"``), each has its own basis
selection, kernel learning and per-feature trial: ``K`` times one binary fit, most of it in the
kernel learning (an EP run over all rows at every L-BFGS evaluation). Here:

- one kernel ``theta`` is learned on the summed all-rows EP evidence of the ``K`` problems, one
  bias ``b_k`` per class (:class:`SharedObjective`, ``-sum_k log Z_k``: the sparse prior's
  factors ``K_uu``, ``V = L^-1 K_uf`` and ``Lambda`` are formed once per evaluation for all
  classes), on a class-stratified subsample of :func:`learn_size` rows (``LEARN_ROWS``,
  more on large sets, at most ``learning_rows``) and a basis of :func:`learn_basis_size` of
  them shared by the classes (``LEARN_BASIS``, four per class with many classes), chosen
  greedily on the criteria of their ``K`` ADF states summed (:class:`SummedStates`), in rounds
  of selection and learning as the binary fit's;
- one decision for one length scale per feature (the default kernel), by the binary fit's BIC
  rule on the evidence summed over the ``K n`` labels (the length scales are shared by the
  ``K`` problems, so they are charged once, for ``K n`` labels), learned on the kept round's
  basis (one round, no re-selection);
- then each class selects its own basis under the shared kernel and its bias (the binary fit's
  selection, on the rows the binary fit selects on: every row up to ``learning_rows``, its random
  subsample above) and runs EP on all rows, and becomes a binary model as the independent fit's
  (``estimators_``); :mod:`skgpsparse.classification.multiclass._shared_fit` runs these stages
  (over ``n_jobs``, joblib; the shared learning in one process),
  :mod:`skgpsparse.classification.partitioned._shared_fit` on a partitioned array's partitions.

A warm start begins the learning at the last fit's kernel and biases and each class's selection at
its last basis; restarts (``n_restarts``, :mod:`skgpsparse.classification.multiclass._one_vs_rest`)
offset every class's starting bias alike and keep the fit of the highest summed evidence.

Every EP run of the learning is Anderson-accelerated (:mod:`skgpsparse.inference._ep_acceleration`:
the same fixed point in fewer sweeps; on letter each class's EP on all rows took 18-200 plain
sweeps, 14-25 accelerated); the ``K`` runs of an evaluation are batched per sweep, each the run
it would be alone (:mod:`skgpsparse.inference._ep_batched`), and the gradient in ``theta``
forms the classes' summed weights once and contracts them with the kernel's derivatives once
per evaluation, not once per class (:func:`~skgpsparse.inference._ep.contract_theta_gradient`).

Memory: one binary fit's per job, plus the ``K`` ADF states of the learning rows (``K`` times
:func:`learn_basis_size` floats a learning row).

With the hyperparameters fixed (``optimizer=None``) each class's model is the independent fit's
(same kernel, class-balance bias, basis and EP fixed point, to EP's tolerance). One basis shared by
all classes in the final posteriors too was tried and lost: on pmlb letter (26 classes, 5,000 rows,
``max_basis=100``) test NLP 0.68 against 0.48 with a basis per class ("Many classes" in the
benchmark log: benchmarks/README.md, "History").
"""

import numbers

import numpy as np
from sklearn.base import clone

from ..._row_weights import total_weight
from ...inference._adf import ADFState
from ...inference._ep import _EP_TOL, contract_theta_gradient
from ...inference._ep_batched import negative_log_evidences
from ...inference._ep_passes import PROBIT
from ...inference._sparse_prior import SparsePrior
from ...latent._model import LatentSparseGP
from ...latent.learning._ep_rounds import _per_feature_choice, _rounds
from ...latent.learning._hyperparameters import (
    BIAS_BOUNDS,
    check_bounds,
    initial_bias,
    minimize_theta,
)
from ...latent.objectives._ep_evidence import PRIOR
from ...latent.objectives._hyperprior import with_length_scale_prior

__all__ = [
    "SharedObjective", "SummedStates", "learn_basis_size", "learn_shared", "learn_size",
]

# Rows of the class-stratified subsample on which the shared kernel and the biases are
# learned (:func:`learn_size`; each evaluation is one EP run per class on them): LEARN_ROWS,
# or one row in LEARN_FRACTION of the training rows where that is more (the same up to 20,000
# rows), at most LEARN_BUDGET / K (each evaluation's EP work grows as K n_l LEARN_BASIS^2).
# Session 21 ("Many classes at 10^5-10^6 rows" in the benchmark log: benchmarks/README.md,
# "History"): with 1,000 rows at 10^5-10^6 training rows the shared fit lost 0.008-0.031 test
# NLP to the independent fits; 3,000-5,000 rows took most of that back at a few seconds more.
LEARN_ROWS = 1000
LEARN_FRACTION = 20
LEARN_BUDGET = 15_000
# Largest basis of the shared learning on those rows (each class's final basis is max_basis on
# all rows). Measured against max_basis=100 (benchmarks/studies/results/multiclass.md): letter
# 0.59x the CPU at test NLP 0.3692 against 0.3711, splice 0.45x at 0.2537 against 0.2456,
# pendigits 0.65x at 0.0649 against 0.0624 (a trade, not a free gain). Session 20 tried
# more rows and a larger basis for fewer classes (K n_l p_l^2 held at letter's): connect-4
# 0.717 against 0.828 on one split, but splice 0.27-0.28 against 0.23-0.26 on three, at
# 1.5-2.5x the CPU; not kept (benchmarks/studies/results/multiclass.md, session 20).
LEARN_BASIS = 50
# ... and at least LEARN_BASIS_PER_CLASS basis vectors per class (at most max_basis): the K
# classes share the learning's one basis, so with many classes each boundary gets few of its
# vectors, and the length scales learned on it come out longer than the final per-class bases
# of max_basis support. Session 27 (benchmarks/studies/results/multiclass_variants.md), letter
# (26 classes, max_basis=100, so a learning basis of 100): test NLP 0.3675 against 0.3739 at
# 1.37x the CPU; the same basis of 100 on the sets of 3-10 classes (which keep 50 under this
# rule) lost on splice (0.27-0.29 against 0.23-0.26, three splits) and was even elsewhere.
LEARN_BASIS_PER_CLASS = 4
# EP's tolerance while the optimiser searches (as the binary fit's _ep_rounds._SEARCH_TOL).
_SEARCH_TOL = 1e-3


class SummedStates:
    """The selection protocol over ``K`` ADF states that share one basis.

    A selector sees one state whose score of a candidate is the sum of the ``K`` states'
    scores (lower is better; a candidate with no variance left in any state scores ``inf``),
    whose sampling weights are their mean, and whose :meth:`add` and :meth:`remove` change
    every state alike; :meth:`nlp` and :meth:`deletion_scores` are the mean and the sum over
    the states (the exchange steps of :meth:`LatentSparseGP._exchange`).

    Parameters
    ----------
    states : list of ADFState
        One per class, over the same rows, empty or with the same basis.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.inference._adf import ADFState
    >>> from skgpsparse.classification.multiclass._shared_learning import SummedStates
    >>> X = np.linspace(-2, 2, 12)[:, None]; labels = np.arange(12) % 3
    >>> from skgpsparse.likelihoods import Probit
    >>> states = [ADFState(RBF(1.0), X, np.where(labels == k, 1.0, -1.0), -0.5, 4,
    ...                    likelihood=Probit()) for k in range(3)]
    >>> summed = SummedStates(states)
    >>> summed.add(int(np.argmin(summed.score("entropy", summed.candidates()))))
    >>> summed.size, [s.basis_indices.tolist() == summed.basis_indices.tolist() for s in states]
    (1, [True, True, True])
    """

    def __init__(self, states):
        self.states = list(states)

    @property
    def size(self):
        return self.states[0].size

    @property
    def basis_indices(self):
        return self.states[0].basis_indices

    @property
    def n_samples(self):
        return self.states[0].n_samples

    def candidates(self):
        """Rows that are candidates of every state (sorted)."""
        out = self.states[0].candidates()
        for state in self.states[1:]:
            out = np.intersect1d(out, state.candidates(), assume_unique=True)
        return out

    def score(self, criterion, J):
        """Sum over the states of their scores of ``J``."""
        return sum(np.asarray(state.score(criterion, J), dtype=float) for state in self.states)

    def sampling_weights(self, J):
        """Mean over the states of their sampling weights at ``J``."""
        return sum(state.sampling_weights(J) for state in self.states) / len(self.states)

    def add(self, j):
        for state in self.states:
            state.add(j)

    def exclude_rows(self, rows, excluded=True):
        for state in self.states:
            state.exclude_rows(rows, excluded)

    def remove(self, k):
        for state in self.states:
            state.remove(k)

    def deletion_scores(self):
        return sum(state.deletion_scores() for state in self.states)

    def nlp(self, *, all_points=False):
        return float(np.mean([state.nlp(all_points=all_points) for state in self.states]))


class SharedObjective:
    """``obj_func([theta..., b_1..b_K], eval_gradient=True)``: the mean over the ``K`` classes
    of ``-log Z_EP,k`` per row, all under one kernel.

    The sparse prior (:class:`~skgpsparse.inference._ep.SparsePrior`) is formed once per
    evaluation; each class's EP is warm-started from its sites of the previous finite evaluation.
    The gradient with respect to ``theta`` is the mean of the classes', and each bias's is its own
    class's.

    Parameters
    ----------
    kernel : Kernel
        Its ``theta`` is replaced by the first ``kernel.n_dims`` entries of each evaluation's.
    X : ndarray of shape (n, n_features)
    Y : ndarray of shape (K, n)
        The one-vs-rest labels in {-1, +1}, a row per class.
    X_u : ndarray of shape (p, n_features)
        The shared basis.
    sites : list of (tau, nu)
        Starting sites of each class.
    tol : float
        EP's tolerance on the site parameters.
    likelihood : Likelihood, default=Probit()
        ``p(y | f + b_k)`` of every class's problem.
    weights : ndarray of shape (n,), default=None
        The rows' weights (copies of each row; ``n`` in the mean is then their sum).
    """

    def __init__(self, kernel, X, Y, X_u, sites, tol=_EP_TOL, likelihood=PROBIT, weights=None):
        self.kernel, self.X, self.Y, self.X_u = kernel, X, Y, X_u
        self.weights = weights
        self.sites, self.tol, self.likelihood = list(sites), tol, likelihood

    def __call__(self, theta, eval_gradient=True):
        n_theta = self.kernel.n_dims
        K, n = self.Y.shape
        n = total_weight(n, self.weights)
        failed = np.finfo(float).max / 1e10  # keep the line search away, never a NaN
        try:
            prior = SparsePrior(self.kernel.clone_with_theta(theta[:n_theta]), self.X, self.X_u,
                                PRIOR, weights=self.weights)
            # the K classes' EP runs batched (the same runs as one class after another)
            outs = negative_log_evidences(prior, self.Y, theta[n_theta:], self.sites,
                                          eval_gradient=eval_gradient, tol=self.tol,
                                          likelihood=self.likelihood)
            grad = np.zeros(theta.shape)
            if eval_gradient:
                # the theta gradient is linear in each class's weights: their sum, contracted
                # with the kernel's derivatives once for all classes
                grad[:n_theta] = -contract_theta_gradient(prior, *outs[2]) / (K * n)
                grad[n_theta:] = outs[1] / (K * n)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            outs = None
        value = None if outs is None else sum(outs[0]) / (K * n)
        if value is None or not np.isfinite(value) or not np.all(np.isfinite(grad)):
            return (failed, np.zeros(theta.shape)) if eval_gradient else failed
        self.sites = outs[-1]
        return (value, grad) if eval_gradient else value


def _learn(model, kernel, biases, sites, X, Y, basis, stop=None):
    """``(theta, b_1..b_K)`` by the summed evidence on the fixed basis ``X[basis]``: ``(loss,
    kernel, biases, sites)``, the loss with the length-scale hyperprior (MAP).

    The objective is the mean over the ``K`` classes, so its curvature in each bias is ``1 /
    K`` of its class's, while that in ``theta`` is the classes' mean: the optimiser works on
    ``b_k / sqrt(K)``, which gives both the same scale (with the biases themselves, L-BFGS
    left them near their start). ``stop``: as in the binary fit's ``_learn``.
    """
    objective = SharedObjective(kernel, X, Y, X[basis], sites, tol=_SEARCH_TOL,
                                likelihood=model.likelihood, weights=model._row_weights)
    target = with_length_scale_prior(objective, kernel, total_weight(Y.shape[1],
                                                                     objective.weights))
    if model.optimizer is not None:
        scale = np.append(np.ones(kernel.n_dims), np.full(len(biases), np.sqrt(len(biases))))

        def scaled(c, eval_gradient=True):
            out = target(c * scale, eval_gradient)
            return (out[0], out[1] * scale) if eval_gradient else out

        theta0 = np.concatenate([kernel.theta, biases]) / scale
        bounds = np.vstack([kernel.bounds.reshape(-1, 2), np.tile(BIAS_BOUNDS, (len(biases), 1))])
        bounds = bounds / scale[:, None]
        bound = None if stop is None else stop(bounds)
        search = scaled if bound is None else bound.watch(scaled)
        theta, _ = minimize_theta(model.optimizer, search, theta0, bounds, callback=bound)
        theta = theta * scale
        kernel, biases = kernel.clone_with_theta(theta[: kernel.n_dims]), theta[kernel.n_dims:]
    objective.tol = _EP_TOL
    loss = float(target(np.concatenate([kernel.theta, biases]), eval_gradient=False))
    return loss, kernel, np.array(biases, dtype=float), objective.sites


def _select(model, kernel, X, Y, biases, rng):
    """A basis of ``model.max_basis`` rows chosen on the summed criteria of the ``K`` states."""
    states = [ADFState(kernel, X, Y[k], biases[k], model.max_basis, site_update=model.site_update,
                       likelihood=model.likelihood) for k in range(Y.shape[0])]
    model._twins_of(X)  # rows repeating a basis row's input are not candidates
    return model._select_into(SummedStates(states), rng).basis_indices.copy()


def _learning_rows(y_enc, n_rows, rng):
    """Sorted indices of a class-stratified subsample of about ``n_rows`` rows (all if fewer)."""
    n = y_enc.size
    if n <= n_rows:
        return np.arange(n)
    keep = []
    for label in np.unique(y_enc):
        rows = np.flatnonzero(y_enc == label)
        size = max(1, int(round(n_rows * rows.size / n)))
        keep.append(rng.permutation(rows)[:size])
    return np.sort(np.concatenate(keep))


def learn_size(n, n_classes, learning_rows, max_basis):
    """Rows of the shared learning on ``n`` training rows: ``LEARN_ROWS``, or ``n /
    LEARN_FRACTION`` where that is more, at most ``LEARN_BUDGET / K``, and at most
    ``learning_rows`` (an int; ``"auto"`` is above them).

    Examples
    --------
    >>> from skgpsparse.classification.multiclass._shared_learning import learn_size
    >>> learn_size(5_000, 26, "auto", 100), learn_size(10**5, 3, "auto", 100)
    (1000, 5000)
    >>> learn_size(10**6, 3, "auto", 100), learn_size(10**6, 26, "auto", 100)
    (5000, 1000)
    """
    size = max(LEARN_ROWS, min(n // LEARN_FRACTION, LEARN_BUDGET // n_classes))
    if isinstance(learning_rows, numbers.Integral) and not isinstance(learning_rows, bool):
        size = min(size, max(int(learning_rows), max_basis))
    return size


def learn_basis_size(n_classes, max_basis, n_rows):
    """The shared learning's basis size: ``LEARN_BASIS``, or ``LEARN_BASIS_PER_CLASS`` per
    class where that is more, at most ``max_basis`` and the ``n_rows`` learning rows.

    Examples
    --------
    >>> from skgpsparse.classification.multiclass._shared_learning import learn_basis_size
    >>> learn_basis_size(3, 100, 1000), learn_basis_size(26, 100, 1000)
    (50, 100)
    >>> learn_basis_size(15, 100, 1000), learn_basis_size(26, 30, 1000)
    (60, 30)
    """
    return min(max(LEARN_BASIS, LEARN_BASIS_PER_CLASS * n_classes), max_basis, n_rows)


def learn_shared(params, X, y_enc, n_classes, n, rng, warm=None, bias_offset=0.0):
    """The shared kernel and the biases learned on a class-stratified subsample of the rows
    ``X, y_enc`` (:func:`learn_size` of them, ``n`` the training rows these come from):
    ``(kernel, biases, rounds run, the learning model)``. ``warm``: the biases' start, one
    per class (``None``: the class balance)."""
    model = LatentSparseGP(**params)
    Y = np.where(y_enc[None, :] == np.arange(n_classes)[:, None], 1.0, -1.0)
    learn = _learning_rows(
        y_enc, learn_size(n, n_classes, params["learning_rows"], model.max_basis), rng
    )
    weights = model.sample_weight
    n = total_weight(y_enc.size, weights)
    kernel = clone(model.kernel)
    if warm is None:
        biases = np.array([initial_bias(kernel, X, Y[k], model.likelihood, weights)
                           for k in range(n_classes)])
    else:
        biases = np.array([float(b) for b in warm])
    biases = biases + bias_offset
    sites = [(np.zeros(learn.size), np.zeros(learn.size))] * n_classes
    model.loss_curve_ = []
    # the shared rounds on the learning rows (a basis of learn_basis_size of them)
    size = learn_basis_size(n_classes, model.max_basis, learn.size)
    learner = LatentSparseGP(**dict(params, max_basis=size))
    learner.loss_curve_ = model.loss_curve_
    learner._row_weights = None if weights is None else weights[learn]
    X_l, Y_l = X[learn], Y[:, learn]
    # the binary fit's rounds and per-feature trial with the shared steps; the extra length
    # scales are shared by the K problems, so the trial weighs the gain in log evidence summed
    # over the K n labels (K n times the mean per row and class) against the charge for K n
    steps = {"select": _select, "learn": _learn}
    # no charge bound on the rounds after the first (bound_rounds): the K biases move far from
    # their start in a round (splice: mean bias -0.88 -> -8.6), which the bound's quadratic
    # model of L-BFGS does not foresee; bounded, splice's second round ended at -logZ/n 0.4023
    # above the first's 0.3982 where its full run reaches 0.3973, and the fit kept the first:
    # test NLP 0.440 against 0.257 (benchmarks/studies/results/multiclass_variants.md; letter,
    # pendigits, sleep and connect-4 within 1e-4, at 1.0-1.2x the CPU)
    best, n_iter = _rounds(learner, kernel, biases, sites, X_l, Y_l, rng, model.max_iter,
                           bound_rounds=False, **steps)
    if model.per_feature_choice:
        # one round: the per-feature kernel learned on the kept basis, no re-selection (the
        # rounds after it kept the first round's model on letter and splice, at 1.4x the CPU)
        best, more = _per_feature_choice(learner, best, X_l, Y_l, rng,
                                         min(model.max_iter - n_iter, 1), n_classes * n, **steps)
        n_iter += more
    kernel, biases = best[1], best[2]
    if model.optimizer is not None:
        check_bounds(model, kernel)
    return kernel, biases, n_iter, model
