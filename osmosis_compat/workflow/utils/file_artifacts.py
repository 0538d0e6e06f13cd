"""Per-rollout artifact directories (upstream ``utils/file_artifacts.py``, 0.2.28+, spec §2.14).

Workflow and grader share ``<root>/<rollout_id>/artifacts``; a marker file next to it proves the directory is
writable. Creation never fails a rollout: after ``CREATE_ATTEMPTS`` tries the context gets ``None``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path

from osmosis_compat.workflow.utils.identifiers import ensure_single_path_segment

__all__ = [
    "CREATE_ATTEMPTS",
    "CREATE_BACKOFF_SECONDS",
    "GRADER_ARTIFACTS_SNAPSHOT_DIRNAME",
    "HARBOR_ARTIFACTS_DIR",
    "HEALTH_CHECK_CONTENT",
    "HEALTH_CHECK_FILENAME",
    "artifact_tree_state",
    "copy_artifact_tree",
    "create_rollout_artifacts_dir",
    "default_artifact_root",
]

logger = logging.getLogger("osmosis_ai.rollout.utils.file_artifacts")

CREATE_ATTEMPTS = 3
CREATE_BACKOFF_SECONDS = 0.5
HARBOR_ARTIFACTS_DIR = "/logs/artifacts"
GRADER_ARTIFACTS_SNAPSHOT_DIRNAME = ".osmosis-artifacts"
HEALTH_CHECK_FILENAME = ".osmosis-health-check"
HEALTH_CHECK_CONTENT = "osmosis-health-check"


def default_artifact_root() -> Path:
    """``~/.osmosis``."""
    return Path.home() / ".osmosis"


def _create(root: Path, rollout_id: str) -> Path:
    rollout_dir = root / rollout_id
    artifacts = rollout_dir / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    marker = rollout_dir / HEALTH_CHECK_FILENAME
    if not marker.exists():
        marker.write_text(HEALTH_CHECK_CONTENT, encoding="utf-8")
    if not os.access(artifacts, os.W_OK):
        raise PermissionError(f"{artifacts} is not writable")
    return artifacts


async def create_rollout_artifacts_dir(root: Path, rollout_id: str, *, attempts: int | None = None) -> Path | None:
    """Create ``<root>/<rollout_id>/artifacts`` (retrying ``OSError`` with 0.5 s doubling back-off); ``None`` with a
    warning if it stays unusable. ``ValueError`` if ``rollout_id`` is not a single path segment."""
    ensure_single_path_segment(rollout_id, label="rollout_id")
    tries = max(1, attempts if attempts is not None else CREATE_ATTEMPTS)
    delay = CREATE_BACKOFF_SECONDS
    for attempt in range(tries):
        try:
            return _create(Path(root), rollout_id)
        except OSError as exc:
            if attempt + 1 >= tries:
                logger.warning("Artifact directory for rollout %s is unusable, continuing without: %s", rollout_id, exc)
                return None
            await asyncio.sleep(delay)
            delay *= 2
    return None  # pragma: no cover


def artifact_tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, mtime_ns)}`` of the regular files under ``root`` (links are not followed)."""
    state: dict[str, tuple[int, int]] = {}
    root = Path(root)
    if not root.is_dir() or root.is_symlink():
        return state
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            stat = path.stat()
            state[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return state


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def copy_artifact_tree(
    source: Path,
    destination: Path,
    *,
    destination_root: Path,
    baseline: dict[str, tuple[int, int]] | None = None,
    replace_destination: bool = False,
) -> int:
    """Copy the regular files of ``source`` into ``destination`` (only those changed since ``baseline``, if
    given); return how many were copied.

    Never follows or creates links and refuses a destination outside ``destination_root`` or reached through a
    link under it (``ValueError``).
    """
    source, destination_root = Path(source), Path(destination_root).resolve()
    destination = Path(destination)
    resolved = destination.resolve()
    if not _inside(resolved, destination_root):
        raise ValueError(f"destination {destination} is outside {destination_root}")
    probe = destination.absolute()
    while _inside(probe, destination_root) and probe != destination_root:
        if probe.is_symlink():
            raise ValueError(f"destination {destination} goes through a link ({probe})")
        probe = probe.parent
    if replace_destination and resolved.exists():
        shutil.rmtree(resolved)
    copied = 0
    for relative, signature in artifact_tree_state(source).items():
        if baseline is not None and baseline.get(relative) == signature:
            continue
        target = resolved / relative
        if not _inside(target.resolve(), resolved):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, target, follow_symlinks=False)
        copied += 1
    return copied
