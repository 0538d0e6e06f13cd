"""The verification child's walls: nothing leaves 127.0.0.1, no process is started, AWS is never called, and the
modules the program needs that the venv lacks are stubbed — each attempt recorded with what it was, so a verdict
can say precisely why a program could not be run ("the original needs AWS credentials for
``boto3.client('dynamodb')``").

Runs only inside the child process (``python -m codemods.verify.child``), which exits when the run is over:
nothing here is undone.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass, field
from typing import Any

#: Never stubbed: the runtime under test and the frameworks whose calls are compared.
PROTECTED = frozenset({"osmosis_ai", "osmosis_compat", "strands", "agents", "litellm", "openai", "codemods"})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0", ""})
#: A stubbed callable named like a read from the user (``input_with_fallback``, ``get_user_input``) reads stdin,
#: as the migrator reads such calls as the program's input.
_READS_USER = re.compile(r"^(input_\w+|\w+_input|get_input|ask_user\w*|prompt_user\w*)$")
_CONFIRMS = re.compile(r"^(confirm\w*|\w+_confirm)$")
_NO_ANSWER = object()
_PREDICATE = re.compile(r"^(is|has|should|can|use)_\w+$")


class Blocked(RuntimeError):
    """The program reached for something outside the sandbox (the message names it)."""


@dataclass
class Walls:
    """What the program reached for (``external``) and which missing modules were stubbed (``stubs``)."""

    external: list[str] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)
    program: str = ""

    def block(self, what: str) -> Blocked:
        if what not in self.external:
            self.external.append(what)
        return Blocked(f"osmosis-migrate --verify: blocked: {what}")


def install(walls: Walls) -> None:
    """Put the walls up in this process (environment, sockets, processes, AWS); :func:`stub_missing` adds the
    stub importer once the runtime is imported (its own optional imports must fail as they do)."""
    dead = "http://127.0.0.1:9"
    os.environ.update({
        "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "ALL_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "AWS_ACCESS_KEY_ID": "verify", "AWS_SECRET_ACCESS_KEY": "verify", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "OTEL_SDK_DISABLED": "true", "PYTHONUNBUFFERED": "1",
    })
    _fake_aws_profile()
    _guard_sockets(walls)
    _guard_processes(walls)
    _guard_aws(walls)


def _fake_aws_profile() -> None:
    """A `default` AWS profile with the fake keys, in files of this run: a program that opens it at import
    (`boto3.Session(profile_name="default")`) runs as on a developer's machine, and the user's own
    `~/.aws` files are never read (AWS itself is walled off by :func:`_guard_aws`)."""
    folder = tempfile.mkdtemp(prefix="osmosis-verify-aws-")
    atexit.register(shutil.rmtree, folder, True)
    keys = "aws_access_key_id = verify\naws_secret_access_key = verify\n"
    with open(os.path.join(folder, "credentials"), "w") as fh:
        fh.write("[default]\n" + keys)
    with open(os.path.join(folder, "config"), "w") as fh:
        fh.write("[default]\nregion = us-east-1\n")
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(folder, "credentials")
    os.environ["AWS_CONFIG_FILE"] = os.path.join(folder, "config")
    os.environ.pop("AWS_PROFILE", None)


def placeholder_environment(walls: Walls, text: str) -> None:
    """Environment variables the program reads without a default (``os.getenv("X")``, ``os.environ["X"]``) and the
    environment lacks get a placeholder — API keys, endpoints, model names: every model call is redirected anyway —
    each named in the verdict (``env X``)."""
    import ast

    names: list[str] = []
    for node in ast.walk(ast.parse(text)):
        key = None
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            func = ast.unparse(node.func)
            if func in ("os.getenv", "getenv", "os.environ.get", "environ.get") and isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("os.environ", "environ"):
            key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        if isinstance(key, str) and key not in os.environ and key not in names:
            names.append(key)
    for name in names:
        os.environ[name] = "verify-placeholder"
        walls.stubs.append(f"env {name}")


def stub_missing(walls: Walls, program: str) -> None:
    """Stub the modules that ``program`` (a file path) imports and the venv lacks."""
    walls.program = program
    sys.meta_path.append(_StubFinder(walls))


def _guard_sockets(walls: Walls) -> None:
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def allowed(address: Any) -> bool:
        return not isinstance(address, tuple) or str(address[0]) in _LOOPBACK or str(address[0]).startswith("127.")

    def guarded_connect(self, address):  # noqa: ANN001 - socket's own signature
        if not allowed(address):
            raise walls.block(f"the network ({address[0]}:{address[1]})")
        return connect(self, address)

    def guarded_getaddrinfo(host, *args, **kwargs):  # noqa: ANN001
        if host is not None and not allowed((host if isinstance(host, str) else host.decode(), 0)):
            raise walls.block(f"the network ({host if isinstance(host, str) else host.decode()})")
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_getaddrinfo  # type: ignore[assignment]


def _guard_processes(walls: Walls) -> None:
    """Processes the program (or a library on its behalf: an MCP stdio server) starts are refused — they would run
    outside these walls; those the standard library starts for itself (``platform`` asking ``uname``) are not."""
    popen_init = subprocess.Popen.__init__

    def refused(command: Any) -> Blocked:
        shown = " ".join(map(str, command)) if isinstance(command, (list, tuple)) else str(command)
        return walls.block(f"a process `{shown[:80]}`")

    def guarded_init(self: Any, *args: Any, **kwargs: Any) -> None:
        if not _started_by_stdlib():
            raise refused(args[0] if args else kwargs.get("args"))
        popen_init(self, *args, **kwargs)

    def guarded_system(command: Any) -> int:
        raise refused(command)

    subprocess.Popen.__init__ = guarded_init  # type: ignore[method-assign]
    os.system = guarded_system  # type: ignore[assignment]


def _started_by_stdlib() -> bool:
    """Whether the first caller outside ``subprocess`` / ``asyncio`` is a standard-library module."""
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.split(".")[0] not in ("subprocess", "asyncio") and name != __name__:
            filename = frame.f_code.co_filename
            return filename.startswith(stdlib) and "site-packages" not in filename
        frame = frame.f_back
    return False


def _guard_aws(walls: Walls) -> None:
    try:
        from botocore.client import BaseClient
    except ImportError:
        return

    def make_api_call(self, operation_name, api_params):  # noqa: ANN001 - botocore's signature
        service = self.meta.service_model.service_name
        raise walls.block(f"AWS credentials for boto3.client({service!r}) ({operation_name})")

    BaseClient._make_api_call = make_api_call  # type: ignore[method-assign]


# ------------------------------------------------------------------------------------------------ stubs


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: a module no other finder found becomes a permissive stub — only when the program's
    own file imports it (a library's optional import fails as it would), only when its top-level package is absent
    altogether (a missing submodule of an installed package is a real error), never for :data:`PROTECTED` ones."""

    def __init__(self, walls: Walls) -> None:
        self.walls = walls

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        top = fullname.split(".")[0]
        if top in PROTECTED or top in sys.stdlib_module_names:
            return None
        parent = sys.modules.get(fullname.rpartition(".")[0]) if "." in fullname else None
        if parent is not None and not isinstance(parent, _StubModule):
            # a missing submodule of an installed package is a real error, unless the "package" is only a
            # namespace directory that happens to share the name (an `examples/` folder somewhere on sys.path)
            if getattr(parent, "__file__", None) is not None or not self._imported_by_program():
                return None
        elif parent is None and not self._imported_by_program():
            return None
        if top not in self.walls.stubs:
            self.walls.stubs.append(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def _imported_by_program(self) -> bool:
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename == self.walls.program

    def create_module(self, spec: Any) -> types.ModuleType:
        return _StubModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []  # type: ignore[attr-defined]  # a package: its submodules are stubs too


class _StubModule(types.ModuleType):
    __all__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub(f"{self.__name__}.{name}")


class _StubBase:
    """What a class derived from a stub derives from."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub(f"{type(self).__name__}.{name}")


class Stub:
    """Anything a missing module offers: callable (a decorator returns what it decorates), awaitable, iterable
    (empty), a context manager, a base class; a callable named like a read from the user reads stdin
    (or gives the answer it declares: `default=`), one named like a check (`is_auto_mode()`) answers False."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_stub_name", name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub(f"{self._stub_name}.{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Stub):
            return args[0]
        last = self._stub_name.rsplit(".", 1)[-1]
        answer = next((kwargs[k] for k in ("default", "fallback") if k in kwargs), _NO_ANSWER)
        if answer is not _NO_ANSWER and (_READS_USER.match(last) or _CONFIRMS.match(last)):
            # a prompt that declares its answer for when nobody is there: a verification run has nobody there
            # (the migration gives the same answer: docs/migrate.md, confirmations)
            return answer
        if _READS_USER.match(last):
            return input(args[0] if args and isinstance(args[0], str) else "")
        if _PREDICATE.match(last):
            return False  # a check the missing module would answer (`is_auto_mode()`): no mode, no feature is on
        return Stub(f"{self._stub_name}()")

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (_StubBase,)

    def __iter__(self) -> Any:
        return iter(())

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        raise StopAsyncIteration

    def __await__(self) -> Any:
        return iter(())

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> bool:
        return False

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        return 0

    def __getitem__(self, key: Any) -> Any:
        return Stub(f"{self._stub_name}[{key!r}]")

    def __str__(self) -> str:
        return f"<stub {self._stub_name}>"

    __repr__ = __str__
