"""Real data sets of the papers that ship in a package registry, for the reproductions.

A machine that reaches only package registries cannot download the papers' data from
their repositories; some of them are shipped inside R data packages that Debian packages
(``apt-get install r-cran-kernlab r-cran-mlbench``). :func:`load_r_dataset` reads one of
them through ``Rscript`` into a DataFrame.

Privacy: evaluation code on public data sets.
"""

from __future__ import annotations

import io
import shutil
import subprocess

import pandas as pd

__all__ = ["R_DATASETS", "RDataUnavailable", "load_r_dataset"]

#: The data sets used by the reproductions: name -> (R package, Debian package, what it is).
R_DATASETS = {
    "spam": ("kernlab", "r-cran-kernlab",
             "UCI Spambase: 4601 e-mails, 57 features and the class (the paper's 'spambase')"),
    "Ionosphere": ("mlbench", "r-cran-mlbench",
                   "UCI Ionosphere: 351 radar returns, 34 features and the class"),
}


class RDataUnavailable(RuntimeError):
    """The R data package (or R itself) is not installed."""


def load_r_dataset(name: str) -> pd.DataFrame:
    """Data set ``name`` of :data:`R_DATASETS`, read from its R package.

    Raises
    ------
    RDataUnavailable
        When ``Rscript`` or the R package is missing; the message names the Debian
        package to install.
    """
    if name not in R_DATASETS:
        raise ValueError(f"name must be one of {sorted(R_DATASETS)}; got {name!r}")
    package, debian, _ = R_DATASETS[name]
    if shutil.which("Rscript") is None:
        raise RDataUnavailable(f"the {name} data set needs R: apt-get install {debian}")
    program = (f"suppressMessages(data({name}, package = '{package}')); "
               f"write.csv({name}, stdout(), row.names = FALSE)")
    try:
        done = subprocess.run(["Rscript", "--vanilla", "-e", program], capture_output=True,
                              text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired as error:  # pragma: no cover - a broken R
        raise RDataUnavailable(f"Rscript did not answer reading {name}") from error
    if done.returncode != 0:
        raise RDataUnavailable(
            f"the {name} data set needs the R package {package}: apt-get install {debian} "
            f"(Rscript said: {done.stderr.strip().splitlines()[-1:] or ['nothing']})")
    return pd.read_csv(io.StringIO(done.stdout))
