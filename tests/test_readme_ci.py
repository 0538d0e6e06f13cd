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
