"""Synthetic generators of the source papers' models and loaders of bundled real data."""

from dpggm.datasets.real import (
    RealData,
    load_breast_cancer,
    load_diabetes,
    load_wine,
    rescale_to_unit_box,
)
from dpggm.datasets.synthetic import (
    SyntheticData,
    make_chain,
    make_raw_chain,
    make_seed000_model,
    make_seed001_uut,
    make_sparse_covariance,
    make_sparse_precision,
    sample_gaussian,
)

__all__ = [
    "RealData",
    "SyntheticData",
    "load_breast_cancer",
    "load_diabetes",
    "load_wine",
    "make_chain",
    "make_raw_chain",
    "make_seed000_model",
    "make_seed001_uut",
    "make_sparse_covariance",
    "make_sparse_precision",
    "rescale_to_unit_box",
    "sample_gaussian",
]
