"""The README's quick-start commands are exactly what CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_quickstart_has_the_two_commands_and_ci_runs_them():
    commands = _readme_quickstart_commands()
    assert len(commands) == 2, commands
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    for command in commands:
        assert command in ci, f"{command!r} is in the README but not in .ci/run"
    ci_commands = [line for line in ci if not line.startswith(("set ", "cd "))]
    assert ci_commands == commands, "the CI runs something the README does not show"
