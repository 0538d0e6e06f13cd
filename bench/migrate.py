"""Benchmark of ``osmosis-migrate`` (issue 5 item 6).

Builds two trees under ``bench/out/migrate/``:

* **mixed**: ≥ 5,000 real third-party Python files copied from this venv's site-packages (the framework packages
  ``strands``/``agents`` themselves excluded: they are not user code), plus ~2 % agent files generated from the
  codemod fixtures, plus two pathological files (nesting too deep for libcst) that must be reported failed
  while the run goes on;
* **agents**: only agent files (the fixtures, renamed copies).

Measures ``osmosis-migrate --check`` (the full pipeline minus the writes: walk, prefilter, parse, all rules,
codegen, safety re-parse) as a subprocess with ``-j 1`` and ``-j 2``, and the floor any libcst tool pays — plain
``libcst.parse_module`` + ``.code`` in one process — on the same trees (on the mixed tree, a random sample of
``--floor-sample`` files, extrapolated; ``--full-floor`` for all of them; on the agent tree, the files the driver
parses, and the driver's files/s counts those files too, so the ratio is the time per parsed file). Prints the
table, writes ``bench/out/migrate.json``.

    python bench/migrate.py [--files 5000] [--agent-files 1000] [--floor-sample 400] [--full-floor] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "migrate"
FIXTURES = ROOT / "tests" / "codemods" / "fixtures"
SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
SKIP_PACKAGES = {"strands", "agents", "osmosis_compat", "codemods", "_pytest", "pip", "setuptools"}
MAX_BYTES = 300_000


def real_files(n: int, seed: int = 0) -> list[Path]:
    files = []
    for path in sorted(SITE.rglob("*.py")):
        rel = path.relative_to(SITE)
        if rel.parts[0] in SKIP_PACKAGES or any(p in ("tests", "test") for p in rel.parts):
            continue
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
        except OSError:
            continue
        files.append(path)
    random.Random(seed).shuffle(files)
    if len(files) < n:
        raise SystemExit(f"only {len(files)} usable files in {SITE}; pass --files {len(files)}")
    return files[:n]


def agent_sources() -> list[tuple[str, str]]:
    """(name, text) of every fixture that migrates (the agent files of the trees)."""
    out = []
    for path in sorted(FIXTURES.rglob("*.py")):
        out.append((f"{path.parent.name}_{path.stem}", path.read_text()))
    return out


def build_mixed(n_real: int, agent_ratio: float) -> Path:
    tree = OUT / "mixed"
    shutil.rmtree(tree, ignore_errors=True)
    for i, src in enumerate(real_files(n_real)):
        dst = tree / "lib" / f"{i // 500:02d}" / f"{i:05d}_{src.name}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    agents = agent_sources()
    n_agents = max(1, round(n_real * agent_ratio / (1 - agent_ratio)))
    for i in range(n_agents):
        name, text = agents[i % len(agents)]
        dst = tree / "agents" / f"{i:04d}_{name}.py"
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(text)
    # files that exceed what libcst (or CPython) can nest: reported failed, the run goes on
    (tree / "deep_brackets.py").write_text("import strands\nx = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    (tree / "long_chain.py").write_text("import strands\nx = " + " + ".join(["a"] * 3000) + "\n")
    return tree


def build_agents(n: int) -> Path:
    tree = OUT / "agents"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    agents = agent_sources()
    for i in range(n):
        name, text = agents[i % len(agents)]
        (tree / f"{i:04d}_{name}.py").write_text(text)
    return tree


def count_py(tree: Path) -> int:
    return sum(1 for _ in tree.rglob("*.py"))


CODE = ROOT  # where `codemods` is imported from in the child processes (--code)


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(CODE) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def run_tool(tree: Path, jobs: int) -> dict:
    report = OUT / f"report-{tree.name}-j{jobs}.json"
    cmd = [sys.executable, "-m", "codemods.cli", "--check", "--no-progress", "-q", "-j", str(jobs),
           "--report", str(report), str(tree)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=CODE, stdin=subprocess.DEVNULL, env=_env())
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"osmosis-migrate failed ({proc.returncode}): {proc.stderr}")
    summary = json.loads(report.read_text())["summary"]
    return {"seconds": elapsed, "exit": proc.returncode, "summary": summary, "line": proc.stderr.strip()}


FLOOR_CODE = r"""
import sys, time, json
import libcst
sys.setrecursionlimit(3000)
paths = json.load(sys.stdin)
t0 = time.perf_counter()
ok = failed = 0
for p in paths:
    try:
        with open(p, "rb") as fh:
            libcst.parse_module(fh.read()).code
        ok += 1
    except Exception:
        failed += 1
print(json.dumps({"seconds": time.perf_counter() - t0, "ok": ok, "failed": failed}))
"""


INPROC_CODE = r"""
import sys, time, json
from codemods.driver import run_many, select_rules
paths = json.load(sys.stdin)
rules = select_rules()
t0 = time.perf_counter()
results = run_many(paths, rules, jobs=1)
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "failed": sum(r.status == "failed" for r in results)}))
"""


def _child(code: str, paths: list[Path], what: str) -> dict:
    """Run ``code`` in a fresh interpreter with ``paths`` as JSON on stdin; it prints one JSON object."""
    proc = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps([str(p) for p in paths]),
        capture_output=True, text=True, cwd=CODE, env=_env(),
    )
    if proc.returncode != 0:
        raise SystemExit(f"{what} run failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def in_process(paths: list[Path]) -> dict:
    """The driver (prefilter, parse, rules, codegen, checks) in one process, without interpreter start-up."""
    return _child(INPROC_CODE, paths, "in-process")


def floor(paths: list[Path]) -> dict:
    """Plain libcst parse + codegen of ``paths`` in one (fresh) process; files libcst dies on are left out."""
    return _child(FLOOR_CODE, paths, "floor")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=5000, help="real third-party files in the mixed tree")
    ap.add_argument("--agent-ratio", type=float, default=0.02)
    ap.add_argument("--agent-files", type=int, default=1000, help="files in the all-agent tree")
    ap.add_argument("--floor-sample", type=int, default=400, help="mixed-tree files timed for the floor")
    ap.add_argument("--full-floor", action="store_true", help="time the floor on the whole mixed tree")
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="directory to import codemods from (e.g. a snapshot of a commit, when others edit the tree)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each measurement, interleaved; the fastest counts (the machine is shared)")
    args = ap.parse_args(argv)
    global CODE
    CODE = args.code.resolve()

    mixed = build_mixed(args.files, args.agent_ratio)
    agents = build_agents(args.agent_files)
    results: dict = {"cores": os.cpu_count(), "python": sys.version.split()[0]}
    rows = []
    for tree in (mixed, agents):
        n = count_py(tree)
        entry: dict = {"files": n}
        for jobs in (1, 2):
            # fastest of the runs with the fewest failures (a run that fails files is not a faster run)
            r = min((run_tool(tree, jobs) for _ in range(args.repeat)),
                    key=lambda x: (x["summary"]["failed"], x["seconds"]))
            entry[f"j{jobs}"] = {**r, "files_per_s": n / r["seconds"]}
        candidates = [p for p in tree.rglob("*.py") if "deep_" not in p.name and "long_chain" not in p.name]
        if tree is mixed and not args.full_floor:
            sample = random.Random(1).sample(candidates, min(args.floor_sample, len(candidates)))
        elif tree is mixed:
            sample = candidates
        else:
            # the files the driver parses: the agent copies without a trigger word cost it nothing (prefiltered)
            # and any libcst tool would skip them too, so they do not count for the floor either
            report = json.loads((OUT / f"report-{tree.name}-j1.json").read_text())
            parsed = {f["path"] for f in report["files"] if f["status"] != "skipped"}  # listed: parsed, or it has TODO markers
            sample = [p for p in candidates if str(p) in parsed]
        floors, ips = [], []
        for _ in range(args.repeat):  # interleaved, so both see the same load
            floors.append(floor(sample))
            ips.append(in_process(sorted(tree.rglob("*.py"))))
        f = min(floors, key=lambda x: x["seconds"])
        ip = min(ips, key=lambda x: (x["failed"], x["seconds"]))
        entry["floor"] = {**f, "files": len(sample), "files_per_s": f["ok"] / f["seconds"] if f["seconds"] else 0}
        # agent tree: per file the driver parses, as the floor (the prefiltered copies would dilute its time)
        counted = len(sample) if tree is agents else n
        entry["in_process_j1"] = {**ip, "files_per_s": counted / ip["seconds"]}
        results[tree.name] = entry
        s = entry["j1"]["summary"]
        rows.append((
            tree.name, n, s["skipped_prefilter"], s["changed"] + s["unchanged"], s["failed"],
            entry["j1"]["seconds"], entry["j1"]["files_per_s"], entry["j2"]["seconds"], entry["j2"]["files_per_s"],
            entry["floor"]["files_per_s"], entry["in_process_j1"]["files_per_s"],
        ))
    (OUT.parent / "migrate.json").write_text(json.dumps(results, indent=2, default=str))

    print(f"osmosis-migrate --check, {results['cores']} cores, Python {results['python']}")
    print(f"{'tree':<7} {'files':>6} {'prefiltered':>11} {'parsed':>6} {'failed':>6} "
          f"{'-j1 s':>7} {'-j1 f/s':>8} {'-j2 s':>7} {'-j2 f/s':>8} {'in-proc f/s':>11} {'floor f/s':>9} "
          f"{'in-proc vs floor':>16}")
    for name, n, pre, parsed, failed, s1, f1, s2, f2, fl, ipf in rows:
        # -j1/-j2: the CLI as a user runs it (interpreter start-up included); in-proc: the driver alone, -j 1;
        # last column: time per file relative to plain libcst parse+codegen (< 1 on the mixed tree: prefilter)
        print(f"{name:<7} {n:>6} {pre:>11} {parsed:>6} {failed:>6} {s1:>7.2f} {f1:>8.1f} {s2:>7.2f} {f2:>8.1f} "
              f"{ipf:>11.1f} {fl:>9.1f} {fl / ipf if ipf else 0:>15.2f}x")
    failed_files = [f for f in json.loads((OUT / "report-mixed-j1.json").read_text())["files"] if f["status"] == "failed"]
    for f in failed_files:
        print(f"  failed (run went on): {Path(f['path']).name}: {f['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
