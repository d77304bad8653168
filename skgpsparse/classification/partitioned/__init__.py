"""The classifier's fit on a row store (:mod:`skgpsparse.rows`): rows in partitions.

- :mod:`._fit`: the entry (binary and one-vs-rest), the basis posterior on the partitions;
- the all-rows posterior learned on gathered rows with EP on the partitions is the latent
  model's (:mod:`skgpsparse.latent._partitioned`);
- :mod:`._shared_fit`: the shared multi-class fit with each class's EP on the partitions.
"""
