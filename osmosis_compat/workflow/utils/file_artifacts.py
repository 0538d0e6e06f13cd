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
    "ArtifactFileState",
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


ArtifactFileState = dict[str, tuple[int, int, int]]
"""``{relative posix path: (size, mtime_ns, ctime_ns)}`` — upstream's change-detection signature."""


def _is_link(path: Path) -> bool:
    """A symlink, or a Windows junction (``Path.is_junction`` exists from Python 3.12)."""
    is_junction = getattr(path, "is_junction", None)
    return path.is_symlink() or bool(is_junction and is_junction())


def _remove_link(path: Path) -> None:
    """Remove a link (or junction) without touching its target."""
    is_junction = getattr(path, "is_junction", None)
    if is_junction and is_junction():
        path.rmdir()
    else:
        path.unlink()


def artifact_tree_state(source: Path) -> ArtifactFileState:
    """``{relative posix path: (size, mtime_ns, ctime_ns)}`` of the regular files under ``source``; links (and
    what is under them) are skipped. As upstream 0.2.31."""
    state: ArtifactFileState = {}

    def visit(directory: Path, relative_dir: Path) -> None:
        if _is_link(directory) or not directory.is_dir():
            return
        for entry in sorted(directory.iterdir(), key=lambda path: path.name):
            if _is_link(entry):
                continue
            relative = relative_dir / entry.name
            if entry.is_dir():
                visit(entry, relative)
            elif entry.is_file():
                stat = entry.stat()
                state[relative.as_posix()] = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)

    visit(Path(source), Path())
    return state


def copy_artifact_tree(
    source: Path,
    destination: Path,
    *,
    destination_root: Path,
    baseline: ArtifactFileState | None = None,
    replace_destination: bool = False,
) -> int:
    """Merge the regular files of ``source`` into ``destination``; return how many were copied. Upstream 0.2.31's
    semantics, name for name (tests/workflow/test_upstream_oracle.py compares them with the real package):

    - contents only: links and special files in ``source`` are skipped (with a warning), never followed or made;
    - an entry whose kind changed is replaced (a directory where a file now is, and the other way round);
    - ``baseline`` (from :func:`artifact_tree_state`) skips files unchanged since; files only in ``destination`` are
      kept (the merge is additive) unless ``replace_destination`` clears it first;
    - ``destination`` must lie strictly below ``destination_root`` (``ValueError``); a link among its components
      below the root raises ``OSError`` (a link *as* the destination itself is replaced by a directory), a file
      among them ``NotADirectoryError``. Missing components are created. A ``source`` that is missing, not a
      directory or a link copies nothing.
    """
    source = Path(source)
    if _is_link(source) or not source.is_dir():
        return 0
    trusted_root = Path(destination_root).absolute()
    destination = Path(destination).absolute()
    try:
        relative_destination = destination.relative_to(trusted_root)
    except ValueError as exc:
        raise ValueError(f"Artifact destination {destination} is outside trusted root {trusted_root}") from exc
    if not relative_destination.parts or ".." in relative_destination.parts:
        raise ValueError("Artifact destination must be strictly below its trusted root")

    # The root is trusted (it may be a mount or a link); below it, walk one component at a time and refuse links
    # before anything is removed.
    trusted_root.mkdir(parents=True, exist_ok=True)
    current = trusted_root
    for index, part in enumerate(relative_destination.parts):
        current /= part
        is_destination = index == len(relative_destination.parts) - 1
        if _is_link(current):
            if not is_destination:
                raise OSError(f"Refusing symlink in artifact destination path: {current}")
            _remove_link(current)
        elif current.exists():
            if not current.is_dir():
                if not is_destination:
                    raise NotADirectoryError(f"Artifact destination component is not a directory: {current}")
                current.unlink()
            elif is_destination and replace_destination:
                shutil.rmtree(current)
            else:
                continue
        current.mkdir()

    def copy(directory: Path, target_dir: Path, relative_dir: Path) -> int:
        copied = 0
        for entry in sorted(directory.iterdir(), key=lambda path: path.name):
            target = target_dir / entry.name
            relative = relative_dir / entry.name
            if _is_link(entry):
                logger.warning("Skipping link in artifact tree: %s", entry)
                continue
            if entry.is_dir():
                if _is_link(target):
                    _remove_link(target)
                elif target.exists() and not target.is_dir():
                    target.unlink()
                target.mkdir(parents=True, exist_ok=True)
                copied += copy(entry, target, relative)
                continue
            if entry.is_file():
                stat = entry.stat()
                if baseline is not None and baseline.get(relative.as_posix()) == (
                    stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns
                ):
                    continue
                if _is_link(target):
                    _remove_link(target)
                elif target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(entry, target)
                copied += 1
                continue
            logger.warning("Skipping special file in artifact tree: %s", entry)
        return copied

    return copy(source, destination, Path())
