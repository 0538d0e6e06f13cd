"""Benchmark of ``osmosis-migrate`` (issue 5 item 6, issue 18 item 7).

Builds, under ``bench/out/migrate/``, two generated trees and two real ones:

* **mixed**: ≥ 5,000 real third-party Python files copied from this venv's site-packages (the framework packages
  ``strands``/``agents`` themselves excluded: they are not user code), plus ~2 % agent files generated from the
  codemod fixtures, plus two pathological files (nesting too deep for libcst) that must be reported failed
  while the run goes on;
* **agents**: only agent files (the fixtures, renamed copies);
* **sdk**: a copy of the installed OpenAI Agents SDK package (``site-packages/agents``, as ``sdk/agents/``) — real
  code full of the trigger words (~300 files, ~50 parsed);
* **site**: a copy of this environment's whole site-packages (hard links where the file system allows: the run
  writes nothing), ``__pycache__`` left out — every installed package as it is (~12,000 Python files, ~230
  parsed; the figures depend on what the venv holds).

Measures ``osmosis-migrate --check`` (the full pipeline minus the writes: walk, prefilter, cross-file facts, parse,
all rules, codegen, safety re-parse) as a subprocess with ``-j 1`` and ``-j 2`` (the CLI as users run it,
interpreter start-up included); the driver in one process (``run_many`` with ``-j 1`` on the files the CLI's walk
finds, without start-up and walk); and the floor any libcst tool pays — plain ``libcst.parse_module`` + ``.code``
in one process. The floor's files: on the mixed tree a random sample of ``--floor-sample`` files, extrapolated to
the whole tree (``--full-floor`` for all of them); on the other trees exactly the files the driver parsed (from the
``-j 1`` report), and there the files/s of the driver count those files too, so the ratio is the ratio of times.
Each measurement is the fastest of ``--repeat`` interleaved runs (the machine is shared). Prints a table (seconds,
the ratio of the driver's and of the CLI's time to the floor's, and of the driver's CPU time to the floor's: on a
shared machine CPU seconds move less than wall seconds), writes ``bench/out/migrate.json`` (entries of trees not
run this time are kept from the last run).

    python bench/migrate.py [--trees mixed,agents,sdk,site] [--files 5000] [--agent-files 1000]
                            [--floor-sample 400] [--full-floor] [--repeat 3] [--code DIR]
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
TREES = ("mixed", "agents", "sdk", "site")


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


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def build_real(name: str) -> Path:
    """A copy of installed code: ``sdk`` (the OpenAI Agents SDK package, kept under its own name so its absolute
    imports name it) or ``site`` (the whole site-packages; named so that no default exclude matches the root)."""
    tree = OUT / name
    shutil.rmtree(tree, ignore_errors=True)
    src, dst = (SITE / "agents", tree / "agents") if name == "sdk" else (SITE, tree)
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"),
                    copy_function=_link_or_copy)
    return tree


def build(name: str, args: argparse.Namespace) -> Path:
    if name == "mixed":
        return build_mixed(args.files, args.agent_ratio)
    if name == "agents":
        return build_agents(args.agent_files)
    return build_real(name)


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
t0, c0 = time.perf_counter(), time.process_time()
ok = failed = 0
for p in paths:
    try:
        with open(p, "rb") as fh:
            libcst.parse_module(fh.read()).code
        ok += 1
    except Exception:
        failed += 1
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "ok": ok,
                  "failed": failed}))
"""


INPROC_CODE = r"""
import sys, time, json
from codemods.driver import run_many, select_rules
from codemods.walk import iter_python_files
paths = list(iter_python_files(json.load(sys.stdin)))  # the CLI's walk (default excludes, .gitignore files)
rules = select_rules()
t0, c0 = time.perf_counter(), time.process_time()
results = run_many(paths, rules, jobs=1)
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "files": len(paths),
                  "failed": sum(r.status == "failed" for r in results)}))
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


def in_process(tree: Path) -> dict:
    """The driver (prefilter, cross-file facts, parse, rules, codegen, checks) in one process on the files the CLI
    walks in ``tree``, without interpreter start-up and the walk."""
    return _child(INPROC_CODE, [tree], "in-process")


def floor(paths: list[Path]) -> dict:
    """Plain libcst parse + codegen of ``paths`` in one (fresh) process; files libcst dies on are left out."""
    return _child(FLOOR_CODE, paths, "floor")


def floor_files(tree: Path, args: argparse.Namespace) -> list[Path]:
    """The files the floor is timed on: on the mixed tree a sample (or all), else the files the driver parsed."""
    if tree.name == "mixed":
        candidates = [p for p in tree.rglob("*.py") if "deep_" not in p.name and "long_chain" not in p.name]
        if args.full_floor:
            return candidates
        return random.Random(1).sample(candidates, min(args.floor_sample, len(candidates)))
    # the files the driver parses: those without a trigger word cost it nothing (prefiltered) and any libcst tool
    # would skip them too, so they do not count for the floor either
    report = json.loads((OUT / f"report-{tree.name}-j1.json").read_text())
    parsed = [f["path"] for f in report["files"] if f["status"] != "skipped"]  # listed: parsed, or it has TODOs
    return [Path(p) for p in parsed if os.path.isfile(p)]


def measure(tree: Path, args: argparse.Namespace) -> dict:
    entry: dict = {}
    for jobs in (1, 2):
        # fastest of the runs with the fewest failures (a run that fails files is not a faster run)
        runs = [run_tool(tree, jobs) for _ in range(args.repeat)]
        entry[f"j{jobs}"] = min(runs, key=lambda x: (x["summary"]["failed"], x["seconds"]))
    n = entry["files"] = entry["j1"]["summary"]["scanned"]
    for jobs in (1, 2):
        entry[f"j{jobs}"]["files_per_s"] = n / entry[f"j{jobs}"]["seconds"]
    sample = floor_files(tree, args)
    floors, ips = [], []
    for _ in range(args.repeat):  # interleaved, so both see the same load
        floors.append(floor(sample))
        ips.append(in_process(tree))
    f = min(floors, key=lambda x: x["seconds"])
    ip = min(ips, key=lambda x: (x["failed"], x["seconds"]))
    fps = f["ok"] / f["seconds"] if f["seconds"] else 0.0
    # mixed tree: the whole tree, the floor extrapolated to it; the others: per file the driver parses (the
    # prefiltered files would dilute its time), so files/s compare as times
    counted = n if tree.name == "mixed" else len(sample)
    floor_s = counted / fps if fps else 0.0
    # CPU seconds too (fastest of the runs): on a machine shared with other jobs they move less than wall time
    f_cpu = min(x["cpu_seconds"] for x in floors) * (counted / len(sample) if sample else 0.0)
    ip_cpu = min(x["cpu_seconds"] for x in ips)
    entry["floor"] = {**f, "files": len(sample), "files_per_s": fps, "seconds_counted": floor_s,
                      "cpu_seconds_counted": f_cpu}
    entry["in_process_j1"] = {**ip, "files_per_s": counted / ip["seconds"], "cpu_seconds": ip_cpu}
    entry["in_process_vs_floor"] = ip["seconds"] / floor_s if floor_s else None
    entry["in_process_vs_floor_cpu"] = ip_cpu / f_cpu if f_cpu else None
    entry["j1_vs_floor"] = entry["j1"]["seconds"] / floor_s if floor_s else None
    return entry


def print_table(results: dict, names: list[str]) -> None:
    print(f"osmosis-migrate --check, {results['cores']} cores, Python {results['python']}")
    print(f"{'tree':<7} {'files':>6} {'prefiltered':>11} {'parsed':>6} {'failed':>6} {'-j1 s':>7} {'-j2 s':>7} "
          f"{'in-proc s':>9} {'floor s':>7} {'(files)':>7} {'in-proc/floor':>13} {'-j1/floor':>9} {'cpu ratio':>9}")
    for name in names:
        e = results[name]
        s = e["j1"]["summary"]
        # -j1/-j2: the CLI as a user runs it (start-up, walk included); in-proc: the driver alone, -j 1; floor:
        # plain libcst parse+codegen of the files it is timed on (mixed: extrapolated to the whole tree, < 1: the
        # prefilter; the other trees: the files the driver parsed)
        print(f"{name:<7} {e['files']:>6} {s['skipped_prefilter']:>11} {s['changed'] + s['unchanged']:>6} "
              f"{s['failed']:>6} {e['j1']['seconds']:>7.2f} {e['j2']['seconds']:>7.2f} "
              f"{e['in_process_j1']['seconds']:>9.2f} {e['floor']['seconds_counted']:>7.2f} {e['floor']['files']:>7} "
              f"{e['in_process_vs_floor']:>12.2f}x {e['j1_vs_floor']:>8.2f}x {e['in_process_vs_floor_cpu']:>8.2f}x")
    if "mixed" in names:
        report = json.loads((OUT / "report-mixed-j1.json").read_text())
        for f in report["files"]:
            if f["status"] == "failed":
                print(f"  failed (run went on): {Path(f['path']).name}: {f['error']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", default=",".join(TREES), help=f"comma-separated, of {', '.join(TREES)}")
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
    names = [t.strip() for t in args.trees.split(",") if t.strip()]
    unknown = sorted(set(names) - set(TREES))
    if unknown:
        ap.error(f"unknown tree(s): {', '.join(unknown)}")

    out = OUT.parent / "migrate.json"
    try:
        results = json.loads(out.read_text())  # trees not run this time keep their last figures
    except (OSError, ValueError):
        results = {}
    results.update({"cores": os.cpu_count(), "python": sys.version.split()[0]})
    for name in names:
        results[name] = measure(build(name, args), args)
        results[name]["measured_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
    out.write_text(json.dumps(results, indent=2, default=str))
    print_table(results, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
