"""Runs in a side venv with the REAL osmosis-ai: serves many migrated programs from one process.

Input (JSON on stdin): ``{"programs": [{"name", "path", "module", "root"}], "measure": path, "import_timeout": s,
"one_loop": bool}``.
For each program: import it (``module`` dotted under ``root`` for a file of a package, else the file alone under a
unique name), find the one ``AgentWorkflow`` subclass it defines and its ``Grader`` (if any), build the real
``create_rollout_server(backend=LocalBackend(workflow=…, grader=…))`` and serve it with uvicorn on its own port of
127.0.0.1 — every server in this one process (an event loop each, or one for all with ``one_loop``), so ~100
programs cost one interpreter start.

Output: one line ``READY <json>`` (per program: ``url``, ``workflow``, ``grader``, ``stubs``, ``stub_tools``,
``env``, or ``error``), then the servers run until the process is killed.

Third-party modules a program needs and this venv lacks (``strands_tools``, an app's own package, a sibling module
the corpus does not include, the parent package of a relative import) are replaced by the permissive stubs of
``--import-python`` in ``tests/codemods/corpus/measure.py`` (its path comes in the input) — but never the packages
the migration is about (``PROTECTED``): a migrated program that needs something of them that is missing fails, as
it would for a user. A name the program imports from such a missing module and uses as a tool (in a ``tools=[…]``
list, or called as ``<agent>.tool.<name>(…)``) is a real tool of the program's framework instead (``stub_tools``):
one without parameters that answers that the package is absent — so the agent built around it is the program's own,
and a tool the migration dropped from it is still missing. Settings a program reads from the environment without a
default get a harmless value (``env_it_reads``).
"""

import asyncio
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback

PROTECTED = ("osmosis_ai", "osmosis_compat", "strands", "agents", "litellm", "openai")
#: parent packages given to single files so that their relative imports (``from .tools import x``) resolve to stubs
ANCHOR = "_corpus_anchor_"
STUBS = []  # the stubbed module names (see install_stubs)
STUB_MODULE = []  # measure.py's stub module class, once install_stubs ran
#: the modules each framework's agents come from (the migrated integrations' included)
FRAMEWORKS = {
    "strands": ("strands", "osmosis_ai.rollout.integrations.agents.strands"),
    "agents": ("agents", "osmosis_ai.rollout.integrations.agents.openai_agents"),
}


def install_stubs(measure_path):
    """Put measure.py's own permissive stubs (its ``--import-python`` snippet, up to where it imports a file) first
    on ``sys.meta_path``, serving the names in ``STUBS`` (which grows as programs need more)."""
    namespace = {}
    with open(measure_path) as fh:
        source = fh.read()
    code = source.split('IMPORT_SNIPPET = r"""', 1)[1].split('"""', 1)[0].split("\nif STUBS:", 1)[0]
    exec(compile(code, measure_path + ":IMPORT_SNIPPET", "exec"), namespace)
    namespace["STUBS"] = STUBS  # the finder reads its module global at each lookup: this list
    STUB_MODULE.append(namespace["_StubModule"])

    class ToolFinder(namespace["_Finder"]):
        def exec_module(self, module):
            super().exec_module(module)
            TOOLS.arm(module)

    sys.meta_path.insert(0, ToolFinder())


def stubbed(module):
    """True when ``module`` (a dotted name) is served by the stubs."""
    return any(module == s or module.startswith(s + ".") for s in STUBS)


class StubTools:
    """The stub tools of the program being imported: ``{module: {name: tool}}``, set on those stub modules (the ones
    created before, and each one created during the import, through ``arm``), and taken off again afterwards so that
    another program importing the same name for another use gets the permissive stub."""

    def __init__(self):
        self.wanted = {}  # module -> {name: framework}
        self.made = {}  # (framework, module, name) -> tool, shared by the programs that import it
        self.armed = []  # (module object, name) set by arm

    def use(self, wanted):
        self.disarm()
        self.wanted = wanted
        for name in wanted:
            module = sys.modules.get(name)
            if module is not None:
                self.arm(module)

    def arm(self, module):
        if not isinstance(module, STUB_MODULE[0]):
            return
        for name, framework in self.wanted.get(module.__name__, {}).items():
            setattr(module, name, self.tool(framework, module.__name__, name))
            self.armed.append((module, name))

    def disarm(self):
        for module, name in self.armed:
            module.__dict__.pop(name, None)
        self.armed, self.wanted = [], {}

    def tool(self, framework, module, name):
        key = (framework, module, name)
        if key not in self.made:
            self.made[key] = stub_tool(framework, module, name)
        return self.made[key]

    def used_by(self, program_module):
        """The stub tools the imported program holds (``module.name``)."""
        made = {id(t): f"{m}.{n}" for (_, m, n), t in self.made.items()}
        return sorted({made[id(v)] for v in vars(program_module).values() if id(v) in made})


def stub_tool(framework, module, name):
    """A tool of ``framework`` (``strands`` / ``agents``) named ``name``, without parameters (a direct call's arguments
    are dropped by the framework's validation), whose result says that ``module`` is not installed."""
    top = module.split(".")[0]

    def stub():
        return f"{name}: {top} is not installed here (a stand-in for the tool)"

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = f"Stand-in for {module}.{name}: {top} is not installed where this program is proven."
    if framework == "strands":
        from strands import tool
    else:
        from agents import function_tool as tool
    return tool(stub)


def tool_imports(path):
    """``{module: {name: framework}}``: the names the program imports from an absolute module (``from M import n``,
    bound to ``n`` or an alias) and uses as a tool — an element of a ``tools=[…]`` list or tuple, or called as
    ``<x>.tool.<name>(…)`` — with the framework it builds agents with (``strands`` or ``agents``; a program
    importing both, or neither, gets none: which one a tool is for is not known)."""
    import ast

    tree = ast.parse(open(path, "rb").read())
    imported, modules = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
            for alias in node.names:
                imported[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    frameworks = {f for f, roots in FRAMEWORKS.items() if any(m == r or m.startswith(r + ".") for m in modules
                                                             for r in roots)}
    if len(frameworks) != 1:
        return {}
    (framework,) = frameworks
    listed, called = set(), set()  # local names in tools lists; tool names called directly (a tool's own name)
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "tools" and isinstance(node.value, (ast.List, ast.Tuple)):
            listed.update(e.id for e in node.value.elts if isinstance(e, ast.Name))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "tool"):
            called.add(node.func.attr)
    wanted = {}
    for local, (module, name) in imported.items():
        if local in listed or name in called:
            wanted.setdefault(module, {})[name] = framework
    return wanted


def stubs_of(path, used):
    """The stubbed modules the program imports (absolute imports served by the stubs, and ``used``: the ones its own
    import added, relative ones included), whichever program's import stubbed them first."""
    import ast

    names = set(used)
    for node in ast.walk(ast.parse(open(path, "rb").read())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return sorted(n for n in names if n in used or stubbed(n))


TOOLS = StubTools()


class ImportTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise ImportTimeout("the import did not finish in time")


def _load_once(program, index):
    """Import the program's module once; returns it (raises what the import raised). (osmosis_compat's own
    file-importing helper is not on this interpreter's path: the side venv holds the real osmosis-ai only.)"""
    if program.get("module"):
        sys.path.insert(0, program["root"])
        try:
            return importlib.import_module(program["module"])
        finally:
            sys.path.remove(program["root"])
    path = program["path"]
    directory = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"{ANCHOR}{index}.{stem}"
    if f"{ANCHOR}{index}" not in STUBS:
        STUBS.append(f"{ANCHOR}{index}")  # the parent package: a stub, so are the siblings it does not have
    before = set(sys.modules)
    sys.path.insert(0, directory)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    finally:
        sys.path.remove(directory)
        # siblings imported from this directory are this program's: another program's sibling of the same name
        # must not find them in sys.modules
        for key in set(sys.modules) - before:
            file = getattr(sys.modules.get(key), "__file__", None) or ""
            if key != name and os.path.dirname(os.path.abspath(file)) == directory:
                sys.modules.pop(key, None)


def env_it_reads(path):
    """Environment variables the program reads without a default (``os.environ["X"]``, ``os.getenv("X")``,
    ``os.environ.get("X")``) and that are unset here: its deployment configuration (an endpoint, a key, a
    cluster name), which a user sets. They get a harmless value — an address: the dead loopback port — so the
    program is judged on its migration, not on a missing setting."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(open(path, "rb").read())):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and ast.unparse(node.value) in (
                "os.environ", "environ"):
            key = node.slice
        elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and ast.unparse(node.func) in (
                "os.getenv", "getenv", "os.environ.get", "environ.get"):
            key = node.args[0]
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in os.environ:
            names.add(key.value)
    address = ("URL", "HOST", "ENDPOINT", "BASE", "URI")
    return {n: "http://127.0.0.1:9" if any(w in n.upper() for w in address) else "dummy" for n in sorted(names)}


def load(program, index, timeout, rounds=10):
    """Import with stubs for missing third-party modules; returns (module, stubs used for it). A failed attempt
    takes the modules it added out of ``sys.modules`` again: a half-initialised one (an import cut by the timeout)
    must not break the programs after it."""
    used = []
    for _ in range(rounds):
        before = set(sys.modules)
        signal.alarm(timeout)
        try:
            return _load_once(program, index), used
        except BaseException as exc:
            for key in set(sys.modules) - before:
                sys.modules.pop(key, None)
            missing = (exc.name or "") if isinstance(exc, ModuleNotFoundError) else ""
            if not missing or missing.split(".")[0] in PROTECTED or missing in STUBS:
                raise
            STUBS.append(missing)
            used.append(missing)
        finally:
            signal.alarm(0)
    raise ImportError(f"still missing modules after stubbing {used}")


def import_frameworks():
    """The packages every program shares, imported once before the programs and outside their import timeout
    (a loaded machine can take longer than that over litellm alone)."""
    for name in ("osmosis_ai.rollout.server", "osmosis_ai.rollout.backend.local",
                 "osmosis_ai.rollout.integrations.agents.strands", "osmosis_ai.rollout.integrations.agents.openai_agents"):
        try:
            importlib.import_module(name)
        except ImportError as exc:  # an extra this release lacks: the programs that need it will say so
            print(f"corpus_host: cannot import {name}: {exc}", file=sys.stderr)


def pick(module):
    """(workflow class, grader class or None, workflow config or None) the module defines."""
    from osmosis_ai.rollout import AgentWorkflow, Grader
    from osmosis_ai.rollout.backend.local import LocalBackend
    from osmosis_ai.rollout.types import AgentWorkflowConfig

    own = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]
    workflows = [c for c in own if issubclass(c, AgentWorkflow) and c is not AgentWorkflow]
    graders = [c for c in own if issubclass(c, Grader) and c is not Grader]
    if len(workflows) != 1:
        raise LookupError(f"defines {len(workflows)} AgentWorkflow subclasses: {[c.__name__ for c in workflows]}")
    workflow = workflows[0]
    # what the program itself serves, when it builds a backend at module level (a migrated legacy loop does)
    for value in vars(module).values():
        if isinstance(value, LocalBackend) and value.workflow_cls is workflow:
            return workflow, value.grader_cls, value.workflow_config
    configs = [v for v in vars(module).values() if isinstance(v, AgentWorkflowConfig)]
    if len(graders) > 1:
        raise LookupError(f"defines {len(graders)} Grader subclasses: {[c.__name__ for c in graders]}")
    return workflow, (graders[0] if graders else None), (configs[0] if len(configs) == 1 else None)


def build(program, index, timeout):
    """Import a program and build its real rollout server app; returns (app, facts) or (None, facts)."""
    from osmosis_ai.rollout.backend.local import LocalBackend
    from osmosis_ai.rollout.server import create_rollout_server

    facts = {"name": program["name"]}
    try:
        facts["env"] = env_it_reads(program["path"])
        os.environ.update(facts["env"])
        TOOLS.use(tool_imports(program["path"]))
        try:
            module, used = load(program, index, timeout)
            facts["stub_tools"] = TOOLS.used_by(module)
        finally:
            TOOLS.disarm()
        facts["stubs"] = stubs_of(program["path"], used)
        workflow, grader, config = pick(module)
        facts.update(workflow=workflow.__name__, grader=grader.__name__ if grader else None)
        backend = LocalBackend(workflow=workflow, grader=grader, workflow_config=config)
        return create_rollout_server(backend=backend), facts
    except BaseException as exc:  # reported per program; the others are still served
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.extract_tb(exc.__traceback__)
        where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(tb)
                      if f.filename == program["path"]), "")
        facts["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        facts["where"] = where
        return None, facts


class LoopThread:
    """An event loop running forever in a daemon thread (the parent kills the process)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()


class Serving:
    """One app served by uvicorn on a pre-bound loopback socket, in the event loop of ``loop_thread``. With a loop
    per app, a program that blocks its loop (a sync MCP start, a sync HTTP call) stalls its own server only."""

    def __init__(self, app, loop_thread):
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=30))
        self.future = asyncio.run_coroutine_threadsafe(self.server.serve(sockets=[self.sock]), loop_thread.loop)

    def wait_started(self, deadline):
        """True once serving; False if the server stopped or ``deadline`` (monotonic) passed."""
        while not self.server.started and not self.future.done() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.server.started and not self.future.done()

    def error(self):
        return repr(self.future.exception()) if self.future.done() else "no answer in time"


def main():
    spec = json.loads(sys.stdin.read())
    sys.stdin = open(os.devnull)  # a program reading input() gets EOF, never the harness's pipe
    ready = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the programs print goes to the log: a pipe nobody reads would fill up and block them
    install_stubs(spec["measure"])
    import_frameworks()
    signal.signal(signal.SIGALRM, _alarm)
    built = [build(p, i, int(spec.get("import_timeout", 60))) for i, p in enumerate(spec["programs"])]
    # a loop per app, unless the release keeps loop-bound state per process (0.2.31: one shared httpx client for
    # its callbacks), in which case they all share one
    shared = LoopThread() if spec.get("one_loop") else None
    servings = [Serving(app, shared or LoopThread()) if app is not None else None for app, _ in built]
    deadline = time.monotonic() + 120
    out = []
    for (_, facts), serving in zip(built, servings):
        if serving is not None:
            if serving.wait_started(deadline):
                facts["url"] = serving.url
            else:
                facts["error"] = f"server did not start: {serving.error()}"
        out.append(facts)
    ready.write("READY " + json.dumps(out) + "\n")
    ready.close()
    threading.Event().wait()  # serve until killed


if __name__ == "__main__":
    main()
