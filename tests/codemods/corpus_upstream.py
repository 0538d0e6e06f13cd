"""The proof on the real osmosis-ai (issue 18 item 5): migrated programs served by the real release and driven by
its real client.

    python -m tests.codemods.corpus_upstream [--target 0.3|0.2] [--report out.json] [--keep DIR]

1. the in-repo corpus is migrated by its ``measure.py`` (``_corpus.measure_corpus``), and the plain fixtures
   (``PLAIN_FIXTURES``: one tool run per directory, as a user runs it, so the packages migrate across files);
2. the programs to prove: every corpus file measure calls *fully migrated* and every changed fixture, whose
   output defines exactly one workflow (``select``);
3. one process of the side venv with the real osmosis-ai (``tests/upstream/scripts/corpus_host.py``) imports them
   all and serves each with the real ``create_rollout_server(backend=LocalBackend(workflow=…, grader=…))`` on its
   own loopback port and event loop;
4. 0.3.8: the real ``RolloutClient`` (``tests/upstream/scripts/corpus_client.py``, same venv) runs one rollout per
   program against the project's fake policy (``FakePollingController`` + ``ScriptedPolicy`` on 127.0.0.1, which
   answers a request for structured output with a value of its schema, as a model would):
   ``grade=True`` with a label when the module has a grader, else ``grade=False``. 0.2.31 (``--target 0.2``) has no
   polling client: the project's fake 0.2 controller (``FakeWorkflowController``) drives it over the callbacks, one
   rollout at a time;
5. per program: served, rollout status, sample recorded, error (plus the host's traceback line in the program), and
   what stood in for what the side venv lacks (stubbed modules, stub tools, dummy settings).

Prints one line per program and ``N of M workflows run on the real <release>``; ``--report`` writes the records.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from tests.codemods._corpus import CORPUS, measure, measure_corpus, migrate_tool
from tests.codemods._fixtures import FIXTURES

SCRIPTS = Path(__file__).resolve().parents[1] / "upstream" / "scripts"
RELEASE = {"0.3": "0.3.8", "0.2": "0.2.31"}
#: fixture directories of the plain rules and of workflow-0.3 (whole programs; the legacy-loop fixtures are proven by
#: the legacy tests, the imports fixtures are import-path samples, not programs)
PLAIN_FIXTURES = ("strands_agent", "openai_agent", "strands_agent_tree", "openai_agent_tree", "workflow_03")
PROMPT = [{"role": "user", "content": "What is 2 + 3?"}]
LABEL = "5"
DEAD = "http://127.0.0.1:9"  # every provider endpoint and proxy: nothing a program does leaves the machine
SAFE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_AGENTS_DISABLE_TRACING": "1", "OPENAI_API_KEY": "sk-fake",
    "OPENAI_BASE_URL": DEAD + "/v1", "OPENAI_API_BASE": DEAD + "/v1", "ANTHROPIC_API_KEY": "fake",
    "AWS_ACCESS_KEY_ID": "fake", "AWS_SECRET_ACCESS_KEY": "fake", "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": DEAD, "OLLAMA_HOST": DEAD, "HTTP_PROXY": DEAD, "HTTPS_PROXY": DEAD,
    "http_proxy": DEAD, "https_proxy": DEAD, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    "MPLBACKEND": "Agg",
}


@dataclass
class Program:
    """A migrated file and whether it is one to prove (``selected``; else ``reason`` says why not)."""

    name: str  # corpus/<kind>/<file>.py or fixtures/<dir>/<path>.py
    path: Path  # the migrated file
    selected: bool
    reason: str = ""
    module: Optional[str] = None  # dotted name under ``root`` for a file of a package
    root: Optional[Path] = None


@dataclass
class Outcome:
    """What happened to one selected program on the real release."""

    name: str
    served: bool = False
    workflow: Optional[str] = None
    grader: Optional[str] = None
    stubs: list[str] = field(default_factory=list)  # missing modules replaced by permissive stubs
    stub_tools: list[str] = field(default_factory=list)  # names of those modules used as tools: parameterless tools
    env: list[str] = field(default_factory=list)  # settings it reads without a default, given a dummy value
    status: Optional[str] = None
    sample: bool = False
    reward: Optional[float] = None
    error: Optional[str] = None
    where: Optional[str] = None  # the last line of the migrated program in the host's traceback

    @property
    def ok(self) -> bool:
        return self.served and self.status == "success" and self.sample


# ------------------------------------------------------------------------------------------------ what to prove


def all_names() -> list[str]:
    """Every file the proof considers (selected or not), as ``Program.name``: known before anything runs."""
    from tests.codemods._corpus import corpus_files

    fixtures = [f"fixtures/{d}/{p.relative_to(FIXTURES / d).as_posix()}" for d in PLAIN_FIXTURES
                for p in sorted((FIXTURES / d).rglob("*.py")) if "__pycache__" not in p.parts]
    return [f"corpus/{rel}" for rel in corpus_files()] + fixtures


def _workflows(text: str) -> int:
    import ast

    return len(measure().workflow_classes(ast.parse(text)))


def corpus_programs(work: Path, target: Optional[str]) -> tuple[list[Program], str]:
    """The corpus migrated by measure.py; each file a Program (selected: fully migrated with one workflow).
    Returns the programs and the target the tool used."""
    run = measure_corpus(work, target)
    out = []
    for rel, rec in run.records.items():
        path = run.tree / rel
        if rec["category"] != "fully-migrated":
            reason = f"{rec['category']} (not fully migrated)"
        elif rec.get("imports_osmosis_compat"):
            reason = "imports osmosis_compat"
        else:
            n = _workflows(path.read_text())
            reason = "" if n == 1 else f"defines {n} workflows"
        out.append(Program(f"corpus/{rel}", path, not reason, reason))
    return out, run.target


def fixture_programs(work: Path, target: Optional[str]) -> list[Program]:
    """The plain fixtures migrated one directory per tool run (a package migrates across its files); each file a
    Program (selected: changed, parses, no osmosis_compat, one workflow)."""
    import ast

    out = []
    tool = migrate_tool(work, target)
    for name in PLAIN_FIXTURES:
        tree = work / "fixtures" / name
        shutil.copytree(FIXTURES / name, tree, ignore=shutil.ignore_patterns("__pycache__"))
        report = work / f"fixtures-{name}.json"
        done = subprocess.run([tool, "--report", str(report), "--no-progress", "-q", "--allow-dirty", str(tree)],
                              capture_output=True, text=True, cwd=work)
        assert done.returncode in (0, 3), done.stderr[-3000:]
        status = {os.path.abspath(f["path"]): f["status"] for f in json.loads(report.read_text())["files"]}
        for path in sorted(tree.rglob("*.py")):
            rel = path.relative_to(tree)
            text = path.read_text()
            program = Program(f"fixtures/{name}/{rel.as_posix()}", path, False)
            if status.get(str(path), "unchanged") != "changed":
                program.reason = status.get(str(path), "unchanged")
            elif measure().imports_osmosis_compat(ast.parse(text)):
                program.reason = "imports osmosis_compat"
            elif _workflows(text) != 1:
                program.reason = f"defines {_workflows(text)} workflows"
            else:
                program.selected = True
            if len(rel.parts) > 1:  # a file of a package: imported as one, its relative imports resolve
                program.module, program.root = ".".join(rel.with_suffix("").parts), tree
            out.append(program)
    return out


# ------------------------------------------------------------------------------------------------ hosting


class Host:
    """``with Host(programs, release, work) as host:`` — the programs served by the real release in one side-venv
    process; ``host.facts[name]`` has ``url`` (or ``error``), ``workflow``, ``grader``, ``stubs``."""

    def __init__(self, programs: list[Program], release: str, work: Path) -> None:
        self.programs, self.release, self.work = programs, release, work
        self.facts: dict[str, dict[str, Any]] = {}
        self.log_path = work / f"host-{release}.log"

    def __enter__(self) -> Host:
        from tests.upstream.venvs import upstream_env, upstream_python

        home = self.work / "home"
        home.mkdir(exist_ok=True)
        # programs that open the `default` AWS profile at import (`boto3.Session(profile_name="default")`) find a
        # fake one, as on a developer's machine; their Bedrock calls go to the dead endpoint like every other
        (home / ".aws").mkdir(exist_ok=True)
        (home / ".aws" / "credentials").write_text("[default]\naws_access_key_id = fake\naws_secret_access_key = fake\n")
        env = upstream_env(self.release, {**SAFE_ENV, "HOME": str(home),
                                          "_OSMOSIS_ROLLOUT_ARTIFACT_ROOT": str(home / "artifacts")})
        spec = {"programs": [{"name": p.name, "path": str(p.path), "module": p.module,
                              "root": str(p.root) if p.root else None} for p in self.programs],
                "measure": str(CORPUS / "measure.py"),
                # 0.2.31 keeps one httpx client per process for its callbacks: its servers must share one event loop
                "one_loop": self.release.startswith("0.2.")}
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen([str(upstream_python(self.release)), str(SCRIPTS / "corpus_host.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env,
                                     cwd=self.work, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(spec))
        self.proc.stdin.close()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                line = self.proc.stdout.readline()
                if line.startswith("READY "):
                    self.facts = {f["name"]: f for f in json.loads(line[len("READY "):])}
                    return self
                if not line and self.proc.poll() is not None:
                    break
        self.__exit__(None, None, None)
        raise AssertionError(f"the {self.release} host did not get ready: {self.log()[-4000:]}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def __exit__(self, *exc: Any) -> None:
        self.proc.kill()
        self.proc.wait()
        self._log.close()


def where_in(log: str, path: Path) -> Optional[str]:
    """The last traceback of the host log that runs through ``path``: its last line there and the error."""
    marker = f'File "{path}", line '
    for block in reversed(log.split("Traceback (most recent call last):")[1:]):
        lines = block.splitlines()
        at = [i for i, line in enumerate(lines) if marker in line]
        if not at:
            continue
        i = at[-1]
        line_no = lines[i].split(marker, 1)[1].split(",", 1)[0]
        code = lines[i + 1].strip() if i + 1 < len(lines) else ""
        error = next((line for line in lines[i:] if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b", line)), "")
        return f"line {line_no}: {code} -> {error.strip()}"
    return None


# ------------------------------------------------------------------------------------------------ driving


def _drive_03(runs: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    """One rollout per run with the real 0.3.8 RolloutClient against the fake policy; its answers by run name."""
    from osmosis_compat.testing import FakePollingController, ScriptedPolicy
    from tests.upstream.venvs import upstream_env, upstream_python

    # structured_output (the default): a program that asks for an output_type / structured output gets one
    controller = FakePollingController(ScriptedPolicy(structured_output=True), check_keys=False)
    with controller.serve():
        spec = {"chat": controller.require_url(), "runs": runs, "concurrency": 8, "agent_timeout": 45}
        done = subprocess.run([str(upstream_python("0.3.8")), str(SCRIPTS / "corpus_client.py")],
                              input=json.dumps(spec), capture_output=True, text=True, timeout=900,
                              env=upstream_env("0.3.8", SAFE_ENV), cwd=work)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"the 0.3.8 client failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return json.loads(lines[-1][len("RESULT "):])


async def _drive_02_async(runs: list[dict[str, Any]]) -> dict[str, Any]:
    from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy

    controller = FakeWorkflowController(ScriptedPolicy(structured_output=True))
    # one at a time: the 0.2.31 servers share one event loop (see Host), so a program that blocks it (a sync MCP
    # start waits up to 30 s) would time out the rollouts of the others
    gate = asyncio.Semaphore(1)

    async def one(run: dict[str, Any]) -> dict[str, Any]:
        async with gate:
            try:
                record = await controller.run_rollout(run["server"], rollout_id=run["rollout_id"], timeout=60,
                                                      initial_messages=run["messages"], label=run["label"],
                                                      grade=run["grade"])
            except Exception as exc:  # reported per run
                return {"error": f"{type(exc).__name__}: {exc}"[:500]}
        completion = record.completion or {}
        # 0.2 reports samples to the grader callback only: ungraded, the sample is the model calls it made
        samples = (record.grader or {}).get("samples") or {}
        sample = samples or record.chat_requests
        reward = next(iter(record.rewards.values()), None)
        return {"status": completion.get("status"), "err_message": completion.get("err_message"),
                "sample": {"messages": len(samples), "reward": reward} if sample else None}

    with controller.serve():
        done = await asyncio.gather(*(one(run) for run in runs))
    return {run["name"]: d for run, d in zip(runs, done)}


def run_programs(programs: list[Program], release: str, work: Path) -> dict[str, Outcome]:
    """Serve the selected programs on the real ``release`` and drive one rollout each; an Outcome per program."""
    chosen = [p for p in programs if p.selected]
    outcomes = {p.name: Outcome(p.name) for p in chosen}
    with Host(chosen, release, work) as host:
        runs = []
        for i, p in enumerate(chosen):
            facts, o = host.facts.get(p.name, {}), outcomes[p.name]
            o.workflow, o.grader, o.stubs = facts.get("workflow"), facts.get("grader"), facts.get("stubs") or []
            o.stub_tools = facts.get("stub_tools") or []
            o.env = sorted(facts.get("env") or {})
            if "url" not in facts:
                o.error = facts.get("error", "not reported by the host")
                o.where = facts.get("where")
                continue
            o.served = True
            runs.append({"name": p.name, "server": facts["url"], "rollout_id": f"corpus-{i}", "messages": PROMPT,
                         "label": LABEL if o.grader else None, "grade": bool(o.grader)})
        seen = _drive_03(runs, work) if release == "0.3.8" else asyncio.run(_drive_02_async(runs))
        log = host.log()
    for p in chosen:
        o, got = outcomes[p.name], seen.get(p.name)
        if got is None:
            continue
        o.status = got.get("status")
        o.sample = bool(got.get("sample"))
        o.reward = (got.get("sample") or {}).get("reward")
        o.error = got.get("error") or got.get("err_message")
        if not o.ok:
            o.where = where_in(log, p.path)
    return outcomes


@dataclass
class Proof:
    """A whole run: the programs considered, the outcomes of those served, the release and target."""

    release: str
    target: str
    programs: list[Program]
    outcomes: dict[str, Outcome]

    def summary(self) -> str:
        """``N of M workflows run on the real <release>`` (corpus and fixtures apart, then in total)."""
        def count(prefix: str) -> str:
            mine = [o for n, o in self.outcomes.items() if n.startswith(prefix)]
            return f"{sum(o.ok for o in mine)} of {len(mine)}"

        return (f"corpus {count('corpus/')}, fixtures {count('fixtures/')}: {count('')} workflows run on the real "
                f"{self.release}")

    def report(self) -> dict[str, Any]:
        return {
            "release": self.release, "target": self.target, "summary": self.summary(),
            "programs": [{"name": p.name, "selected": p.selected, "reason": p.reason,
                          **({k: v for k, v in asdict(self.outcomes[p.name]).items() if k != "name"}
                             if p.selected else {})} for p in self.programs],
        }


def prove(work: Path, target: Optional[str] = None) -> Proof:
    """Migrate (``target``: the tool's ``--target``; ``None`` = its default), select, serve and drive."""
    corpus, used = corpus_programs(work, target)
    programs = corpus + fixture_programs(work, target)
    release = RELEASE[used]
    return Proof(release, used, programs, run_programs(programs, release, work))


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=tuple(RELEASE), help="the tool's --target (default: the tool's default)")
    ap.add_argument("--report", metavar="FILE", help="write the per-program records as JSON")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR (must not exist) and keep it: migrated trees, logs")
    a = ap.parse_args(argv)
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="corpus-upstream-"))
    if a.keep:
        work.mkdir(parents=True)
    try:
        proof = prove(work, a.target)
        for p in proof.programs:
            if not p.selected:
                continue
            o = proof.outcomes[p.name]
            flag = "ok  " if o.ok else "FAIL"
            detail = f"workflow {o.workflow}, grader {o.grader or '-'}"
            detail += (f", stubs {','.join(o.stubs)}" if o.stubs else "") + (f", env {','.join(o.env)}" if o.env else "")
            detail += f", stub tools {','.join(o.stub_tools)}" if o.stub_tools else ""
            if not o.ok:
                error = " ".join((o.error or "").split())
                detail += f"; served={o.served} status={o.status} sample={o.sample}: {error[:300]}"
                if o.where:
                    detail += f" [{o.where}]"
            print(f"{flag} {p.name}  ({detail})")
        print(f"target {proof.target}: {sum(p.selected for p in proof.programs)} of {len(proof.programs)} files "
              f"(corpus + plain fixtures) migrated with one workflow; {proof.summary()}")
        if a.report:
            Path(a.report).write_text(json.dumps(proof.report(), indent=1))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
