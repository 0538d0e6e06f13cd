"""Artifact directories and the artifact-tree copy helper (spec workflow-api §2.14)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from osmosis_compat.workflow.utils.file_artifacts import (
    artifact_tree_state,
    copy_artifact_tree,
    create_rollout_artifacts_dir,
    default_artifact_root,
)


def test_default_root_is_under_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_artifact_root() == tmp_path / ".osmosis"


async def test_create_is_idempotent_and_writes_the_marker(tmp_path: Path) -> None:
    first = await create_rollout_artifacts_dir(tmp_path, "r1")
    second = await create_rollout_artifacts_dir(tmp_path, "r1")
    assert first == second == tmp_path / "r1" / "artifacts"
    assert (tmp_path / "r1" / ".osmosis-health-check").read_text() == "osmosis-health-check"


async def test_unusable_root_gives_none(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert await create_rollout_artifacts_dir(blocker, "r1", attempts=1) is None


async def test_unsafe_rollout_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="rollout_id"):
        await create_rollout_artifacts_dir(tmp_path, "../escape")


def test_copy_tree_regular_files_only_and_changed_since_baseline(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_text("a")
    (source / "sub" / "b.txt").write_text("b")
    os.symlink(source / "a.txt", source / "link.txt")
    root = tmp_path / "root"
    root.mkdir()
    baseline = artifact_tree_state(source)
    assert set(baseline) == {"a.txt", "sub/b.txt"}  # posix paths, as upstream
    (source / "c.txt").write_text("c")
    assert copy_artifact_tree(source, root / "dest", destination_root=root, baseline=baseline) == 1
    assert sorted(p.name for p in (root / "dest").rglob("*")) == ["c.txt", "sub"]  # directories are made (upstream)
    assert copy_artifact_tree(source, root / "dest", destination_root=root, replace_destination=True) == 3
    assert not (root / "dest" / "link.txt").exists()


def test_copy_tree_refuses_destinations_outside_or_through_links(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(ValueError, match="outside"):
        copy_artifact_tree(source, tmp_path / "elsewhere", destination_root=root)
    inside = root / "real"
    inside.mkdir()
    os.symlink(inside, root / "alias")
    with pytest.raises(OSError, match="Refusing symlink in artifact destination path"):
        copy_artifact_tree(source, root / "alias" / "dest", destination_root=root)
