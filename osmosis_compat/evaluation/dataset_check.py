"""``osmosis dataset validate``: osmosis-ai 0.3.8's local dataset check, rule for rule and message for message.

Ported from osmosis-ai 0.3.8 (``osmosis_ai/platform/cli/dataset.py``, MIT licence) so a file gets the same
verdict here as with the real command (``tests/evaluation/test_dataset_check_oracle.py`` runs both):

- the file: it exists, has a ``.csv``/``.jsonl``/``.parquet`` extension, is not empty, is at most 5 GB;
- columns: without a ``metadata`` column, ``user_prompt`` and ``ground_truth`` (``label`` is its alias); with
  one (*metadata mode*), every row's metadata must be a non-empty JSON object (or a string holding one) without
  empty nested objects or integers beyond 64 bits, and each key's JSON type must agree across rows;
- JSONL: every line an object with the first line's fields; CSV: every row the header's number of cells;
- at least 4 rows; at most the first 5 errors are listed.

This is stricter than what ``osmosis-compat eval`` runs (it takes any row it can use, e.g. a 1-row file): the
check says whether the *platform* would accept the file.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DatasetCheck", "DatasetCheckError", "check_dataset", "format_size"]

VALID_EXTENSIONS = frozenset({"csv", "jsonl", "parquet"})
MAX_FILE_SIZE = 5 * 1024 * 1024 * 1024
REQUIRED_COLUMNS = {"user_prompt", "ground_truth"}
MIN_ROW_COUNT = 4
METADATA_COLUMN = "metadata"
PARQUET_VALIDATION_SKIPPED_WARNING = (
    "pyarrow not installed; parquet content validation skipped. Install with: pip install 'osmosis-compat[parquet]'"
)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class DatasetCheckError(Exception):
    """The file cannot be checked at all (missing, wrong extension, empty, too large)."""


@dataclass
class DatasetCheck:
    """The verdict: ``errors`` empty means valid; ``warnings`` say what could not be checked."""

    file: Path
    extension: str
    file_size: int
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors


def format_size(size_bytes: float) -> str:
    """``128 B``, ``1.5 KB`` … as 0.3.8 prints sizes."""
    for unit in ("B", "KB", "MB", "GB"):
        if size_bytes < 1024:
            return f"{size_bytes:.1f} {unit}" if unit != "B" else f"{int(size_bytes)} {unit}"
        size_bytes /= 1024
    return f"{size_bytes:.1f} TB"


def check_dataset(file: str | Path) -> DatasetCheck:
    """Check ``file`` as ``osmosis dataset validate`` does; :class:`DatasetCheckError` if it cannot be read."""
    path = Path(file).resolve()
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DatasetCheckError(f"File not found: {path}") from None
    extension = path.suffix.lstrip(".").lower()
    if extension not in VALID_EXTENSIONS:
        raise DatasetCheckError(f"Unsupported file type '.{extension}'. Supported: {', '.join(sorted(VALID_EXTENSIONS))}")
    if size == 0:
        raise DatasetCheckError("File is empty.")
    if size > MAX_FILE_SIZE:
        raise DatasetCheckError(f"File too large ({format_size(size)}). Maximum: {format_size(MAX_FILE_SIZE)}")
    check = DatasetCheck(file=path, extension=extension, file_size=size)
    if extension == "parquet":
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            check.warnings.append(PARQUET_VALIDATION_SKIPPED_WARNING)
            return check
        check.errors = _validate_parquet(path)
    elif extension == "jsonl":
        check.errors = _validate_jsonl(path)
    else:
        check.errors = _validate_csv(path)
    return check


def _check_required_columns(columns: Iterable[str]) -> list[str]:
    normalized = set(columns)
    if "label" in normalized:
        normalized.add("ground_truth")
    if METADATA_COLUMN in normalized:
        return []
    missing = REQUIRED_COLUMNS - normalized
    if missing:
        return [f"Missing required columns: {', '.join(sorted(missing))}. Datasets without a metadata column must "
                "include user_prompt and ground_truth (label is accepted as an alias)."]
    return []


def _metadata_is_absent(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _contains_nested_empty_object(value: Any, *, is_root: bool = True) -> bool:
    if isinstance(value, dict):
        if not value:
            return not is_root
        return any(_contains_nested_empty_object(child, is_root=False) for child in value.values())
    if isinstance(value, list):
        return any(_contains_nested_empty_object(child, is_root=False) for child in value)
    return False


def _contains_oversized_int(value: Any) -> bool:
    # The platform stores metadata as a Parquet struct: Arrow cannot hold an integer outside int64.
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not _INT64_MIN <= value <= _INT64_MAX
    if isinstance(value, dict):
        return any(_contains_oversized_int(child) for child in value.values())
    if isinstance(value, list):
        return any(_contains_oversized_int(child) for child in value)
    return False


def _json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):  # one JSON number type: the platform promotes ints to double
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


class _MetadataTypes:
    """Per-key JSON value types must agree across rows (the platform normaliser's rule)."""

    def __init__(self) -> None:
        self._types: dict[str, str] = {}

    def observe(self, value: dict[str, Any], *, location: str) -> list[str]:
        return self._collect(value, "$", location)

    def _collect(self, value: Any, path: str, location: str) -> list[str]:
        if value is None:
            return []
        current = _json_type_name(value)
        previous = self._types.setdefault(path, current)
        if previous != current:
            return [f"{location}: invalid metadata - value type at {path} is inconsistent across rows "
                    f"({previous} vs {current})"]
        errors: list[str] = []
        if isinstance(value, dict):
            for key, child in value.items():
                errors.extend(self._collect(child, f"{path}.{key}", location))
        elif isinstance(value, list):
            for child in value:
                errors.extend(self._collect(child, f"{path}[]", location))
        return errors


def _check_metadata_value(value: Any, *, location: str, tracker: _MetadataTypes | None = None) -> list[str]:
    if _metadata_is_absent(value):
        return [f"{location}: invalid metadata - metadata mode requires a non-empty JSON object in every row"]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            return [f"{location}: invalid metadata - not valid JSON ({e})"]
    if not isinstance(value, dict):
        return [f"{location}: invalid metadata - must be a JSON object, got {type(value).__name__}"]
    if not value:
        return [f"{location}: invalid metadata - metadata mode requires a non-empty JSON object in every row"]
    if _contains_nested_empty_object(value):
        return [f"{location}: invalid metadata - contains an empty nested object ({{}}), which cannot be stored. "
                "Remove that key or add at least one nested key."]
    if _contains_oversized_int(value):
        return [f"{location}: invalid metadata - contains an integer too large to store (must fit in 64 bits)"]
    if tracker is not None:
        return tracker.observe(value, location=location)
    return []


def _check_parquet_metadata_column(parquet: Any) -> list[str]:
    import pyarrow as pa

    schema = parquet.schema_arrow
    if METADATA_COLUMN not in schema.names:
        return []
    field_type = schema.field(METADATA_COLUMN).type
    if not (pa.types.is_struct(field_type) or pa.types.is_string(field_type) or pa.types.is_large_string(field_type)):
        return [f"Invalid metadata column: must be a struct or JSON-object string, got dtype {field_type}"]
    errors: list[str] = []
    tracker = _MetadataTypes()
    row_index = 0
    for batch in parquet.iter_batches(columns=[METADATA_COLUMN]):
        for value in batch.column(0).to_pylist():
            row_index += 1
            errors.extend(_check_metadata_value(value, location=f"metadata row {row_index}", tracker=tracker))
            if len(errors) >= 5:
                errors.append("... (showing first 5 errors)")
                return errors
    return errors


def _validate_parquet(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    errors: list[str] = []
    try:
        with pq.ParquetFile(path) as parquet:
            if len(parquet.schema) == 0:
                errors.append("Parquet file has no columns")
            elif parquet.metadata.num_rows == 0:
                errors.append("Parquet file has no rows")
            else:
                errors.extend(_check_required_columns(parquet.schema_arrow.names))
                if parquet.metadata.num_rows < MIN_ROW_COUNT:
                    errors.append(f"Dataset too small: {parquet.metadata.num_rows} rows. "
                                  f"A minimum of {MIN_ROW_COUNT} rows is required.")
                errors.extend(_check_parquet_metadata_column(parquet))
    except Exception as e:  # pyarrow's errors for a damaged file, reported as the verdict (as upstream)
        errors.append(f"Invalid parquet file: {e}")
    return errors


def _validate_jsonl(path: Path) -> list[str]:
    errors: list[str] = []
    expected: frozenset[str] | None = None
    metadata_mode = False
    tracker = _MetadataTypes()
    row_count = 0
    with open(path, encoding="utf-8") as handle:
        for i, line in enumerate(handle, 1):
            stripped = line.strip()
            if not stripped:
                continue
            row_count += 1
            try:
                obj = json.loads(stripped)
                if not isinstance(obj, dict):
                    errors.append(f"Line {i}: invalid JSONL row - top-level value must be an object")
                elif expected is None:
                    expected = frozenset(obj)
                    errors.extend(_check_required_columns(obj.keys()))
                    metadata_mode = METADATA_COLUMN in expected
                elif frozenset(obj) != expected:
                    missing = sorted(expected - frozenset(obj))
                    extra = sorted(frozenset(obj) - expected)
                    details = []
                    if missing:
                        details.append(f"missing: {', '.join(missing)}")
                    if extra:
                        details.append(f"extra: {', '.join(extra)}")
                    errors.append(f"Line {i}: top-level fields differ from the first row ({'; '.join(details)})")
                if isinstance(obj, dict) and metadata_mode:
                    errors.extend(_check_metadata_value(obj.get(METADATA_COLUMN), location=f"Line {i}",
                                                        tracker=tracker))
            except json.JSONDecodeError as e:
                errors.append(f"Line {i}: invalid JSON - {e}")
            if len(errors) >= 5:
                errors.append("... (showing first 5 errors)")
                return errors
    if row_count < MIN_ROW_COUNT:
        errors.append(f"Dataset too small: {row_count} rows. A minimum of {MIN_ROW_COUNT} rows is required.")
    return errors


def _validate_csv(path: Path) -> list[str]:
    errors: list[str] = []
    row_count = 0
    tracker = _MetadataTypes()
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                return ["File has no header row"]
            errors.extend(_check_required_columns(header))
            num_cols = len(header)
            metadata_idx = header.index(METADATA_COLUMN) if METADATA_COLUMN in header else None
            for i, row in enumerate(reader, 2):
                row_count += 1
                if len(row) != num_cols:
                    errors.append(f"Row {i}: expected {num_cols} columns, got {len(row)}")
                    if len(errors) >= 5:
                        errors.append("... (showing first 5 errors)")
                        return errors
                    continue
                if metadata_idx is not None:
                    errors.extend(_check_metadata_value(row[metadata_idx], location=f"Row {i}", tracker=tracker))
                    if len(errors) >= 5:
                        errors.append("... (showing first 5 errors)")
                        return errors
    except UnicodeDecodeError as e:
        return [*errors, f"File encoding error: {e}"]
    except csv.Error as e:
        return [*errors, f"CSV parse error: {e}"]
    if row_count < MIN_ROW_COUNT:
        errors.append(f"Dataset too small: {row_count} rows. A minimum of {MIN_ROW_COUNT} rows is required.")
    return errors
