"""Which of the files ``osmosis-migrate`` would write have uncommitted changes in their git repository."""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from typing import Iterable


def _repo_root(directory: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", directory, "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git: not a git tree as far as we can tell
    return out.stdout.strip() or None if out.returncode == 0 else None


def dirty_files(paths: Iterable[str]) -> list[str]:
    """The ``paths`` (as given) that are modified, staged, untracked or otherwise not committed.

    Files outside any git work tree are never dirty (there is nothing to protect them with).
    """
    by_root: dict[str, list[str]] = defaultdict(list)
    root_of_dir: dict[str, str | None] = {}
    for path in paths:
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in root_of_dir:
            root_of_dir[directory] = _repo_root(directory)
        root = root_of_dir[directory]
        if root is not None:
            by_root[root].append(path)
    dirty: list[str] = []
    for root, files in by_root.items():
        rel = {os.path.relpath(os.path.realpath(p), os.path.realpath(root)): p for p in files}
        try:
            out = subprocess.run(
                ["git", "-C", root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *rel],
                capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        entries = out.stdout.decode("utf-8", "surrogateescape").split("\0")
        skip_next = False
        for entry in entries:
            if skip_next:
                skip_next = False
                continue
            if len(entry) < 4:
                continue
            status, name = entry[:2], entry[3:]
            if "R" in status or "C" in status:
                skip_next = True  # the next field is the rename source
            if name in rel:
                dirty.append(rel[name])
    return sorted(set(dirty))
