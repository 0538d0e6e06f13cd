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


def test_explicit_files_are_always_taken(tmp_path):
    _touch(tmp_path, "build/x.py")
    assert list(iter_python_files([str(tmp_path / "build" / "x.py")])) == [str(tmp_path / "build" / "x.py")]
