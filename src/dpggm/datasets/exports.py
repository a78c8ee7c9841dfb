"""Generated exports of the kind people hand over: a clinical questionnaire written as the
files a data manager sends (CSV, gzip CSV, a European CSV, an Excel workbook, an SPSS file),
with what such files carry -- an identifier, a visit date, a categorical column, skewed
Likert items, ``NA`` cells and trailing blank lines.

The records are made up from a public model; nothing here is private and no budget is
spent. The generator exists to test reading real-looking tables end to end
(``benchmarks/questionnaire_export.py``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.mechanisms.random import check_random_state

__all__ = ["EXPORT_FORMATS", "QuestionnaireExport", "make_questionnaire_export"]

#: The files :func:`make_questionnaire_export` writes, by name.
EXPORT_FORMATS = ("csv", "csv.gz", "eu.csv", "xlsx", "sav")
#: The reading options each file needs beyond the defaults (command-line form).
_OPTIONS = {"eu.csv": ("--delimiter", ";", "--decimal", ",")}


@dataclass(frozen=True, eq=False)
class QuestionnaireExport:
    """What :func:`make_questionnaire_export` wrote.

    Attributes
    ----------
    answers : DataFrame
        The respondents' records as generated: ``id``, ``date``, ``sex`` and the items
        (NaN where a cell was left empty); one row per respondent, no blank rows.
    items : list of str
        The Likert items' names (``item_01`` ...), answered ``1 .. levels``.
    skewed : list of str
        The items with most answers on one level.
    top_share : dict
        For every item, the share of its answers on its most frequent level.
    files : dict
        Format name (``"csv"``, ``"csv.gz"``, ``"eu.csv"``, ``"xlsx"``, ``"sav"``) -> path.
    options : dict
        Format name -> the extra command-line reading options its file needs.
    factor : ndarray of int
        The factor each item measures: items of one factor are dependent, items of
        different factors independent (the true graph joins the items of each factor).
    complete : DataFrame
        The items' answers before cells were emptied (for a non-private reference).
    """

    answers: pd.DataFrame
    items: list[str]
    skewed: list[str]
    top_share: dict[str, float]
    files: dict[str, Path] = field(default_factory=dict)
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    factor: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    complete: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def n_respondents(self) -> int:
        return int(self.answers.shape[0])


def _answers(rng: np.random.Generator, n: int, *, n_items: int, n_skewed: int,
             n_factors: int, levels: int, loading: float, top_share: float,
             missing_share: float) -> tuple[pd.DataFrame, pd.DataFrame, list[str], np.ndarray]:
    from scipy.stats import norm

    factor = np.arange(n_items) % n_factors
    latent = (loading * rng.standard_normal((n, n_factors))[:, factor]
              + math.sqrt(1 - loading**2) * rng.standard_normal((n, n_items)))
    skewed = np.sort(rng.choice(n_items, size=n_skewed, replace=False))
    even = norm.ppf(np.arange(1, levels) / levels)
    # A skewed item puts top_share of its answers on the second-highest level, the rest
    # spread over the others (the lowest levels are rare, as on a satisfaction scale).
    rest = (1 - top_share) / (levels - 1)
    below = np.cumsum([rest] * (levels - 2))
    lopsided = norm.ppf(np.append(below, below[-1] + top_share))
    items = [f"item_{k + 1:02d}" for k in range(n_items)]
    values = np.empty((n, n_items))
    for k in range(n_items):
        cuts = lopsided if k in skewed else even
        values[:, k] = 1 + np.searchsorted(cuts, latent[:, k])
    complete = pd.DataFrame(values.copy(), columns=items)
    values[rng.random(values.shape) < missing_share] = np.nan
    frame = pd.DataFrame(values, columns=items)
    return frame, complete, [items[k] for k in skewed], factor


def _write_csv(path: Path, frame: pd.DataFrame, *, sep: str = ",", decimal: str = ".",
               compression: str | None = None, blank_lines: int = 3) -> None:
    text = frame.to_csv(index=False, sep=sep, decimal=decimal, na_rep="NA",
                        float_format="%g", lineterminator="\n")
    # Spreadsheet programs and hand edits leave empty lines after the last record.
    text += "\n" * blank_lines
    data = text.encode("utf-8")
    if compression == "gzip":
        import gzip

        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)


def _write_xlsx(path: Path, frame: pd.DataFrame, *, blank_rows: int) -> None:
    try:
        import openpyxl
    except ImportError:
        raise ImportError("writing .xlsx needs openpyxl: pip install 'dpggm[formats]'") from None
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "export"
    sheet.append(list(frame.columns))
    for row in frame.itertuples(index=False):
        # An export keeps NA as text (R's write.xlsx(keepNA = TRUE)); whole numbers as
        # numbers.
        sheet.append([("NA" if isinstance(v, float) and math.isnan(v) else
                       (int(v) if isinstance(v, float) and v.is_integer() else v))
                      for v in row])
    # Rows that look empty but hold empty text (cleared cells keep it).
    for _ in range(blank_rows):
        sheet.append([""] * frame.shape[1])
    book.save(path)


def _write_sav(path: Path, frame: pd.DataFrame, *, blank_rows: int) -> None:
    try:
        import pyreadstat
    except ImportError:
        raise ImportError("writing .sav needs pyreadstat: pip install 'dpggm[formats]'") from None
    out = frame.copy()
    # SPSS keeps a category as labelled codes: 1 = female, 2 = male.
    out["sex"] = out["sex"].map({"female": 1.0, "male": 2.0})
    out["date"] = pd.to_datetime(out["date"])
    # Cases typed below the last one and cleared again: every value system-missing.
    empty = pd.DataFrame({c: [np.nan] * blank_rows for c in out.columns})
    empty["date"] = pd.NaT
    out = pd.concat([out, empty], ignore_index=True)
    out["id"] = out["id"].astype(float)
    labels = {"sex": {1.0: "female", 2.0: "male"}}
    item_labels = {k: {1.0: "strongly disagree", 6.0: "strongly agree"}
                   for k in out.columns if k.startswith("item_")}
    pyreadstat.write_sav(out, str(path), variable_value_labels={**labels, **item_labels})


def make_questionnaire_export(
    directory: str | os.PathLike, *, n_respondents: int = 2000, n_items: int = 20,
    n_skewed: int = 8, n_factors: int = 4, levels: int = 6, loading: float = 0.75,
    top_share: float = 0.8, missing_share: float = 0.08, blank_lines: int = 3,
    formats: tuple[str, ...] = EXPORT_FORMATS, random_state: Any = None,
) -> QuestionnaireExport:
    """A clinical questionnaire export, written as the files people send.

    Each respondent has an ``id`` (1001, 1002, ... down the file), a visit ``date``
    (``2023-01-15``), a categorical ``sex`` (``female``/``male``) and ``n_items`` Likert
    items ``item_01 ..`` answered ``1 .. levels``, generated by cutting ``n_factors``
    latent factors (loading ``loading``) at normal quantiles. ``n_skewed`` items put
    ``top_share`` of their answers (in expectation) on one level, as items about rare
    complaints or high satisfaction do; the others spread evenly. A share
    ``missing_share`` of the item cells is empty.

    Files (in ``directory``): ``questionnaire.csv`` (comma-separated, empty cells written
    ``NA``, ``blank_lines`` empty lines at the end), ``questionnaire.csv.gz`` (the same,
    gzip-compressed), ``questionnaire-eu.csv`` (semicolons, decimal commas),
    ``questionnaire.xlsx`` (``NA`` as text, rows of empty text at the end; needs
    openpyxl) and ``questionnaire.sav`` (SPSS, ``sex`` as labelled codes 1/2, empty cells
    system-missing, all-missing cases at the end; needs pyreadstat).

    Returns
    -------
    QuestionnaireExport

    Notes
    -----
    Privacy: synthetic public data; consumes no budget.
    """
    for name, value, low in (("n_respondents", n_respondents, 2), ("n_items", n_items, 2),
                             ("n_factors", n_factors, 1), ("levels", levels, 3),
                             ("blank_lines", blank_lines, 0), ("n_skewed", n_skewed, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    if n_skewed > n_items:
        raise ValueError(f"n_skewed must be at most n_items ({n_items}); got {n_skewed}")
    for name, value in (("loading", loading), ("top_share", top_share),
                        ("missing_share", missing_share)):
        if not (isinstance(value, (int, float)) and 0 <= value < 1):
            raise ValueError(f"{name} must be in [0, 1); got {value!r}")
    unknown = [f for f in formats if f not in EXPORT_FORMATS]
    if unknown:
        raise ValueError(f"formats must be among {', '.join(EXPORT_FORMATS)}; got {unknown}")
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"directory must be an existing directory; got {str(directory)!r}")
    rng = check_random_state(random_state)
    n = int(n_respondents)
    items, complete, skewed, factor = _answers(rng, n, n_items=n_items, n_skewed=n_skewed,
                                               n_factors=n_factors, levels=levels,
                                               loading=loading, top_share=top_share,
                                               missing_share=missing_share)
    days = rng.integers(0, 365, n)
    frame = pd.DataFrame({
        "id": np.arange(1001, 1001 + n),
        "date": (pd.Timestamp("2023-01-01") + pd.to_timedelta(np.sort(days), unit="D")
                 ).strftime("%Y-%m-%d"),
        "sex": np.where(rng.random(n) < 0.55, "female", "male"),
    })
    frame = pd.concat([frame, items], axis=1)
    names = list(items.columns)
    top = {k: float(items[k].value_counts(normalize=True).iloc[0]) for k in names}
    files: dict[str, Path] = {}
    writers = {
        "csv": lambda p: _write_csv(p, frame, blank_lines=blank_lines),
        "csv.gz": lambda p: _write_csv(p, frame, compression="gzip", blank_lines=blank_lines),
        "eu.csv": lambda p: _write_csv(p, frame, sep=";", decimal=",", blank_lines=blank_lines),
        "xlsx": lambda p: _write_xlsx(p, frame, blank_rows=blank_lines),
        "sav": lambda p: _write_sav(p, frame, blank_rows=blank_lines),
    }
    file_names = {"csv": "questionnaire.csv", "csv.gz": "questionnaire.csv.gz",
                  "eu.csv": "questionnaire-eu.csv", "xlsx": "questionnaire.xlsx",
                  "sav": "questionnaire.sav"}
    for kind in formats:
        path = directory / file_names[kind]
        writers[kind](path)
        files[kind] = path
    return QuestionnaireExport(answers=frame, items=names, skewed=skewed, top_share=top,
                               files=files, options={k: _OPTIONS.get(k, ()) for k in files},
                               factor=factor, complete=complete)
