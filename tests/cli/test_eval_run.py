"""``osmosis eval run`` (0.3.8's local evaluation): config, --rows, n runs with pass@k, the run directory, and
resuming a named run from its journal (--retry-failed, --fresh); ``osmosis eval rubric``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.legacy_cli import main
from osmosis_compat.evaluation.local_run import aggregate_metrics, pass_at_k

FLAKY = '''
import os
from osmosis_ai.rollout import RolloutAgentLoop

class Flaky(RolloutAgentLoop):
    """Fails while the marker file exists, else answers (reward 1 when the answer holds the label)."""
    name = "flaky"

    def get_tools(self, request):
        return []

    async def run(self, ctx):
        if os.path.exists(os.environ["FLAKY_MARKER"]):
            raise RuntimeError("flaky today")
        result = await ctx.chat(list(ctx.request.messages))
        label = str(ctx.request.metadata.get("ground_truth"))
        return ctx.complete([*ctx.request.messages, result.message],
                            reward=1.0 if label in (result.message.get("content") or "") else 0.0)

agent_loop = Flaky()
'''

CONFIG = '''
[experiment]
rollout = "{rollout}"
entrypoint = "main.py"
model_path = "builtin"
dataset = "calc-data"

[evaluation]
n = {n}
batch_size = 2

[secrets]
required = []
'''


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calc = tmp_path / "rollouts" / "calc"
    calc.mkdir(parents=True)
    shutil.copy(EXAMPLES_DIR / "legacy" / "calculator_agent.py", calc / "main.py")
    flaky = tmp_path / "rollouts" / "flaky"
    flaky.mkdir()
    (flaky / "main.py").write_text(FLAKY)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "calc.toml").write_text(CONFIG.format(rollout="calc", n=2))
    (tmp_path / "configs" / "flaky.toml").write_text(CONFIG.format(rollout="flaky", n=1))
    rows = [{"user_prompt": "What is 12 + 30?", "label": "42"}, {"user_prompt": "What is 6 * 7?", "label": "42"},
            {"system_prompt": "calc", "user_prompt": "Compute (2 + 3) * 4", "ground_truth": "20"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("FLAKY_MARKER", str(tmp_path / "fail-now"))
    return tmp_path


def _index(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "index.jsonl").read_text().splitlines()]


def test_run_writes_0_3_8s_layout_with_pass_at_k(workspace, capsys):
    code = main(["eval", "run", "configs/calc.toml", "--dataset-file", "data.jsonl", "--name", "calc-1",
                 "--rows", "0,2"])
    assert code == 0, capsys.readouterr().err
    run_dir = workspace / ".osmosis" / "evals" / "calc-1"
    index = _index(run_dir)
    assert [(r["row_index"], r["run_index"], r["status"], r["reward"]) for r in index] == [
        (0, 0, "success", 1.0), (0, 1, "success", 1.0), (1, 0, "success", 1.0), (1, 1, "success", 1.0)]
    assert all(len(r["rollout_id"]) == 32 and r["trajectory_filename"] == "trajectory.json" for r in index)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["eval_run"]["status"] == "completed" and metrics["eval_run"]["rollout_name"] == "calc"
    assert metrics["summary"]["pass_at_k"] == [{"k": 1, "value": 1.0}, {"k": 2, "value": 1.0}]
    assert json.loads((run_dir / "progress.json").read_text()) == {
        "total_runs": 4, "sampled_rows": 2, "total_dataset_rows": 3}
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert sorted(e["source_row_index"] for e in events) == [0, 0, 2, 2]  # row 1 of the selection is file row 2
    trajectory = json.loads((run_dir / "trajectories" / "row_1_run_0.json").read_text())
    assert trajectory["messages"][0] == {"role": "system", "content": "calc"}
    assert "pass@2: 1.000" in capsys.readouterr().out


def test_resume_retry_failed_and_fresh(workspace, capsys):
    marker = workspace / "fail-now"
    marker.write_text("x")
    base = ["eval", "run", "configs/flaky.toml", "--dataset-file", "data.jsonl", "--name", "flaky-1"]
    assert main(base) == 0
    run_dir = workspace / ".osmosis" / "evals" / "flaky-1"
    assert {r["status"] for r in _index(run_dir)} == {"failed"}
    assert {r["error_type"] for r in _index(run_dir)} == {"agent_error"}
    marker.unlink()
    capsys.readouterr()
    assert main(base) == 0  # resuming keeps terminal failures: nothing to run
    assert "0 attempt(s) run, 3 kept from before" in capsys.readouterr().out
    # An interrupted run: the journal lost its last record and has a torn line (a crash mid-write).
    journal = run_dir / "events.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:2]) + '{"row_index": 2, "run')
    assert main(base) == 0
    assert "1 attempt(s) run, 2 kept from before" in capsys.readouterr().out
    statuses = [r["status"] for r in _index(run_dir)]
    assert statuses.count("success") == 1 and statuses.count("failed") == 2
    assert main([*base, "--retry-failed"]) == 0
    assert "2 attempt(s) run, 1 kept from before" in capsys.readouterr().out
    assert [r["status"] for r in _index(run_dir)] == ["success"] * 3
    assert sum(1 for r in _index(run_dir) if r.get("resumed")) == 1
    # Other inputs for the same name are refused by name; --fresh archives the old run and starts again.
    assert main([*base, "--rows", "0"]) == 1
    assert "source_rows changed" in capsys.readouterr().err
    assert main([*base, "--rows", "0", "--fresh"]) == 0
    assert "previous results archived to" in capsys.readouterr().out
    assert len(_index(run_dir)) == 1 and list(run_dir.parent.glob("flaky-1.archive-*"))


@pytest.mark.parametrize(("args", "message"), [
    (["--rows", "5"], "--rows selects [5] but data.jsonl has 3 rows (valid indices are 0-2)"),
    (["--rows", "2-1"], "--rows range '2-1' is inverted; write it as 1-2"),
    (["--rows", "a"], "--rows must be comma-separated indices or ranges"),
    (["--name", "../x"], "run name must start with a letter or digit"),
    (["--upload"], "--upload needs the Osmosis Platform"),
])
def test_run_errors(workspace, capsys, args, message):
    assert main(["eval", "run", "configs/calc.toml", "--dataset-file", "data.jsonl", *args]) == 1
    assert message in capsys.readouterr().err


def test_config_and_dataset_errors(workspace, capsys):
    assert main(["eval", "run", "configs/calc.toml"]) == 1
    assert "--dataset-file is required" in capsys.readouterr().err
    (workspace / "configs" / "bad.toml").write_text('[experiment]\nrollout = "calc"\n')
    assert main(["eval", "run", "configs/bad.toml", "--dataset-file", "data.jsonl"]) == 1
    assert "Missing 'entrypoint' in [experiment] section of configs/bad.toml" in capsys.readouterr().err
    (workspace / "bad.jsonl").write_text('{"user_prompt": "q"}\n')
    assert main(["eval", "run", "configs/calc.toml", "--dataset-file", "bad.jsonl"]) == 1
    assert "row 0: missing column 'ground_truth' (or 'label')" in capsys.readouterr().err


def test_metrics_as_0_3_8_computes_them():
    assert pass_at_k(attempts=4, passes=1, k=2) == pytest.approx(0.5)
    rows = [{"row_index": 0, "run_index": 0, "status": "success", "reward": 1.0},
            {"row_index": 0, "run_index": 1, "status": "failed"},
            {"row_index": 1, "run_index": 0, "status": "skipped"},
            {"row_index": 1, "run_index": 1, "status": "success", "reward": 0.5, "tokens": 7}]
    summary = aggregate_metrics(rows, pass_threshold=1.0)
    assert (summary["completed_samples"], summary["passed"], summary["failed"], summary["skipped"]) == (3, 1, 1, 1)
    assert summary["pass_rate"] == pytest.approx(1 / 3) and summary["tokens_used"] == 7
    assert summary["pass_at_k"] == [{"k": 1, "value": 0.25}, {"k": 2, "value": 1.0}]


def test_osmosis_compat_eval_rows_and_named_runs(workspace, capsys):
    from osmosis_compat.cli.main import main as compat_main

    agent = str(workspace / "rollouts" / "calc" / "main.py") + ":agent_loop"
    out = workspace / "rows.jsonl"
    assert compat_main(["eval", "-m", agent, "-d", "data.jsonl", "--rows", "0,2", "-q", "-o", str(out)]) == 0
    assert [json.loads(line)["row_index"] for line in out.read_text().splitlines()] == [0, 2]
    # Offline by default, in 0.3.8's layout, driven by the config file (entrypoint, n = 2).
    assert compat_main(["eval", "--config", "configs/calc.toml", "-d", "data.jsonl", "--name", "c", "-q",
                        "--via", "polling"]) == 0
    index = _index(workspace / ".osmosis" / "evals" / "c")
    assert len(index) == 6 and {r["status"] for r in index} == {"success"}
    assert "pass@2: 1.000" in capsys.readouterr().out
    assert compat_main(["eval", "--config", "configs/calc.toml", "-d", "data.jsonl", "--name", "c", "-q",
                        "--via", "polling"]) == 0
    assert "0 attempt(s) run, 6 kept from before" in capsys.readouterr().out
    assert compat_main(["eval", "-m", agent, "-d", "data.jsonl", "--rows", "0", "--limit", "1"]) == 1
    assert "--rows selects rows itself" in capsys.readouterr().err
