"""Run by tests/workflow/test_upstream_oracle.py in two interpreters — ours (the ``osmosis_ai`` shim) and the side
venv with the real osmosis-ai 0.2.31 — so one public call is made in both. Prints one JSON object: each case's
value, or its exception type and message (addresses, ports and temp paths normalised)."""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import os
import re
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

OUT: dict[str, Any] = {}
TMP = Path(tempfile.mkdtemp(prefix="oracle-"))
PORT = [0]


def normalise(text: str) -> str:
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x…", text)
    text = text.replace(str(TMP), "TMP")
    return text.replace(f"127.0.0.1:{PORT[0]}", "HOST")


def case(name: str, fn: Any) -> None:
    try:
        value = fn()
        if asyncio.iscoroutine(value):
            value = asyncio.run(value)
        OUT[name] = {"value": value if isinstance(value, (str, int, float, bool, list, dict, type(None)))
                     else normalise(repr(value))}
    except BaseException as exc:  # noqa: BLE001 - every outcome is data here
        OUT[name] = {"error": [type(exc).__name__, normalise(str(exc))]}


# -- resolve_object / to_import_path -------------------------------------------------------------------------------
from osmosis_ai.rollout.utils.imports import resolve_object, to_import_path  # noqa: E402

for ref in ("json:JSONDecoder", "json.JSONDecoder", "json:Nope", "json:", ":x", "json:decoder.JSONDecoder",
            "json:a:b", "no_such_module_xyz:A", "json:__spec__"):
    case(f"resolve_object({ref!r})", lambda ref=ref: getattr(resolve_object(ref), "__name__", "?"))
case("resolve_object(42)", lambda: resolve_object(42))


def a_function() -> None:
    pass


def make_local_class() -> type:
    class Local:
        pass

    return Local


case("to_import_path(class)", lambda: to_import_path(json.JSONDecoder))
case("to_import_path(function)", lambda: to_import_path(a_function))
case("to_import_path(builtin)", lambda: to_import_path(len))
case("to_import_path(local class)", lambda: to_import_path(make_local_class()))
case("to_import_path(module-level instance)", lambda: to_import_path(logging.root))
case("to_import_path(unbound instance)", lambda: to_import_path(object()))

import osmosis_ai.rollout as rollout  # noqa: E402
from osmosis_ai.rollout import types as rollout_types  # noqa: E402
from osmosis_ai.rollout.integrations.agents import openai_agents  # noqa: E402
from osmosis_ai.rollout.server import auth  # noqa: E402
from osmosis_ai.rollout.utils import concurrency  # noqa: E402
from osmosis_ai.rollout.validator import ValidationError  # noqa: E402

served = {
    **{name: getattr(rollout, name) for name in (
        "AgentWorkflow", "AgentWorkflowConfig", "AgentWorkflowContext", "ConcurrencyConfig",
        "ExecutionBackend", "ExecutionRequest", "ExecutionResult", "Grader", "GraderCompleteRequest", "GraderConfig",
        "GraderContext", "GraderStatus", "LocalBackend", "MultiTurnMode",
        "RolloutCompleteRequest", "RolloutErrorCategory", "RolloutInitRequest", "RolloutInitResponse",
        "RolloutSample")},
    "context.SampleSource": __import__("osmosis_ai.rollout.context", fromlist=["x"]).SampleSource,
    "types.RolloutStatus": rollout_types.RolloutStatus,
    "context.RolloutContext": __import__("osmosis_ai.rollout.context", fromlist=["x"]).RolloutContext,
    "OsmosisAgent": openai_agents.OsmosisAgent,
    "OsmosisMemorySession": openai_agents.OsmosisMemorySession,
    "ControllerAuth": auth.ControllerAuth,
    "ConcurrencyLimiter": concurrency.ConcurrencyLimiter,
    "ValidationError": ValidationError,
}
for label, cls in served.items():
    case(f"to_import_path({label})", lambda cls=cls: to_import_path(cls))

# -- validate_backend ------------------------------------------------------------------------------------------------
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, Grader  # noqa: E402
from osmosis_ai.rollout.validator import validate_backend  # noqa: E402


class W(AgentWorkflow):
    async def run(self, ctx: Any) -> None:
        pass


class SyncW(AgentWorkflow):
    def run(self, ctx: Any) -> None:  # type: ignore[override]
        pass


class BadInit(AgentWorkflow):
    def __init__(self, config: Any = None) -> None:
        raise RuntimeError("nope")

    async def run(self, ctx: Any) -> None:
        pass


class G(Grader):
    async def grade(self, ctx: Any) -> None:
        pass


class SyncG(Grader):
    def grade(self, ctx: Any) -> None:  # type: ignore[override]
        pass


class BadG(Grader):
    def __init__(self, config: Any = None) -> None:
        raise ValueError("grader config missing")

    async def grade(self, ctx: Any) -> None:
        pass


def verdict(*args: Any) -> list[Any]:
    result = validate_backend(*args)
    return [result.valid, [[e.code, e.message, e.field] for e in result.errors],
            [[e.code, e.message, e.field] for e in result.warnings]]


for label, args in {
    "ok": (W, None, G), "no grader": (W, None), "sync": (SyncW, None, SyncG), "init failure": (BadInit, None, G),
    "grader init failure": (W, None, BadG), "not classes": (int, None, int), "bases": (AgentWorkflow, None, Grader),
    "long name": (W, AgentWorkflowConfig(name="x" * 300), G), "blank name": (W, AgentWorkflowConfig(name="  "), G),
}.items():
    case(f"validate_backend({label})", lambda args=args: verdict(*args))

# -- copy_artifact_tree ------------------------------------------------------------------------------------------------
from osmosis_ai.rollout.utils.file_artifacts import artifact_tree_state, copy_artifact_tree  # noqa: E402


def tree(root: Path) -> dict[str, str]:
    listing: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink():
            listing[relative] = "link"
        elif path.is_dir():
            listing[relative] = "dir"
        else:
            listing[relative] = "file:" + path.read_text()
    return listing


def scenario(name: str) -> tuple[Path, Path]:
    base = TMP / name
    (base / "src").mkdir(parents=True)
    (base / "root").mkdir()
    return base / "src", base / "root"


def run_copy(name: str, prepare: Any, dest: str = "dest", **kwargs: Any) -> Any:
    source, root = scenario(name)
    extra = prepare(source, root) or {}
    copied = copy_artifact_tree(source, root / dest, destination_root=root, **{**kwargs, **extra})
    return {"copied": copied, "tree": tree(root)}


def file_replaces_dir(source: Path, root: Path) -> None:
    (source / "x").write_text("new file")
    (root / "dest" / "x" / "old").mkdir(parents=True)


def dir_replaces_file(source: Path, root: Path) -> None:
    (source / "x").mkdir()
    (source / "x" / "inner").write_text("inner")
    (root / "dest").mkdir()
    (root / "dest" / "x").write_text("old file")


def destination_is_link(source: Path, root: Path) -> None:
    (source / "a").write_text("a")
    (root / "elsewhere").mkdir()
    os.symlink(root / "elsewhere", root / "dest")


def link_on_the_way(source: Path, root: Path) -> None:
    (source / "a").write_text("a")
    (root / "real").mkdir()
    os.symlink(root / "real", root / "via")


def file_on_the_way(source: Path, root: Path) -> None:
    (source / "a").write_text("a")
    (root / "via").write_text("a file")


def baseline_and_merge(source: Path, root: Path) -> dict[str, Any]:
    (source / "sub").mkdir()
    (source / "sub" / "kept").write_text("same")
    (source / "link").symlink_to(source / "sub" / "kept")
    baseline = artifact_tree_state(source)
    (source / "new").write_text("new")
    (root / "dest").mkdir()
    (root / "dest" / "only-here").write_text("stays")
    return {"baseline": baseline}


def replace(source: Path, root: Path) -> None:
    (source / "a").write_text("a")
    (root / "dest").mkdir()
    (root / "dest" / "stale").write_text("goes")


case("copy_artifact_tree(file replaces dir)", lambda: run_copy("f2d", file_replaces_dir))
case("copy_artifact_tree(dir replaces file)", lambda: run_copy("d2f", dir_replaces_file))
case("copy_artifact_tree(destination is a link)", lambda: run_copy("dlink", destination_is_link))
case("copy_artifact_tree(link on the way)", lambda: run_copy("via", link_on_the_way, dest="via/dest"))
case("copy_artifact_tree(file on the way)", lambda: run_copy("viaf", file_on_the_way, dest="via/dest"))
case("copy_artifact_tree(baseline, additive)", lambda: run_copy("base", baseline_and_merge))
case("copy_artifact_tree(replace_destination)", lambda: run_copy("repl", replace, replace_destination=True))
case("copy_artifact_tree(destination is the root)", lambda: run_copy("rootdest", replace, dest="."))
case("copy_artifact_tree(outside the root)", lambda: run_copy("outside", replace, dest="../out"))
case("copy_artifact_tree(missing source)", lambda: copy_artifact_tree(TMP / "none", TMP / "r" / "d",
                                                                         destination_root=TMP / "r"))
case("artifact_tree_state(keys)", lambda: sorted(artifact_tree_state(TMP / "base" / "src")))

# -- post_json_with_retry ---------------------------------------------------------------------------------------------
from osmosis_ai.rollout.utils.http import post_json_with_retry  # noqa: E402


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        status = int(self.path.strip("/") or 200)
        body = json.dumps({"status": status}).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
PORT[0] = server.server_address[1]
threading.Thread(target=server.serve_forever, daemon=True).start()


async def post(path: str, **kwargs: Any) -> Any:
    response = await post_json_with_retry(url=f"http://127.0.0.1:{PORT[0]}/{path}", payload={"a": 1},
                                          base_delay_seconds=0.01, **kwargs)
    return [response.status_code, response.json()]


for label, path, kwargs in (
    ("200", "200", {}), ("201", "201", {}), ("404", "404", {}), ("400", "400", {}),
    ("503 exhausted", "503", {"max_attempts": 2}), ("429 exhausted", "429", {"max_attempts": 1}),
    ("max_attempts=0", "200", {"max_attempts": 0}), ("max_attempts=-1", "200", {"max_attempts": -1}),
):
    case(f"post_json_with_retry({label})", lambda path=path, kwargs=kwargs: post(path, **kwargs))
case("post_json_with_retry(refused)", lambda: post_json_with_retry(url="http://127.0.0.1:1/x", payload={},
                                                                      max_attempts=1))

server.shutdown()
print(json.dumps(OUT, sort_keys=True))
