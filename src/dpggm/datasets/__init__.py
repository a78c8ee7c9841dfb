"""Synthetic generators of the source papers' models, generated exports of real-looking
tables (:func:`make_questionnaire_export`) and loaders of bundled real data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "GroupNetworks": "dpggm.datasets.groups",
    "make_group_networks": "dpggm.datasets.groups",
    "QuestionnaireExport": "dpggm.datasets.exports",
    "make_questionnaire_export": "dpggm.datasets.exports",
    "RealData": "dpggm.datasets.real",
    "load_breast_cancer": "dpggm.datasets.real",
    "load_diabetes": "dpggm.datasets.real",
    "load_wine": "dpggm.datasets.real",
    "rescale_to_unit_box": "dpggm.datasets.real",
    "SyntheticData": "dpggm.datasets.synthetic",
    "make_chain": "dpggm.datasets.synthetic",
    "make_questionnaire": "dpggm.datasets.synthetic",
    "make_raw_chain": "dpggm.datasets.synthetic",
    "make_precision_model": "dpggm.datasets.synthetic",
    "make_uut_precision": "dpggm.datasets.synthetic",
    "make_sparse_covariance": "dpggm.datasets.synthetic",
    "make_sparse_precision": "dpggm.datasets.synthetic",
    "sample_gaussian": "dpggm.datasets.synthetic",
    # Earlier names, deprecated (not in __all__).
    "make_seed000_model": "dpggm.datasets.synthetic",
    "make_seed001_uut": "dpggm.datasets.synthetic",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.datasets.exports import QuestionnaireExport, make_questionnaire_export
    from dpggm.datasets.groups import GroupNetworks, make_group_networks
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
        make_precision_model,
        make_questionnaire,
        make_raw_chain,
        make_sparse_covariance,
        make_sparse_precision,
        make_uut_precision,
        sample_gaussian,
    )

__all__ = [
    "GroupNetworks",
    "QuestionnaireExport",
    "RealData",
    "SyntheticData",
    "load_breast_cancer",
    "load_diabetes",
    "load_wine",
    "make_chain",
    "make_group_networks",
    "make_questionnaire",
    "make_questionnaire_export",
    "make_raw_chain",
    "make_precision_model",
    "make_uut_precision",
    "make_sparse_covariance",
    "make_sparse_precision",
    "rescale_to_unit_box",
    "sample_gaussian",
]
