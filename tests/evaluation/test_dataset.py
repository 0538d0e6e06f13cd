"""Dataset reading: every unusable row becomes a per-row error; only an unreadable file stops the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osmosis_compat.evaluation.dataset import DatasetError, DatasetRow, RowError, read_dataset

GOOD = {"system_prompt": "sys", "user_prompt": "What is 1 + 2?", "ground_truth": "3"}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_rows_bad_lines_and_types_are_per_row_errors(tmp_path: Path) -> None:
    lines = [
        json.dumps(GOOD),
        "",  # blank lines are not rows
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"system_prompt": "s", "user_prompt": "u"}),
        json.dumps({**GOOD, "user_prompt": ["a"], "system_prompt": ""}),
        json.dumps({**GOOD, "metadata": 5}),
        json.dumps({**GOOD, "ground_truth": 42, "metadata": {"k": 1}, "difficulty": "easy"}),
        json.dumps({"System_Prompt": "s", "USER_PROMPT": "u", "Ground_Truth": "g"}),
    ]
    items = read_dataset(write(tmp_path, "d.jsonl", "\n".join(lines)))
    assert [type(i).__name__ for i in items] == [
        "DatasetRow", "RowError", "RowError", "RowError", "RowError", "RowError", "DatasetRow", "DatasetRow",
    ]
    assert [i.index for i in items] == list(range(8))
    errors = {i.index: i.message for i in items if isinstance(i, RowError)}
    assert "line 3: not valid JSON" in errors[1]
    assert "must be a JSON object, got array" in errors[2]
    assert errors[3] == "missing column 'ground_truth' (or 'label')"
    # 0.3.8's contract: an empty system_prompt is simply absent (optional); a non-text prompt is an error.
    assert errors[4] == "'user_prompt' must be a string, got array"
    assert errors[5] == "'metadata' must be a JSON object, got number"
    row = items[6]
    assert isinstance(row, DatasetRow)
    assert row.ground_truth == "42" and row.metadata == {"k": 1} and row.extra == {"difficulty": "easy"}
    assert row.messages() == [{"role": "system", "content": "sys"}, {"role": "user", "content": "What is 1 + 2?"}]
    assert items[7].user_prompt == "u"  # column names are case-insensitive


def test_csv_metadata_as_json_string_and_broken_rows(tmp_path: Path) -> None:
    text = (
        "system_prompt,user_prompt,ground_truth,metadata\n"
        's,What is 1 + 2?,3,"{""level"": 2}"\n'
        "s,u,g,\n"
        "s,u,g,{broken\n"
        "s,u\n"
        's,u,g,"[1]"\n'
    )
    items = read_dataset(write(tmp_path, "d.csv", text))
    assert isinstance(items[0], DatasetRow) and items[0].metadata == {"level": 2}
    assert isinstance(items[1], DatasetRow) and items[1].metadata is None
    assert isinstance(items[2], RowError) and "'metadata' is not valid JSON" in items[2].message
    assert isinstance(items[3], RowError) and "2 cells for 4 columns" in items[3].message
    assert isinstance(items[4], RowError) and "got array" in items[4].message


def test_csv_unterminated_quote_reports_the_row_and_keeps_earlier_rows(tmp_path: Path) -> None:
    text = 'system_prompt,user_prompt,ground_truth\ns,u,g\ns,"unterminated,g\n'
    items = read_dataset(write(tmp_path, "d.csv", text))
    assert isinstance(items[0], DatasetRow)
    assert isinstance(items[1], RowError) and "CSV cannot be parsed" in items[1].message


def test_offset_and_limit_keep_absolute_row_indexes(tmp_path: Path) -> None:
    path = write(tmp_path, "d.jsonl", "\n".join(json.dumps({**GOOD, "ground_truth": str(i)}) for i in range(6)))
    items = read_dataset(path, offset=2, limit=3)
    assert [(i.index, i.ground_truth) for i in items] == [(2, "2"), (3, "3"), (4, "4")]
    assert read_dataset(path, limit=0) == []
    with pytest.raises(ValueError):
        read_dataset(path, offset=-1)


def test_unreadable_datasets_raise(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        read_dataset(tmp_path / "missing.jsonl")
    with pytest.raises(DatasetError, match="unsupported dataset format '.xlsx'"):
        read_dataset(write(tmp_path, "d.xlsx", ""))
    with pytest.raises(DatasetError, match="not a readable Parquet file"):
        read_dataset(write(tmp_path, "d.parquet", "not parquet"))
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"user_prompt": "caf\xe9"}')
    with pytest.raises(DatasetError, match="not UTF-8"):
        read_dataset(bad)


def test_0_3_8_contract_label_alias_metadata_mode_and_parquet(tmp_path: Path) -> None:
    """osmosis-ai 0.3.8's dataset contract: label for ground_truth, optional system prompt, metadata mode."""
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    prompt_mode = [{"user_prompt": "What is 2 + 2?", "label": "4"}, {"user_prompt": "u", "ground_truth": 7}]
    items = read_dataset(write(tmp_path, "p.jsonl", "\n".join(json.dumps(r) for r in prompt_mode)))
    assert [(i.system_prompt, i.user_prompt, i.ground_truth) for i in items] == [
        (None, "What is 2 + 2?", "4"), (None, "u", "7")]
    assert items[0].messages() == [{"role": "user", "content": "What is 2 + 2?"}]
    metadata_mode = [{"metadata": {"task": "t1"}}, {"metadata": {}, "user_prompt": ""}, {"metadata": {"task": "t3"},
                                                                                         "user_prompt": "go"}]
    items = read_dataset(write(tmp_path, "m.jsonl", "\n".join(json.dumps(r) for r in metadata_mode)))
    assert isinstance(items[0], DatasetRow) and items[0].metadata == {"task": "t1"} and items[0].messages() == []
    assert isinstance(items[1], RowError) and "no prompt and no metadata" in items[1].message
    assert items[2].ground_truth is None and items[2].messages() == [{"role": "user", "content": "go"}]
    table = pa.table({"user_prompt": ["What is 1 + 1?", "x"], "label": ["2", "y"],
                      "metadata": ['{"k": 1}', None]})
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    items = read_dataset(path, offset=1)
    assert [(i.index, i.user_prompt, i.ground_truth, i.metadata) for i in items] == [(1, "x", "y", None)]
