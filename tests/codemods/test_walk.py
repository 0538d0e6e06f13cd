from __future__ import annotations

import os

from codemods.walk import iter_python_files


def _touch(root, *rels):
    for rel in rels:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def _found(root, **kw):
    return sorted(os.path.relpath(p, root) for p in iter_python_files([str(root)], **kw))


def test_default_excludes_gitignore_and_globs(tmp_path):
    (tmp_path / ".git").mkdir()
    _touch(
        tmp_path,
        "app/agent.py", "app/gen/out.py", "build/x.py", "dist/y.py", ".tox/t.py", "node_modules/n.py",
        "lib/site-packages/s.py", "myenv/lib/v.py", "app/keep.log.py", "app/skip_me.py", "app/notes.txt",
        "app/gen/keep.py",
    )
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / ".gitignore").write_text("# generated\ngen/\n!gen/keep.py\n*.log.py\n")
    found = _found(tmp_path, exclude=["skip_*"])
    assert found == ["app/agent.py"]
    assert "build/x.py" in _found(tmp_path, use_default_excludes=False)
    assert "app/keep.log.py" in _found(tmp_path, respect_gitignore=False)


def test_nested_gitignore_and_anchored_patterns(tmp_path):
    (tmp_path / ".git").mkdir()
    _touch(tmp_path, "a/b/c.py", "a/d.py", "top.py", "a/top.py")
    (tmp_path / ".gitignore").write_text("/top.py\n")
    (tmp_path / "a" / ".gitignore").write_text("b/**\n")
    assert _found(tmp_path) == ["a/d.py", "a/top.py"]


def test_the_repository_gitignore_applies_in_a_worktree_or_submodule(tmp_path):
    # there `.git` is a file (`gitdir: …`), not a directory: the repository root is still the repository root
    (tmp_path / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    _touch(tmp_path, "src/app.py", "src/gen/out.py")
    (tmp_path / ".gitignore").write_text("gen/\n")
    assert _found(tmp_path / "src") == ["app.py"]


def test_explicit_files_are_always_taken(tmp_path):
    _touch(tmp_path, "build/x.py")
    assert list(iter_python_files([str(tmp_path / "build" / "x.py")])) == [str(tmp_path / "build" / "x.py")]


def test_each_file_once_and_absolute_globs(tmp_path):
    _touch(tmp_path, "real/pkg/a.py", "real/b.py", "gen/c.py", "gen/sub/d.py")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "b_link.py").symlink_to(tmp_path / "real" / "b.py")
    (tmp_path / "other" / "pkg_link").symlink_to(tmp_path / "real" / "pkg")  # a directory link is not followed
    assert _found(tmp_path) == ["gen/c.py", "gen/sub/d.py", "other/b_link.py", "real/pkg/a.py"]
    both = list(iter_python_files([str(tmp_path / "real"), str(tmp_path / "other")]))
    assert sorted(os.path.relpath(p, tmp_path) for p in both) == ["real/b.py", "real/pkg/a.py"]
    assert _found(tmp_path, exclude=[str(tmp_path / "gen") + "/"]) == ["other/b_link.py", "real/pkg/a.py"]
    assert _found(tmp_path, exclude=["gen/sub"]) == ["gen/c.py", "other/b_link.py", "real/pkg/a.py"]
