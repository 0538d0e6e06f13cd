"""Run a program the way it is really entered, once per case, in a fresh module each time.

A ``script`` entry executes the text as ``__main__`` (``sys.argv`` and stdin carry the prompt); a ``call`` entry
executes it as an imported module and calls the entry function with the prompt, an event or a request object.
A case ends normally when the program returns, exits with 0, or reads past the end of its input after having run
(a REPL fed one prompt); a per-case timer ends a program that waits for ever.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import io
import json
import random
import linecache
import signal
import sys
import types
from typing import Any, Iterator

from codemods.verify.entries import AS_EVENT, AS_OBJECT, AS_TEXT, EVENT, EXPR, PROMPT, SCRIPT, Entry


class CaseTimeout(Exception):
    """The program did not finish its case in time."""


@contextlib.contextmanager
def case_timer(seconds: float) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the main thread after ``seconds`` (a program waiting on input, a server…)."""
    def expire(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"did not finish within {seconds:g} s on the sample prompt")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def load_module(text: str, path: str, name: str) -> types.ModuleType:
    """Execute ``text`` as a fresh module ``name`` whose ``__file__`` is ``path`` (relative reads resolve as for
    the user's file); registered in ``sys.modules`` while it runs (dataclasses and pydantic look it up)."""
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)  # tracebacks show this text
    module = types.ModuleType(name)
    module.__file__ = path
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules[name] = module
    exec(compile(text, path, "exec"), module.__dict__)  # noqa: S102 - running the user's program is the point
    return module


def run_case(text: str, path: str, entry: Entry, prompt: str, timeout: float) -> Any:
    """Run the program once on ``prompt``; returns the entry's return value; raises what the program raised
    (``SystemExit(0)`` and end of input after the program ran are a normal end, returned as ``None``)."""
    stdin = "\n".join([prompt, *entry.stdin_after]) + "\n"
    saved = sys.stdin, sys.argv, sys.modules.get("__main__")
    sys.stdin = io.StringIO(stdin)
    random.seed(0)  # a program that picks at random picks the same on both sides
    sys.argv = [path, *(_fill(a, entry, prompt) for a in entry.argv)]
    try:
        with case_timer(timeout), contextlib.redirect_stdout(io.StringIO()):
            try:
                if entry.kind == SCRIPT:
                    load_module(text, path, "__main__")
                    return None
                module = load_module(text, path, _module_name(path))
                if entry.kind == EXPR:
                    return _settle(_evaluate(module, entry.function or "", prompt))
                return _call(module, entry, prompt)
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    raise
                return None
            except EOFError:
                if sys.stdin.tell() == 0:  # nothing was read: the program wanted input it was not given
                    raise
                return None
    finally:
        sys.stdin, sys.argv = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]


def _module_name(path: str) -> str:
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    return stem if stem.isidentifier() else "_verify_program"


def _fill(arg: str, entry: Entry, prompt: str) -> str:
    if arg == PROMPT:
        return prompt
    if arg == EVENT:
        return json.dumps({k: prompt for k in entry.keys} or {"prompt": prompt})
    return arg


def _call(module: types.ModuleType, entry: Entry, prompt: str) -> Any:
    fn = getattr(module, entry.function or "", None)
    if fn is None:
        raise LookupError(f"the program has no `{entry.function}`")
    fn = getattr(fn, "__wrapped__", fn) if not callable(fn) else fn
    if type(fn).__module__.split(".")[0] == "click" and callable(getattr(fn, "callback", None)):
        fn = fn.callback  # a click command: its function, as the workflow runs its body (not the command line)
    args: list[Any] = []
    if entry.argument == AS_TEXT:
        args.append(prompt)
    elif entry.argument == AS_EVENT:
        document = json.dumps({k: prompt for k in entry.json_keys})  # a JSON body the function decodes
        args.append({k: document if k == entry.json_key else prompt for k in entry.keys})
    elif entry.argument == AS_OBJECT:
        args.append(_request_object(module, entry, prompt))
    args += [None] * entry.extra_arguments
    result = fn(*args)
    return _settle(result)


def _evaluate(module: types.ModuleType, expression: str, prompt: str) -> Any:
    """``expression`` (a library module's entry) in the module's namespace, ``prompt`` bound to the case's prompt;
    ``Runner`` is the Agents SDK's when the module does not import it (the lifted run names it)."""
    namespace = dict(vars(module))
    if "Runner" in expression and "Runner" not in namespace:
        from agents import Runner

        namespace["Runner"] = Runner
    namespace["prompt"] = prompt
    return eval(compile(expression, "<entry>", "eval"), namespace)  # noqa: S307 - the migrator's own expression


def _settle(result: Any) -> Any:
    """Await a coroutine, drain a (async) generator (a streaming endpoint) — also the body of a streaming response
    the entry returns (``StreamingResponse(gen())``: a client would read it): the run is what the entry does."""
    if inspect.iscoroutine(result):
        async def finish() -> Any:
            value = await result
            body = getattr(value, "body_iterator", None)
            if inspect.isasyncgen(body):
                return [item async for item in body]
            return value
        return asyncio.run(finish())
    if inspect.isasyncgen(result):
        async def drain() -> list[Any]:
            return [item async for item in result]
        return asyncio.run(drain())
    if inspect.isgenerator(result):
        return list(result)
    return result


def _request_object(module: types.ModuleType, entry: Entry, prompt: str) -> Any:
    cls = getattr(module, entry.annotation or "", None)
    values = {k: prompt for k in entry.keys}
    construct = getattr(cls, "model_construct", None)
    if construct is not None:
        return construct(**values)
    return types.SimpleNamespace(**values)
