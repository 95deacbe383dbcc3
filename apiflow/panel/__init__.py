"""Calibrated simulated panels: fit sim profiles to the published corpus, check them, test rankings.

``apiflow panel fit`` turns the published table into pinned per-model parameters
(``configs/panels/``), ``apiflow panel check`` runs the calibrated panel on a bank and prints
published vs simulated, ``apiflow panel stability`` reruns it on regenerated private splits
(docs/design/070-bank-science.md).
"""
