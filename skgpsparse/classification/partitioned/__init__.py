"""The classifier's fit on a row store (:mod:`skgpsparse.rows`): rows in partitions.

- :mod:`._fit`: the entry (binary and one-vs-rest), the basis posterior on the partitions;
- :mod:`._ep_fit`: the all-rows posterior learned on gathered rows, EP on the partitions;
- :mod:`._shared_fit`: the shared multi-class fit with each class's EP on the partitions.
"""
