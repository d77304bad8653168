"""The latent GP under a likelihood: one sparse model of ``p(y | f(x) + b)``, fitted and
predicted.

A latent function ``f`` with a GP prior, a bias ``b`` and an observation model ``p(y | f + b)``
(:mod:`skgpsparse.likelihoods`: the probit of a binary label, the Poisson of a count, the
Student-t of a real target): the basis chosen by greedy forward selection and exchange, the
posterior by ADF on the basis or EP over every row (:mod:`skgpsparse.inference`), the
hyperparameters learned by the families' objectives. The classifier fits one such model per
binary problem; the regressor one per non-Gaussian target (``likelihood="poisson"`` or
``"student_t"``). Nothing here knows what the targets mean.

- :mod:`._model`: :class:`~skgpsparse.latent._model.LatentSparseGP`, the two-loop design of
  the validation paper, with basis selection, exchange and the evidence;
- :mod:`._predictors`: the latent moments at new rows from a fitted posterior;
- :mod:`._leave_one_out`: EP's leave-one-out predictive at the training rows of an all-rows
  fit (each row's cavity);
- ``learning``: the loops (the all-rows posterior's rounds, the IVM's rounds, the bias start
  and the optimizer contract);
- ``objectives``: the hyperparameter objectives with their analytic gradients.
"""
