"""The README's quick-start commands are exactly what CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_quickstart_commands_are_what_ci_runs():
    commands = _readme_quickstart_commands()
    assert len(commands) == 3, commands  # main job, tests, the Redis server the tests need
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    for command in commands:
        assert command in ci, f"{command!r} is in the README but not in .ci/run"
    ci_commands = [line for line in ci if not line.startswith(("set ", "cd ", "export "))]
    main_job, tests = commands[0], commands[1]
    assert ci_commands[0] == main_job and ci_commands[-1] == tests, "CI runs the main job first and the tests last"
    assert set(ci_commands) == set(commands), "the CI and the README's quick start differ"
    readme = (ROOT / "README.md").read_text()
    hidden = [line for line in ci_commands if line not in readme]
    assert not hidden, f"the CI runs something the README does not show: {hidden}"


def test_the_readme_test_command_says_why_tests_skip():
    """It printed only 'ssssss' for the tests that skip (no redis-server, no Python 3.12): the reasons are shown."""
    tests = _readme_quickstart_commands()[1]
    pytest_args = tests.split("python -m pytest", 1)[1].split()
    assert any(arg.startswith("-r") and ("s" in arg[2:] or "a" in arg[2:] or "A" in arg[2:]) for arg in pytest_args), tests


def test_the_docs_name_only_files_the_repository_has():
    """The docs pointed readers to ../shared/DESIGN.md, spec/… and seeds/… files that are not in the repository."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*/README.md"))]
    missing = []
    for doc in docs:
        text = doc.read_text()
        named = re.findall(r"\]\(([^)#\s]+)", text)  # markdown links
        named += re.findall(r"`((?:\.\./)*(?:shared|spec|seeds)/[\w./-]+)`", text)  # paths shown as code
        named += re.findall(r"\(((?:\.\./)*(?:shared|spec|seeds)/[\w./-]+\.md)", text)  # (spec/x.md §2) asides
        for target in named:
            if "://" in target or target.startswith("mailto:"):
                continue
            if not ((doc.parent / target).exists() or (ROOT / target).exists()):
                missing.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not missing, missing
