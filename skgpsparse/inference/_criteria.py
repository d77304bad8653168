"""The classifier's basis-selection criteria: one function each, registered by name.

A criterion scores candidates ``J`` (lower is better) from their per-candidate quantities: the
marginal ``N(f_hat_j + b, A_jj)`` of each candidate, its label and the moments ``(alpha_j, nu_j)``
of its ADF site update (additive-model paper eq. (2), from the state's likelihood), gathered in a
:class:`Candidates`. Criteria that need a pass over the rows (the tentative NLP after adding each
candidate) ask the state for it through ``state.tentative_nlp``. Both ADF states, in memory
(:class:`~skgpsparse.inference._adf.ADFState`) and on row partitions
(:class:`~skgpsparse.inference._adf_partitioned.PartitionedADFState`), score through
:func:`score_candidates`, so a criterion's formula is written once.

Adding a criterion is a function ``criterion(state, candidates) -> scores`` and its
:func:`register_criterion`; ``GreedySelector("name", ...)`` then selects by it.

Examples
--------
A criterion that prefers the candidates with the largest posterior variance:

>>> import numpy as np
>>> from sklearn.gaussian_process.kernels import RBF
>>> from skgpsparse.inference._adf import ADFState
>>> from skgpsparse.inference._criteria import CRITERIA, register_criterion
>>> from skgpsparse.likelihoods import Probit
>>> @register_criterion("doc_largest_variance")
... def largest_variance(state, candidates):
...     return -candidates.variance
>>> X = np.linspace(-2, 2, 20)[:, None]; y = np.where(X[:, 0] > 0, 1.0, -1.0)
>>> state = ADFState(RBF(1.0), X, y, 0.0, 3, likelihood=Probit())
>>> state.add(10)
>>> J = np.array([0, 9, 11])
>>> int(J[np.argmin(state.score("doc_largest_variance", J))])
0
>>> del CRITERIA["doc_largest_variance"]
"""

from typing import Callable, NamedTuple

import numpy as np

__all__ = [
    "CRITERIA", "Candidates", "register_criterion", "score_candidates", "tentative_criteria"
]


class Candidates(NamedTuple):
    """The per-candidate quantities a criterion reads (arrays of shape (kappa,))."""

    index: np.ndarray  # the candidates' training-set indices J
    mean: np.ndarray  # f_hat_j + b, the latent mean with the bias
    variance: np.ndarray  # A_jj, clipped at 0
    label: np.ndarray  # y_j
    alpha: np.ndarray  # d log Z_j / d mean: the mean moves by alpha_j A_.j (eq. (3))
    nu: np.ndarray  # the variance moves by -nu_j A_.j^2 (eq. (3))


class _Criterion(NamedTuple):
    function: Callable
    tentative: bool  # it takes a pass over the rows (the state fetches the candidates' columns)


# name -> criterion, in registration order (the error message lists them)
CRITERIA = {}


def register_criterion(name, *, tentative=False):
    """Register ``function(state, candidates) -> scores`` as the criterion ``name``.

    ``tentative=True`` marks a criterion that calls ``state.tentative_nlp`` (a pass over the
    rows with the candidates' kernel columns; a partitioned state fetches what that pass
    needs with the candidates' marginals).
    """

    def register(function):
        CRITERIA[name] = _Criterion(function, tentative)
        return function

    return register


def tentative_criteria():
    """Names of the registered criteria that take a pass over the rows (a partitioned state
    fetches their working set's values ahead, with the previous step's add)."""
    return tuple(name for name, entry in CRITERIA.items() if entry.tentative)


def score_candidates(state, criterion, J):
    """Scores of candidates ``J`` under ``criterion`` (lower is better), batched.

    ``state`` provides ``candidate_marginals(J, tentative)`` (``f_hat_J``, ``diag(A)_J``,
    ``y_J``), ``likelihood``, ``bias`` and ``_var_floor``; a candidate whose variance is
    not above the floor carries no information and scores ``inf``.
    """
    entry = CRITERIA.get(criterion)
    if entry is None:
        raise ValueError(
            f"Unknown criterion {criterion!r} for the classifier; expected one of "
            f"{', '.join(repr(name) for name in CRITERIA)}."
        )
    J = np.asarray(J, dtype=np.intp).reshape(-1)
    f_J, var_J, y_J = state.candidate_marginals(J, tentative=entry.tentative)
    a = np.maximum(var_J, 0.0)
    mean = f_J + state.bias
    precision, shift, alpha, nu = state.likelihood.site_update(y_J, mean, a)
    weights = getattr(state, "weights", None)
    if weights is not None:
        # a row of weight c joins with c copies of its site (precision c p_j, the same mean):
        # the moments of that site (nu = p / (1 + p A_jj), alpha = nu (m_j - f_j))
        precision = precision * weights[J]
        nu = precision / (1.0 + precision * a)
        alpha = nu * shift
    scores = entry.function(state, Candidates(J, mean, a, y_J, alpha, nu))
    return np.where(a > state._var_floor, scores, np.inf)


@register_criterion("entropy")
def entropy(state, candidates):
    """``log(1 - nu_j A_jj)``: the change of the posterior entropy at ``j`` (IVM, Lawrence
    et al. 2003; additive-model paper §4)."""
    a, nu = candidates.variance, candidates.nu
    # log(1 - nu A) = log((1 + A (1 - c)) / (1 + A)), c = nu (1 + A)
    c = nu * (1.0 + a)
    return np.log1p(a * (1.0 - c)) - np.log1p(a)


@register_criterion("info_gain")
def info_gain(state, candidates):
    """``-KL(q_new(f_j) || q(f_j))``, minus the information gained at ``j`` (Seeger et al.).

    With ``lambda_j = 1 - nu_j A_jj`` and ``f'_j - f_j = alpha_j A_jj``,
    ``2 KL = -log lambda_j + lambda_j - 1 + (f'_j - f_j)^2 / A_jj``. (The additive-model
    paper's §4 prints this sum with the signs of a loss; minimised as printed it would pick
    the least informative point.)
    """
    a, alpha = candidates.variance, candidates.alpha
    lam = 1.0 - candidates.nu * a  # A'_jj / A_jj
    return -0.5 * (-np.log(lam) + lam - 1.0 + alpha**2 * a)


@register_criterion("nlp", tentative=True)
def nlp(state, candidates):
    """NLP eq. (4) over the non-basis points after tentatively adding ``j`` (validation
    paper §2.5)."""
    return state.tentative_nlp(candidates, all_points=False)


@register_criterion("nlp_all", tentative=True)
def nlp_all(state, candidates):
    """NLP_a eq. (5) over all ``n`` points after tentatively adding ``j`` (additive-model
    paper §3)."""
    return state.tentative_nlp(candidates, all_points=True)
