"""The classifier's learning loops: one binary model from its parameters, by rounds of basis
selection and hyperparameter steps.

- :mod:`._binary`: the binary model, the papers' two-loop design and exchange;
- :mod:`._ep_rounds`: the rounds of the all-rows posterior (the default), the per-feature
  length-scale trial and the final run to convergence; :mod:`._charge_bound` and
  :mod:`._drawn_basis` serve them;
- :mod:`._evidence_rounds`: the IVM's rounds (``hyperparameter_objective="evidence"``);
- :mod:`._restarts`: bias starts chosen on held-out rows; :mod:`._hyperparameters`: the
  optimizer contract, the bias start and its bounds.
"""
