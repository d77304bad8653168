"""The latent model's hyperparameter objectives, each with its analytic gradient.

- :mod:`._nlp_loss`: the validation NLP over the non-basis rows (validation paper eq. (2.8)),
  and :mod:`._nlp_loss_partitioned` its sums over row partitions;
- :mod:`._basis_evidence`: the IVM's EP evidence of the basis labels;
- :mod:`._ep_evidence`: the EP evidence of every label under the sparse prior (the default);
- :mod:`._hyperprior`: the length-scale hyperprior added to the latter (MAP).
"""
