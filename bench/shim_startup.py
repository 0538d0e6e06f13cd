"""What the ``osmosis_ai`` import shim's start-up hook costs every Python process of the environment.

``osmosis_compat_shim.pth`` runs at every interpreter start. This script builds two throw-away venvs on the same
interpreter, both with this checkout on ``sys.path`` (a path ``.pth``), one of them also with the shim's ``.pth``,
and compares ``python -c pass`` in both:

- modules imported at start-up (``-X importtime``) that the hook adds, and their summed import time;
- wall time of ``python -c pass`` (median and min of interleaved runs).

Issue 12 measured ~14 ms and 29 extra modules (``importlib.abc`` → pathlib, re, tempfile, typing …) before the
hook was reduced to ``os``/``sys`` only. Run: ``python bench/shim_startup.py [--runs N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PTH = ROOT / "osmosis_compat_shim.pth"


def _base_python() -> str:
    return getattr(sys, "_base_executable", sys.executable)


def make_venv(where: Path, *, with_hook: bool) -> Path:
    """A venv without pip whose site-packages has this checkout on the path (and the hook when asked)."""
    subprocess.run([_base_python(), "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "osmosis_compat_checkout.pth").write_text(str(ROOT) + "\n")
    if with_hook:
        (Path(site) / PTH.name).write_text(PTH.read_text())
    return python


def startup_modules(python: Path) -> dict[str, int]:
    """``{module: cumulative import µs}`` for the top-level imports ``python -X importtime -c pass`` reports."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    err = subprocess.run([str(python), "-X", "importtime", "-c", "pass"], capture_output=True, text=True,
                         env=env, check=True).stderr
    modules: dict[str, int] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        modules[name.strip()] = modules.get(name.strip(), 0) + int(cumulative)
    return modules


def wall_times(pythons: dict[str, Path], runs: int) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    times: dict[str, list[float]] = {label: [] for label in pythons}
    for _ in range(runs):  # interleaved, so machine load hits both alike
        for label, python in pythons.items():
            started = time.perf_counter()
            subprocess.run([str(python), "-c", "pass"], env=env, check=True)
            times[label].append((time.perf_counter() - started) * 1000.0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40, help="interleaved runs of `python -c pass` per venv")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="shim-startup-") as tmp:
        without = make_venv(Path(tmp) / "without", with_hook=False)
        with_hook = make_venv(Path(tmp) / "with", with_hook=True)
        for python in (without, with_hook):  # warm the .pyc caches and the page cache
            for _ in range(3):
                subprocess.run([str(python), "-c", "pass"], check=True)
        base = startup_modules(without)
        hooked = startup_modules(with_hook)
        added = [m for m in hooked if m not in base]
        times = wall_times({"without hook": without, "with hook": with_hook}, args.runs)
    print(f"modules imported by `python -c pass`: {len(base)} without the hook, {len(hooked)} with it")
    print(f"added by the hook ({len(added)}): {', '.join(added) or '-'}")
    own = [m for m in added if m.startswith("osmosis_compat")]
    stdlib = [m for m in added if not m.startswith("osmosis_compat")]
    print(f"  osmosis_compat modules: {len(own)}; other (stdlib) modules: {len(stdlib)}")
    top = hooked.get("osmosis_compat.shim.install")
    if top is not None:
        print(f"import time of the hook (osmosis_compat.shim.install, cumulative): {top / 1000:.2f} ms")
    print(f"{'python -c pass':16} {'median ms':>10} {'min ms':>8}  ({args.runs} interleaved runs)")
    for label, values in times.items():
        print(f"{label:16} {statistics.median(values):10.2f} {min(values):8.2f}")
    delta = statistics.median(times["with hook"]) - statistics.median(times["without hook"])
    print(f"hook cost (median difference): {delta:+.2f} ms")


if __name__ == "__main__":
    main()
