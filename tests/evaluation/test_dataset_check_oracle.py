"""``osmosis dataset validate``: the same verdicts and messages as the real osmosis-ai 0.3.8 (side venv), file for
file; plus what the check itself must say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from osmosis_compat.cli.legacy_cli import main
from osmosis_compat.evaluation.dataset_check import DatasetCheckError, check_dataset

sys.path.insert(0, str(Path(__file__).parents[1]))
from upstream.venvs import require_upstream, upstream_env  # noqa: E402

P = [{"user_prompt": f"q{i}", "ground_truth": str(i)} for i in range(4)]


def _jsonl(rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


CASES: dict[str, str] = {
    "ok.jsonl": _jsonl(P),
    "label.jsonl": _jsonl([{"user_prompt": "q", "label": "a", "system_prompt": "s"}] * 4),
    "missing.jsonl": _jsonl([{"user_prompt": "q"}] * 4),
    "small.jsonl": _jsonl(P[:2]),
    "fields.jsonl": _jsonl([P[0], {**P[1], "extra": 1}, {"user_prompt": "x"}, P[3]]),
    "broken.jsonl": _jsonl([P[0], "{nope", "[1, 2]", P[1], P[2]]),
    "meta_ok.jsonl": _jsonl([{"metadata": {"task": f"t{i}", "n": i}} for i in range(4)]),
    "meta_bad.jsonl": _jsonl([{"metadata": {"a": 1}}, {"metadata": {"a": "x"}}, {"metadata": {}},
                              {"metadata": {"b": {}}}, {"metadata": {"c": 2 ** 70}}, {"metadata": "not json"}]),
    "meta_str.jsonl": _jsonl([{"metadata": json.dumps({"k": i}), "user_prompt": ""} for i in range(4)]),
    "many_errors.jsonl": _jsonl(["{bad"] * 8),
    "ok.csv": "user_prompt,label\n" + "".join(f"q{i},{i}\n" for i in range(4)),
    "cells.csv": "user_prompt,ground_truth\nq,1\nq,1,3\nq\nq,2\nq,3\n",
    "meta.csv": 'metadata\n"{""a"": 1}"\n\n"{""a"": ""x""}"\n[1]\n"{""a"": 2}"\n',
    "nocols.csv": "question,answer\n" + "q,1\n" * 4,
    "header_only.csv": "user_prompt,ground_truth\n",
    "latin1.csv": "user_prompt,ground_truth\n",  # replaced by bytes below
    "notes.txt": "x",
    "empty.jsonl": "",
}


def _write_cases(root: Path) -> list[Path]:
    paths = []
    for name, text in CASES.items():
        path = root / name
        path.write_text(text)
        paths.append(path)
    (root / "latin1.csv").write_bytes("user_prompt,ground_truth\n\xe9t\xe9,1\n".encode("latin-1"))
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is in the dev extra
        return paths
    tables = {
        "ok.parquet": pa.table({"user_prompt": [f"q{i}" for i in range(4)], "label": ["a"] * 4}),
        "small.parquet": pa.table({"user_prompt": ["q"], "ground_truth": ["a"]}),
        "meta.parquet": pa.table({"metadata": pa.array([{"a": 1}, {"a": 2}, None, {"a": 3}])}),
        "meta_dtype.parquet": pa.table({"metadata": [1, 2, 3, 4], "user_prompt": ["q"] * 4}),
    }
    for name, table in tables.items():
        pq.write_table(table, root / name)
        paths.append(root / name)
    (root / "broken.parquet").write_bytes(b"PAR1 not really")
    paths.append(root / "broken.parquet")
    return paths


_ORACLE = r"""
import json, sys
from osmosis_ai.platform.cli.dataset import validate
from osmosis_ai.cli.errors import CLIError
out = {}
for path in sys.argv[1:]:
    try:
        result = validate(file=path)
        out[path] = {"valid": True, "warnings": result.data["warnings"]}
    except CLIError as exc:
        out[path] = {"valid": False, "message": str(exc)}
print(json.dumps(out))
"""


def _ours(paths):
    out = {}
    for path in paths:
        try:
            check = check_dataset(path)
        except DatasetCheckError as exc:
            out[str(path)] = {"valid": False, "message": str(exc)}
            continue
        if check.errors:
            out[str(path)] = {"valid": False,
                              "message": "Validation failed:\n" + "\n".join(f"  - {e}" for e in check.errors)}
        else:
            out[str(path)] = {"valid": True, "warnings": check.warnings}
    return out


def test_same_verdicts_and_messages_as_the_real_0_3_8(tmp_path):
    python = require_upstream("0.3.8")
    paths = _write_cases(tmp_path)
    proc = subprocess.run([str(python), "-c", _ORACLE, *map(str, paths)], capture_output=True, text=True,
                          timeout=300, env=upstream_env("0.3.8", {"HOME": str(tmp_path)}))
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = _ours(paths)
    assert {Path(p).name: v["valid"] for p, v in ours.items()} == {Path(p).name: v["valid"] for p, v in theirs.items()}
    for path in theirs:
        assert ours[path] == theirs[path], path
    # The real command line too: exit codes and the JSON envelope.
    osmosis = Path(python).parent / "osmosis"
    for name, code in (("ok.jsonl", 0), ("fields.jsonl", 1)):
        real = subprocess.run([str(osmosis), "--json", "dataset", "validate", str(tmp_path / name)],
                              capture_output=True, text=True, timeout=120,
                              env=upstream_env("0.3.8", {"HOME": str(tmp_path)}))
        assert real.returncode == code
        mine = subprocess.run([sys.executable, "-m", "osmosis_compat.cli.legacy_cli", "--json", "dataset",
                               "validate", str(tmp_path / name)], capture_output=True, text=True, timeout=120)
        assert mine.returncode == code
        real_doc, my_doc = json.loads(real.stdout or real.stderr), json.loads(mine.stdout or mine.stderr)
        real_doc.pop("cli_version", None), my_doc.pop("cli_version", None)
        assert my_doc == real_doc


def test_the_check_says_what_is_wrong(tmp_path, capsys):
    paths = {p.name: p for p in _write_cases(tmp_path)}
    assert check_dataset(paths["label.jsonl"]).valid and check_dataset(paths["meta_ok.jsonl"]).valid
    errors = check_dataset(paths["meta_bad.jsonl"]).errors
    assert "Line 2: invalid metadata - value type at $.a is inconsistent across rows (number vs str)" in errors
    assert any("Line 3: invalid metadata - metadata mode requires a non-empty JSON object" in e for e in errors)
    assert any("contains an empty nested object" in e for e in errors)
    assert any("integer too large" in e for e in errors)
    assert errors[-1] == "... (showing first 5 errors)"
    assert main(["dataset", "validate", str(paths["ok.csv"])]) == 0
    assert "Status   Valid csv file" in capsys.readouterr().out
    assert main(["dataset", "validate", str(paths["cells.csv"])]) == 1
    assert "Row 3: expected 2 columns, got 3" in capsys.readouterr().err
    with pytest.raises(DatasetCheckError, match="Unsupported file type '.txt'"):
        check_dataset(paths["notes.txt"])
