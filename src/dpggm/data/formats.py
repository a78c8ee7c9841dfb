"""File formats people export, each read through a well-kept library.

* CSV, plain or compressed (``.gz``, ``.bz2``, ``.xz``, ``.zip``, ``.zst``; recognised by
  the suffix and, for a file whose suffix says CSV, by its first bytes): decompressed as a
  stream (standard library; ``zstandard`` for ``.zst``), so memory stays bounded;
* spreadsheets (``.xlsx``/``.xlsm`` by openpyxl, ``.xls`` by xlrd, ``.ods`` by odfpy,
  through :func:`pandas.read_excel`), read whole (a sheet holds at most about a million
  rows);
* SPSS (``.sav``, ``.zsav``, ``.por``) and SAS transport (``.xpt``) by pyreadstat, Stata
  (``.dta``, :func:`pandas.read_stata`) and SAS (``.sas7bdat``, :func:`pandas.read_sas`),
  read in chunks;
* Parquet (pyarrow), one file or a folder of files read as one table.

The format-specific libraries are in the optional extra ``dpggm[formats]``; a missing one
gives a one-line error that names it. This module only finds and opens files and turns
them into raw columns; :mod:`dpggm.data.tables` resolves the columns, converts and
checks the values.

Value labels (SPSS, Stata) are not applied: the numeric codes are the data (a Likert item
stored as 1..6 with labels "strongly disagree".."strongly agree" is read as 1..6). SPSS
user-missing values and Stata's extended missing values (``.a``..``.z``) are missing.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "BINARY_FORMATS",
    "COMPRESSIONS",
    "FORMATS",
    "FrameChunk",
    "detect_format",
    "format_name",
    "frame_table",
    "open_binary",
    "parquet_parts",
]

#: Compressions of a CSV file, by suffix.
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip",
                ".zst": "zstd", ".zstd": "zstd"}
_SUFFIXES = {
    ".csv": "csv", ".tsv": "csv", ".txt": "csv", ".dat": "csv",
    ".parquet": "parquet", ".pq": "parquet", ".parq": "parquet",
    ".xlsx": "xlsx", ".xlsm": "xlsx", ".xls": "xls", ".ods": "ods",
    ".sav": "sav", ".zsav": "sav", ".por": "por",
    ".dta": "dta", ".sas7bdat": "sas7bdat", ".xpt": "xpt",
}
#: Formats read through pandas / pyreadstat into columns (not streamed as text).
BINARY_FORMATS = ("xlsx", "xls", "ods", "sav", "por", "dta", "sas7bdat", "xpt")
FORMATS = ("csv", "parquet", *BINARY_FORMATS)
_NAMES = {"csv": "CSV", "parquet": "Parquet", "xlsx": "Excel", "xls": "Excel (.xls)",
          "ods": "OpenDocument spreadsheet", "sav": "SPSS", "por": "SPSS portable",
          "dta": "Stata", "sas7bdat": "SAS", "xpt": "SAS transport"}
#: What each format needs beyond the core dependencies: (module, PyPI package).
_LIBRARIES = {"xlsx": ("openpyxl", "openpyxl"), "xls": ("xlrd", "xlrd"),
              "ods": ("odf", "odfpy"), "sav": ("pyreadstat", "pyreadstat"),
              "por": ("pyreadstat", "pyreadstat"), "xpt": ("pyreadstat", "pyreadstat"),
              "zstd": ("zstandard", "zstandard")}
_MAGIC = (
    (b"\x1f\x8b", ("csv", "gzip")),
    (b"BZh", ("csv", "bz2")),
    (b"\xfd7zXZ\x00", ("csv", "xz")),
    (b"\x28\xb5\x2f\xfd", ("csv", "zstd")),
    (b"PAR1", ("parquet", None)),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", ("xls", None)),
    (b"$FL2", ("sav", None)),
    (b"$FL3", ("sav", None)),
    (b"<stata_dta>", ("dta", None)),
)
#: Rows per chunk of the formats read in chunks.
CHUNK_ROWS = 100_000


def format_name(kind: str) -> str:
    return _NAMES.get(kind, kind)


def _suffixes(path: Path) -> tuple[str, str | None]:
    """``(format suffix, compression)`` of a file name such as ``data.csv.gz``."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = None
    if suffixes and suffixes[-1] in COMPRESSIONS:
        compression = COMPRESSIONS[suffixes[-1]]
        suffixes = suffixes[:-1]
    return (suffixes[-1] if suffixes else ""), compression


def _sniff(path: Path) -> tuple[str, str | None] | None:
    """The format a file's first bytes declare, if they declare one."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    for magic, found in _MAGIC:
        if head.startswith(magic):
            return found
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                members = set(archive.namelist())
        except (zipfile.BadZipFile, OSError):
            return None
        if "xl/workbook.xml" in members:
            return "xlsx", None
        if "content.xml" in members and "mimetype" in members:
            return "ods", None
        return "csv", "zip"
    if len(head) >= 4 and head[0] in (0x71, 0x72, 0x73) and head[1] in (1, 2) and head[2] == 1:
        return "dta", None  # Stata 113-115: release byte, byte order, file type 1
    return None


def detect_format(path: str | os.PathLike, declared: str | None) -> tuple[str, str | None]:
    """``(format, compression)`` of a file: ``declared`` if given, else from the suffix;
    a file whose suffix says CSV (or names no format) is recognised by its first bytes
    when they are those of a compressed or binary format (an Excel workbook saved as
    ``data.csv`` is read as a workbook)."""
    path = Path(path)
    suffix, compression = _suffixes(path)
    if path.is_dir():
        return "parquet", None
    if declared is not None:
        if declared == "csv" and compression is None:
            sniffed = _sniff(path)
            if sniffed is not None and sniffed[0] == "csv":
                compression = sniffed[1]
        return declared, compression
    kind = _SUFFIXES.get(suffix)
    if kind is not None and kind != "csv":
        return kind, None
    if compression is None:
        sniffed = _sniff(path)
        if sniffed is not None:
            return sniffed
    return "csv", compression


def require(kind: str) -> Any:
    """Import the library a format needs, or say in one line how to install it."""
    module, package = _LIBRARIES[kind]
    try:
        return __import__(module)
    except ImportError:
        what = "zstd-compressed CSV" if kind == "zstd" else f"{format_name(kind)} files"
        raise ImportError(
            f"reading {what} needs the package {package}: pip install 'dpggm[formats]' "
            f"(or pip install {package})") from None


# ------------------------------------------------------------------- compressed streams


class _Stream(io.RawIOBase):
    """A decompressed stream with the position of the compressed file (for progress)."""

    def __init__(self, inner: BinaryIO, raw: BinaryIO, closers: list[Any]) -> None:
        self._inner = inner
        self._raw = raw
        self._closers = closers

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._inner.readinto(buffer)

    def raw_position(self) -> int:
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        for closer in reversed(self._closers):
            closer.close()
        super().close()


def open_binary(path: str | os.PathLike, compression: str | None) -> Any:
    """The file's bytes, decompressed as a stream (``readinto``; ``raw_position()`` is
    the position in the file on disk)."""
    raw = open(path, "rb", buffering=0)  # closed by the stream
    if compression is None:
        return _Stream(raw, raw, [raw])
    try:
        if compression == "gzip":
            import gzip

            inner: Any = gzip.GzipFile(fileobj=raw, mode="rb")
        elif compression == "bz2":
            import bz2

            inner = bz2.BZ2File(raw, mode="rb")
        elif compression == "xz":
            import lzma

            inner = lzma.LZMAFile(raw, mode="rb")
        elif compression == "zip":
            archive = zipfile.ZipFile(raw)
            members = [m for m in archive.infolist()
                       if not m.is_dir() and not Path(m.filename).name.startswith((".", "__"))]
            if len(members) != 1:
                names = ", ".join(m.filename for m in members[:5])
                raise ValueError(
                    f"the zip archive {str(path)!r} holds {len(members)} files ({names}); "
                    "it must hold exactly one CSV file")
            member = archive.open(members[0])
            return _Stream(member, raw, [raw, archive, member])
        elif compression == "zstd":
            zstandard = require("zstd")
            inner = zstandard.ZstdDecompressor().stream_reader(raw)
        else:  # pragma: no cover - guarded by the callers
            raise ValueError(f"unknown compression {compression!r}")
    except BaseException:
        raw.close()
        raise
    return _Stream(inner, raw, [raw, inner])


# ---------------------------------------------------------------------- Parquet folders


def parquet_parts(path: str | os.PathLike) -> list[Path]:
    """The Parquet files of a folder (searched recursively, in name order), without the
    hidden and bookkeeping files (``.crc``, ``_SUCCESS``, ``_metadata``)."""
    root = Path(path)
    parts = sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() in (".parquet", ".pq", ".parq")
        and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts))
    if not parts:
        raise ValueError(f"{str(root)!r} is a directory holding no Parquet file (*.parquet, "
                         "*.pq, *.parq); give a data file or a folder of Parquet files")
    return parts


# ---------------------------------------------------------------------- column formats


@dataclass
class FrameChunk:
    """Raw columns of some rows: a DataFrame whose columns are the file's columns by
    position, and the file's number (1-based, in ``unit``) of its first row."""

    frame: Any
    first: int


@dataclass
class FrameTable:
    """A table read through pandas: its column names (without a header row ``col1``,
    ``col2``, ...), the chunks of its rows, how its rows are numbered in messages, and a
    spreadsheet's header cells (to check that they are names)."""

    names: list[str]
    chunks: Iterator[FrameChunk]
    unit: str
    header_cells: list[Any] | None = None


def _cell_name(value: Any) -> str:
    """A header cell as a column name (a whole number stored as 3.0 is named ``3``)."""
    if value is None:
        return ""
    if isinstance(value, float):
        if value != value:  # NaN: an empty cell
            return ""
        if value.is_integer():
            return str(int(value))
    return str(value).strip()


def _spreadsheet(path: Path, kind: str, *, sheet: str | int | None, header: bool) -> FrameTable:
    import pandas as pd

    require(kind)
    engine = {"xlsx": "openpyxl", "xls": "xlrd", "ods": "odf"}[kind]
    try:
        frame = pd.read_excel(path, sheet_name=0 if sheet is None else sheet, header=None,
                              dtype=object, na_filter=False, engine=engine)
    except ValueError as exc:
        text = " ".join(str(exc).split())
        if "Worksheet" in text or "sheet" in text.lower():
            try:
                sheets = ", ".join(repr(n) for n in pd.ExcelFile(path, engine=engine).sheet_names)
            except Exception:  # the listing is a courtesy
                sheets = "unknown"
            asked = f"no sheet named {sheet!r}" if isinstance(sheet, str) else (
                "fewer sheets than the number asked")
            raise ValueError(f"{format_name(kind)} file {str(path)!r} has {asked}; its sheets "
                             f"are {sheets}") from None
        raise ValueError(f"{format_name(kind)} file {str(path)!r} could not be read: "
                         f"{text}") from None
    except Exception as exc:  # zip, XML and OLE errors of the readers
        raise ValueError(f"{str(path)!r} is not a readable {format_name(kind)} file "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from None
    frame.columns = range(frame.shape[1])
    # Rows are numbered as the spreadsheet shows them: frame row i is sheet row i + 1.
    blank = frame.map(lambda v: v is None or (isinstance(v, str) and not v.strip())
                      or (isinstance(v, float) and v != v)).all(axis=1).to_numpy()
    start = int(blank.argmin()) if (~blank).any() else len(frame)
    if not header:
        names = [f"col{j + 1}" for j in range(frame.shape[1])]
        return FrameTable(names, iter([FrameChunk(frame.iloc[start:], start + 1)]), "row")
    if start >= len(frame):
        return FrameTable([], iter(()), "row", [])
    cells = list(frame.iloc[start])
    body = frame.iloc[start + 1:]
    return FrameTable([_cell_name(v) for v in cells], iter([FrameChunk(body, start + 2)]),
                      "row", cells)


def _stata_reader(path: Path) -> Any:
    import pandas as pd

    return pd.read_stata(path, iterator=True, convert_categoricals=False,
                         convert_missing=False, preserve_dtypes=False)


def _stata(path: Path) -> FrameTable:
    try:
        with _stata_reader(path) as reader:
            names = [str(c) for c in reader.variable_labels()]
    except Exception as exc:
        raise ValueError(f"{str(path)!r} is not a readable Stata file "
                         f"({' '.join(str(exc).split())[:120]})") from None

    def chunks() -> Iterator[FrameChunk]:
        done = 0
        with _stata_reader(path) as reader:
            while True:
                try:
                    frame = reader.read(nrows=CHUNK_ROWS)
                except StopIteration:
                    return
                if frame is None or len(frame) == 0:
                    return
                frame.columns = range(frame.shape[1])
                yield FrameChunk(frame, done + 1)
                done += len(frame)

    return FrameTable(names, chunks(), "record")


def _sas(path: Path, kind: str) -> FrameTable:
    import pandas as pd

    try:
        reader = pd.read_sas(path, format=kind, chunksize=CHUNK_ROWS, encoding="infer")
    except Exception as exc:
        raise ValueError(f"{str(path)!r} is not a readable {format_name(kind)} file "
                         f"({' '.join(str(exc).split())[:120]})") from None
    names = [c.decode("utf-8", "replace") if isinstance(c, bytes) else str(c)
             for c in getattr(reader, "column_names", [])]

    def chunks() -> Iterator[FrameChunk]:
        done = 0
        with reader:
            for frame in reader:
                frame.columns = range(frame.shape[1])
                yield FrameChunk(frame, done + 1)
                done += len(frame)

    return FrameTable(names, chunks(), "record")


def _spss(path: Path, kind: str) -> FrameTable:
    """SPSS (and SAS transport) files through pyreadstat, in chunks."""
    pyreadstat = require(kind)
    read = {"por": pyreadstat.read_por, "xpt": pyreadstat.read_xport}.get(
        kind, pyreadstat.read_sav)
    try:
        _, meta = read(str(path), metadataonly=True)
    except Exception as exc:
        raise ValueError(f"{str(path)!r} is not a readable {format_name(kind)} file "
                         f"({' '.join(str(exc).split())[:120]})") from None
    names = [str(c) for c in meta.column_names]

    def chunks() -> Iterator[FrameChunk]:
        done = 0
        # Codes, not labels (apply_value_formats=False); user-missing values are missing.
        options = {} if kind == "xpt" else {"apply_value_formats": False,
                                            "user_missing": False}
        for frame, _ in pyreadstat.read_file_in_chunks(read, str(path), chunksize=CHUNK_ROWS,
                                                      **options):
            frame.columns = range(frame.shape[1])
            yield FrameChunk(frame, done + 1)
            done += len(frame)

    return FrameTable(names, chunks(), "record")


def frame_table(path: str | os.PathLike, kind: str, *, sheet: str | int | None = None,
                header: bool = True) -> FrameTable:
    """Open a spreadsheet or a statistics package's file as raw columns."""
    path = Path(path)
    if kind in ("xlsx", "xls", "ods"):
        return _spreadsheet(path, kind, sheet=sheet, header=header)
    if sheet is not None:
        raise ValueError(f"a sheet is chosen in a spreadsheet only; {str(path)!r} is a "
                         f"{format_name(kind)} file")
    if kind == "dta":
        return _stata(path)
    if kind == "sas7bdat":
        return _sas(path, kind)
    if kind in ("sav", "por", "xpt"):
        return _spss(path, kind)
    raise ValueError(f"unknown format {kind!r}")  # pragma: no cover - guarded by callers
