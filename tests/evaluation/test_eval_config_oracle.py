"""0.3.8's eval config and run metrics: the real osmosis-ai 0.3.8 (side venv) and ours on the same inputs.

0.3.8's own unit tests for the eval config are not obtainable (its sdist ships none, its repository is not
reachable): the real loader (``load_eval_submit_config``) and metrics (``aggregate_metrics``) are the oracle."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from osmosis_compat.evaluation.eval_config import EvalConfigError, load_eval_config
from osmosis_compat.evaluation.local_run import aggregate_metrics

sys.path.insert(0, str(Path(__file__).parents[1]))
from upstream.venvs import require_upstream, upstream_env  # noqa: E402

GOOD = '[experiment]\nrollout = "calc"\nentrypoint = "main.py"\nmodel_path = "openai/gpt-5-mini"\ndataset = "d"\n'
SECRETS = '[secrets]\nrequired = ["OPENAI_API_KEY"]\n'
CONFIGS = {
    "good.toml": GOOD + "[evaluation]\nn = 4\nlimit = 10\n" + SECRETS,
    "minimal.toml": GOOD + SECRETS,
    "no_secrets.toml": GOOD,
    "no_experiment.toml": SECRETS,
    "missing_model.toml": '[experiment]\nrollout = "r"\nentrypoint = "m.py"\ndataset = "d"\n' + SECRETS,
    "unknown_keys.toml": GOOD + "colour = 1\n[evaluation]\nn = 1\nbogus = 2\n[extra]\nx = 1\n" + SECRETS,
    "types.toml": GOOD.replace('"calc"', "3") + "[env]\nLEVEL = 4\n" + SECRETS,
    "both_refs.toml": GOOD + 'branch = "main"\ncommit_sha = "abcdef1"\n' + SECRETS,
    "bad_sha.toml": GOOD + 'commit_sha = "xyz"\n' + SECRETS,
    "bad_env.toml": GOOD + '[env]\nlower = "x"\n' + SECRETS,
    "reserved_env.toml": GOOD + '[env]\n_OSMOSIS_X = "x"\n' + SECRETS,
    "secret_overlap.toml": GOOD + '[env]\nOPENAI_API_KEY = "x"\n' + SECRETS,
    "secret_dup.toml": GOOD + '[secrets]\nrequired = ["A_B", "A_B"]\n',
    "secret_name.toml": GOOD + '[secrets]\nrequired = ["lower"]\n',
    "secret_extra.toml": GOOD + '[secrets]\nrequired = []\nother = 1\n',
    "secret_type.toml": GOOD + '[secrets]\nrequired = "OPENAI_API_KEY"\n',
    "broken.toml": "[experiment\n",
    "table_type.toml": 'experiment = 3\n' + SECRETS,
}

_ORACLE = r"""
import json, sys
from pathlib import Path
from osmosis_ai.cli.errors import CLIError
from osmosis_ai.platform.cli.eval_config import load_eval_submit_config
from osmosis_ai.eval.local.results import aggregate_metrics
out = {}
for name in json.loads(sys.argv[1]):
    try:
        config = load_eval_submit_config(Path(name))
        out[name] = {"ok": True, "evaluation": config.evaluation_config, "env": config.env, "secrets": config.secrets}
    except CLIError as exc:
        out[name] = {"ok": False, "message": str(exc)}
rows = json.loads(sys.argv[2])
metrics = [aggregate_metrics(r, pass_threshold=t) for r, t in rows]
print(json.dumps({"configs": out, "metrics": metrics}))
"""


def _ours(names):
    out = {}
    for name in names:
        try:
            config = load_eval_config(Path(name))
            out[name] = {"ok": True, "evaluation": config.evaluation.model_dump(exclude_none=True), "env": config.env,
                         "secrets": config.secrets}
        except EvalConfigError as exc:
            out[name] = {"ok": False, "message": str(exc)}
    return out


def _random_runs(seed: int):
    rng = random.Random(seed)
    cases = []
    for _ in range(12):
        rows, n = [], rng.randint(1, 5)
        for row in range(rng.randint(1, 6)):
            for run in range(n):
                status = rng.choice(["success", "success", "failed", "skipped"])
                line = {"row_index": row, "run_index": run, "status": status}
                if status == "success" or rng.random() < 0.2:
                    line["reward"] = rng.choice([0.0, 0.5, 1.0, 1, 0.25])
                if rng.random() < 0.5:
                    line["tokens"] = rng.randint(0, 50)
                rows.append(line)
        cases.append((rows, rng.choice([1.0, 0.5])))
    return cases


def test_configs_and_metrics_as_the_real_0_3_8(tmp_path, monkeypatch):
    python = require_upstream("0.3.8")
    monkeypatch.chdir(tmp_path)
    for name, text in CONFIGS.items():
        (tmp_path / name).write_text(text)
    runs = _random_runs(19)
    proc = subprocess.run([str(python), "-c", _ORACLE, json.dumps(list(CONFIGS)), json.dumps(runs)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=upstream_env("0.3.8", {"HOME": str(tmp_path)}))
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = _ours(CONFIGS)
    for name in CONFIGS:
        assert ours[name] == theirs["configs"][name], name
    assert sum(v["ok"] for v in ours.values()) == 2  # the two good files; every other one refused, same words
    assert [aggregate_metrics(rows, pass_threshold=t) for rows, t in runs] == theirs["metrics"]
