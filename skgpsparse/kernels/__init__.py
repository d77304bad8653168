"""scikit-learn kernels for the sparse models: K(X, Z), its diagonal and theta-gradients, chunked.

The models take scikit-learn's own kernels. What scikit-learn does not give, and the sparse
models need, is here: the gradient of the cross-covariance ``K(X, Z)`` between the data and the
basis vectors and of the diagonal ``k(x, x)`` with respect to ``kernel.theta``
(:func:`kernel_gradient`, :func:`kernel_diag_gradient`), and iteration over row chunks so that
no ``n x p x n_theta`` array is held (:func:`iter_kernel`, :func:`iter_kernel_gradient`).

The private modules below are the package's internal kernel layer, used by every estimator
family: the closed-form rules per leaf kernel (``_rules``), the gradients and chunking
(``_gradients``), the kernel columns of the greedy passes (``_columns``) and gradient
contractions that never form ``dK`` for the RBF (``_contraction``).
"""

from ._gradients import (
    KernelGradientWarning,
    iter_kernel,
    iter_kernel_gradient,
    kernel_diag_gradient,
    kernel_gradient,
)

__all__ = [
    "KernelGradientWarning",
    "iter_kernel",
    "iter_kernel_gradient",
    "kernel_diag_gradient",
    "kernel_gradient",
]
