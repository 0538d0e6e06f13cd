"""Reading an evaluation dataset: JSONL, CSV or Parquet rows in osmosis-ai 0.3.8's dataset contract.

*Prompt mode* (no ``metadata`` column): ``user_prompt`` and ``ground_truth`` (or its alias ``label``) are
required, ``system_prompt`` is optional. *Metadata mode* (the file has a ``metadata`` column): the prompt and
ground-truth columns are optional, but a row needs a user prompt or a non-empty metadata object. An empty value
counts as absent; a number is taken as its text (``42`` → ``"42"``).

Every physical row yields either a :class:`DatasetRow` or a :class:`RowError` — a row that cannot be used
(unparseable line, missing column, wrong type) is reported with its index and the reason, and never stops the
run. Only a dataset that cannot be opened at all (missing file, unknown extension, undecodable bytes) raises
:class:`DatasetError`.

Column names are matched case-insensitively (as upstream ``osmosis test``). Columns other than the four above
are kept in :attr:`DatasetRow.extra`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

__all__ = ["DatasetError", "DatasetRow", "RowError", "read_dataset", "REQUIRED_COLUMNS"]

#: Columns of a row in prompt mode (``system_prompt`` optional since 0.3.8; ``label`` is ``ground_truth``'s alias).
REQUIRED_COLUMNS = ("system_prompt", "user_prompt", "ground_truth")
_KNOWN = (*REQUIRED_COLUMNS, "label", "metadata")


class DatasetError(Exception):
    """The dataset as a whole cannot be read (the run cannot start)."""


@dataclass(frozen=True)
class DatasetRow:
    """One usable row. ``index`` is the 0-based row number in the file (data rows, header excluded)."""

    index: int
    system_prompt: str | None
    user_prompt: str | None
    ground_truth: str | None
    metadata: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def messages(self) -> list[dict[str, Any]]:
        """The conversation every protocol starts from: ``[system, user]``, each only when the row has it."""
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        if self.user_prompt is not None:
            messages.append({"role": "user", "content": self.user_prompt})
        return messages


@dataclass(frozen=True)
class RowError:
    """A row that could not be turned into a :class:`DatasetRow`; ``message`` says why."""

    index: int
    message: str


DatasetItem = Union[DatasetRow, RowError]


def read_dataset(path: str | Path, *, offset: int = 0, limit: int | None = None) -> list[DatasetItem]:
    """Read ``path`` (``.jsonl``/``.ndjson`` or ``.csv``) and return rows ``offset … offset+limit-1``.

    Blank JSONL lines are skipped (they are not rows). Raises :class:`DatasetError` when the file is missing,
    has another extension, or is not UTF-8; ``ValueError`` for a negative ``offset``/``limit``.
    """
    if offset < 0:
        raise ValueError("offset must be >= 0")
    if limit is not None and limit < 0:
        raise ValueError("limit must be >= 0")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".ndjson", ".csv", ".parquet"):
        raise DatasetError(f"{path}: unsupported dataset format {suffix or '(no extension)'!r}; "
                           "use .jsonl, .csv or .parquet")
    if suffix == ".parquet":
        return _select(_parquet_rows(path), offset, limit)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a directory, not a dataset file") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc})") from None
    except OSError as exc:
        raise DatasetError(f"{path}: {exc.strerror or exc}") from None
    return _select(_jsonl_rows(text) if suffix != ".csv" else _csv_rows(text), offset, limit)


def _select(raw_rows: Iterator[tuple[int, dict[str, Any] | RowError]], offset: int,
            limit: int | None) -> list[DatasetItem]:
    metadata_mode: bool | None = None
    items: list[DatasetItem] = []
    for index, raw in raw_rows:
        if metadata_mode is None and isinstance(raw, dict):
            # The mode is the file's (its first row's columns), as 0.3.8's validator decides it.
            metadata_mode = any(str(key).lower() == "metadata" for key in raw)
        if index < offset:
            continue
        if limit is not None and len(items) >= limit:
            break
        items.append(raw if isinstance(raw, RowError) else _to_row(index, raw, bool(metadata_mode)))
    return items


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | RowError]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(f"{path}: reading Parquet datasets needs pyarrow: "
                           "pip install 'osmosis-compat[parquet]'") from None
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own error types for a damaged file
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None

    def rows() -> Iterator[tuple[int, dict[str, Any] | RowError]]:
        index = 0
        with parquet:
            for batch in parquet.iter_batches():
                for row in batch.to_pylist():
                    yield index, row
                    index += 1

    return rows()


# -- parsing ---------------------------------------------------------------------------------------


def _jsonl_rows(text: str) -> Iterator[tuple[int, dict[str, Any] | RowError]]:
    index = 0
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield index, RowError(index, f"line {line_number}: not valid JSON ({exc.msg} at column {exc.colno})")
        else:
            if isinstance(value, dict):
                yield index, value
            else:
                yield index, RowError(index, f"line {line_number}: a row must be a JSON object, got {_json_type(value)}")
        index += 1


def _csv_rows(text: str) -> Iterator[tuple[int, dict[str, Any] | RowError]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise DatasetError(f"CSV header cannot be parsed: {exc}") from None
    header = [name.strip() for name in header]
    index = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            # The reader cannot resynchronise after a broken quote: report it and stop reading, the rows
            # before it still run.
            yield index, RowError(index, f"line {reader.line_num}: CSV cannot be parsed ({exc}); rows after it are not read")
            return
        if not cells or all(not cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            yield index, RowError(
                index, f"line {reader.line_num}: {len(cells)} cells for {len(header)} columns ({', '.join(header)})"
            )
        else:
            yield index, dict(zip(header, cells))
        index += 1


def _to_row(index: int, raw: dict[str, Any], metadata_mode: bool = False) -> DatasetItem:
    by_lower: dict[str, str] = {}
    for key in raw:
        by_lower.setdefault(str(key).lower(), key)
    metadata_mode = metadata_mode or "metadata" in by_lower
    problems: list[str] = []
    values: dict[str, Any] = {}
    empty: dict[str, str] = {}
    for column in REQUIRED_COLUMNS:
        key = by_lower.get(column)
        if key is None and column == "ground_truth":
            key = by_lower.get("label")  # 0.3.8: label is an accepted alias
        value = None if key is None else raw[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = json.dumps(value)
        if value is not None and not isinstance(value, str):
            problems.append(f"{key!r} must be a string, got {_json_type(value)}")
            continue
        values[column] = value if value and value.strip() else None
        if values[column] is None and key is not None:
            empty[column] = "null" if value is None else "empty"
    metadata = None
    if "metadata" in by_lower:
        metadata, problem = _metadata(raw[by_lower["metadata"]])
        if problem:
            problems.append(problem)
    if not problems and not metadata_mode:
        if values["user_prompt"] is None:
            problems.append(f"'user_prompt' is {empty['user_prompt']}" if "user_prompt" in empty
                            else "missing column 'user_prompt'")
        if values["ground_truth"] is None:
            problems.append(f"'ground_truth' is {empty['ground_truth']}" if "ground_truth" in empty
                            else "missing column 'ground_truth' (or 'label')")
    if not problems and values["system_prompt"] is None and values["user_prompt"] is None and metadata is None:
        problems.append("no prompt and no metadata: a row needs a user_prompt or a non-empty 'metadata' object")
    if problems:
        return RowError(index, "; ".join(problems))
    extra = {key: value for key, value in raw.items() if str(key).lower() not in _KNOWN}
    return DatasetRow(index=index, metadata=metadata, extra=extra, **values)


def _metadata(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """A ``metadata`` cell: a JSON object, a string holding one (CSV), or empty/null for none."""
    if value is None:
        return None, None
    if isinstance(value, str):
        if not value.strip():
            return None, None
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return None, f"'metadata' is not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(value, dict):
        return None, f"'metadata' must be a JSON object, got {_json_type(value)}"
    return (value or None), None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
