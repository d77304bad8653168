"""The learning loops of one latent model, by rounds of basis selection and hyperparameter
steps.

- :mod:`._ep_rounds`: the rounds of the all-rows posterior (the default), the per-feature
  length-scale trial and the final run to convergence; :mod:`._charge_bound` and
  :mod:`._drawn_basis` serve them, :mod:`._duplicate_inputs` keeps twins of basis rows out;
- :mod:`._evidence_rounds`: the IVM's rounds (``hyperparameter_objective="evidence"``);
- :mod:`._hyperparameters`: the optimizer contract, the bias start and its bounds.
"""
