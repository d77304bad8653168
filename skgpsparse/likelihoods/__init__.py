"""Likelihoods: what the inference engines ask of the observation model ``p(y | f)``.

Every engine of the package (ADF on the basis, EP over every row, the streaming ADF) and
every objective and predictor that touches ``p(y | f)`` goes through a :class:`Likelihood`:
the tilted moments ``log Z`` and its derivatives in the cavity mean and variance, the ADF/EP
site update, the log predictive density and the start of the bias (the latent offset ``b``,
learned with the kernel hyperparameters). No engine names a link function, so a new
likelihood is one class here and no engine changes.

- :class:`Likelihood`: the interface, with Gauss-Hermite defaults that need only
  :meth:`Likelihood.log_density`;
- :class:`Probit`: ``p(y | f) = Phi(y f / sqrt(variance))``, ``y in {-1, +1}``, in closed
  form (the classifier's with ``variance=1``; the relevance vector classifier's with its
  ``probit_variance``);
- :class:`Poisson`: counts with the log link (moments by quadrature at the tilted mode);
- :class:`StudentT`: real targets with heavy-tailed noise (moments by quadrature over its
  Gaussian scale mixture).

A likelihood of one's own is passed as ``SparseGPClassifier(likelihood=...)``.

Examples
--------
>>> import numpy as np
>>> from skgpsparse.likelihoods import Probit
>>> lik = Probit()
>>> log_z, d_mean, d_var = lik.tilted(np.array([1.0]), np.array([0.0]), np.array([1.0]))
>>> round(float(np.exp(log_z[0])), 6)
0.5
"""

from ._base import Likelihood
from ._poisson import Poisson
from ._probit import Probit
from ._student_t import StudentT

__all__ = ["Likelihood", "Poisson", "Probit", "StudentT"]
