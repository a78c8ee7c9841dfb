"""Privacy budgets, calibration, conversion, composition and accounting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "PrivacyAccountant": "dpggm.privacy.accountant",
    "Spend": "dpggm.privacy.accountant",
    "SpendSink": "dpggm.privacy.accountant",
    "GDP": "dpggm.privacy.budgets",
    "ZCDP": "dpggm.privacy.budgets",
    "ApproxDP": "dpggm.privacy.budgets",
    "Budget": "dpggm.privacy.budgets",
    "NonPrivate": "dpggm.privacy.budgets",
    "PureDP": "dpggm.privacy.budgets",
    "budget_from_dict": "dpggm.privacy.budgets",
    "exact_cost": "dpggm.privacy.budgets",
    "classical_gaussian_sigma": "dpggm.privacy.calibration",
    "gaussian_sigma": "dpggm.privacy.calibration",
    "laplace_scale": "dpggm.privacy.calibration",
    "DEFAULT_REPORT_DELTA": "dpggm.privacy.guarantee",
    "PrivacyGuarantee": "dpggm.privacy.guarantee",
    "Ledger": "dpggm.privacy.ledger",
    "LedgerFormatError": "dpggm.privacy.ledger",
    "LedgerSink": "dpggm.privacy.ledger",
    "LedgerIntegrityError": "dpggm.privacy.ledger",
    "SpendRecord": "dpggm.privacy.ledger",
    "UnknownDatasetError": "dpggm.privacy.ledger",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.privacy.accountant import (
        PrivacyAccountant,
        Spend,
        SpendSink,
    )
    from dpggm.privacy.budgets import (
        GDP,
        ZCDP,
        ApproxDP,
        Budget,
        NonPrivate,
        PureDP,
        budget_from_dict,
        exact_cost,
    )
    from dpggm.privacy.calibration import (
        classical_gaussian_sigma,
        gaussian_sigma,
        laplace_scale,
    )
    from dpggm.privacy.guarantee import (
        DEFAULT_REPORT_DELTA,
        PrivacyGuarantee,
    )
    from dpggm.privacy.ledger import (
        Ledger,
        LedgerFormatError,
        LedgerIntegrityError,
        LedgerSink,
        SpendRecord,
        UnknownDatasetError,
    )

__all__ = [
    "DEFAULT_REPORT_DELTA",
    "GDP",
    "Ledger",
    "LedgerFormatError",
    "LedgerIntegrityError",
    "SpendRecord",
    "UnknownDatasetError",
    "ZCDP",
    "ApproxDP",
    "Budget",
    "NonPrivate",
    "PrivacyAccountant",
    "PrivacyGuarantee",
    "PureDP",
    "Spend",
    "SpendSink",
    "LedgerSink",
    "budget_from_dict",
    "classical_gaussian_sigma",
    "exact_cost",
    "gaussian_sigma",
    "laplace_scale",
]
