"""How the original program is really entered, read from its source (``ast`` only: nothing is imported here).

An :class:`Entry` says how a child process runs the original on a prompt:

* ``script`` — the module run as ``__main__`` (its module-level code, its ``if __name__ == "__main__":`` block
  calling ``main()`` / ``asyncio.run(main())``), the prompt on stdin for ``input()`` (a REPL then gets the word it
  stops on, else end of input) and in ``sys.argv`` for the argparse arguments it requires / ``sys.argv[1]``;
* ``expr`` — an expression of ``prompt`` evaluated in the module (a library module's entry, which the migration
  lifted: its edit names the run);
* ``call`` — a function of the module called the way its caller would: with the prompt (a helper, a route),
  an event carrying the prompt under the keys the function reads (a Lambda-style ``handler(event, context)``, a
  ``payload.get("prompt")``), or an object with the prompt in the attributes it reads (a request model).

The driver the migrator converted (from its edits) decides which: a driver the ``__main__`` block or the
module-level code calls is entered as a script, any other function is called.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Union

SCRIPT = "script"
CALL = "call"
EXPR = "expr"  # a library module's lifted entry: an expression of ``prompt`` evaluated in the module
PROMPT = "{prompt}"  # placeholder in argv: the case's prompt
EVENT = "{event}"  # placeholder in argv: a JSON event carrying the prompt under ``keys``

#: What a function's first parameter receives: the prompt text, an event mapping, or an object.
AS_TEXT, AS_EVENT, AS_OBJECT, NO_ARGUMENT = "prompt", "event", "object", "none"

_INTERACTIVE_CALLS = ("input", "raw_input", "getpass")


@dataclass(frozen=True)
class Entry:
    """How to enter the original program on a prompt (see the module docstring)."""

    kind: str
    function: Optional[str] = None
    argument: str = NO_ARGUMENT
    keys: tuple[str, ...] = ()
    # the key of ``keys`` whose value the function decodes as JSON, and the keys it reads from that document:
    # the event carries ``{json_key: json.dumps({k: prompt for k in json_keys})}`` there
    json_key: Optional[str] = None
    json_keys: tuple[str, ...] = ()
    annotation: Optional[str] = None
    extra_arguments: int = 0
    argv: tuple[str, ...] = ()
    stdin_after: tuple[str, ...] = ()
    description: str = ""

    def to_json(self) -> dict:
        return {"kind": self.kind, "function": self.function, "argument": self.argument, "keys": list(self.keys),
                "json_key": self.json_key, "json_keys": list(self.json_keys),
                "annotation": self.annotation, "extra_arguments": self.extra_arguments, "argv": list(self.argv),
                "stdin_after": list(self.stdin_after)}


def expression_entry(expression: str) -> Entry:
    """The entry of a library module the migration lifted (``Assistant().chat(prompt)``, ``Runner.run(agent,
    prompt)``): that expression, evaluated in the original module with the case's prompt as ``prompt``."""
    return Entry(EXPR, expression, AS_TEXT, description=f"`{expression}` evaluated in the original module")


def find_entry(text: str, driver: Optional[str], drivers: frozenset = frozenset()) -> Union[Entry, str]:
    """The entry that reaches ``driver`` (a top-level function name, ``"__main__"`` for the ``__main__`` block,
    ``"<module>"`` for module-level code, ``None`` when the migration named none), or the reason there is none.
    ``drivers``: every driver migrated in the file — a script that runs several of them is not the entry of one."""
    tree = ast.parse(text)
    main_block = _main_block(tree)
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    script_calls = _called_names(main_block or []) | _called_names(_module_statements(tree))
    alone = not (script_calls & (set(drivers) - {driver}))
    if driver in (None, "__main__", "<module>") or (driver in functions and driver in script_calls and alone):
        if driver is None:
            served = _served_route(tree, main_block, functions)
            if served is not None:  # the script starts a server: its route is how a prompt gets in
                return _call_entry(served)
            handler = _lambda_handler(functions) if main_block is None else None
            if handler is not None:
                return _call_entry(handler)
        return _script_entry(tree, main_block, driver, functions.get(driver or ""))
    if driver not in functions:
        return f"the migrated driver `{driver}` is not a top-level function of the original"
    return _call_entry(functions[driver])


def _main_block(tree: ast.Module) -> Optional[list[ast.stmt]]:
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            consts = {n.value for n in ast.walk(node.test) if isinstance(n, ast.Constant)}
            if "__name__" in names and "__main__" in consts:
                return node.body
    return None


def _module_statements(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements that run code (not definitions, not imports, not the ``__main__`` block)."""
    skip = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    main = _main_block(tree)
    return [n for n in tree.body if not isinstance(n, skip) and not (main is not None and getattr(n, "body", None) is main)]


def _called_names(statements: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names.add(node.func.id)
    return names


def _served_route(tree: ast.Module, main_block, functions: dict) -> Optional[ast.AST]:
    """The first route of the app the script serves (``uvicorn.run(app)``, ``app.run()``): a function decorated with
    an attribute of that app (``@app.post(...)``, ``@app.entrypoint``)."""
    apps = {t.id for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
            for t in n.targets if isinstance(t, ast.Name)}
    script = [*(main_block or []), *_module_statements(tree)]
    script += [s for name in _called_names(script) if name in functions for s in functions[name].body]
    runs = [c for s in script for c in _calls(s)]
    served = {_attr_name(c.args[0]) for c in runs if _call_name(c).endswith("uvicorn.run") and c.args}
    served |= {_call_name(c).rsplit(".", 1)[0] for c in runs if _call_name(c).endswith((".run", ".serve"))}
    served &= apps
    for fn in functions.values():
        for decorator in fn.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Attribute) and _attr_name(target.value) in served:
                return fn
    return None


def _lambda_handler(functions: dict) -> Optional[ast.AST]:
    for fn in functions.values():
        params = [a.arg for a in fn.args.args]
        if len(params) == 2 and _reads_keys(fn, params[0]):
            return fn
    return None


# ------------------------------------------------------------------------------------------------ script


def _script_entry(tree: ast.Module, main_block, driver: Optional[str], fn) -> Entry:
    argv = _argv(tree)
    # a JSON argument carries an event: the prompt goes under the keys the driver reads from its first parameter
    keys = _reads_keys(fn, fn.args.args[0].arg) if EVENT in argv and fn is not None and fn.args.args else ()
    where = ("its module-level code" if main_block is None else
             f"its `__main__` block{f' calling `{driver}`' if driver not in (None, '__main__', '<module>') else ''}")
    how = []
    if argv:
        how.append(f"argv {' '.join(argv)}")
    words = _repl_exit_words(tree)
    if _reads_stdin(tree):
        how.append("the prompt on stdin" + (f", then {words[0]!r}" if words else ""))
    description = f"the module run as __main__ ({where}{'; ' + ', '.join(how) if how else ''})"
    return Entry(SCRIPT, keys=keys, argv=argv, stdin_after=words[:1], description=description)


def _argv(tree: ast.Module) -> tuple[str, ...]:
    """``sys.argv[1:]`` for the prompt: each argparse positional and required option gets it (a JSON event when the
    program ``json.loads`` it); else ``sys.argv[1]`` read directly gets it; options with defaults are left out."""
    json_loaded = {_attr_name(c.args[0]).rsplit(".", 1)[-1] for c in _calls(tree) if _call_name(c) == "json.loads" and c.args}
    argv: list[str] = []
    found_parser = False
    for call in _calls(tree):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument" and call.args):
            continue
        first = call.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        found_parser = True
        kwargs = {k.arg: k.value for k in call.keywords if k.arg}
        dest = _dest(call, kwargs)
        loads = dest in json_loaded or _call_name_of(kwargs.get("type")) == "json.loads"
        value = EVENT if loads else PROMPT
        if not first.value.startswith("-"):
            if _const(kwargs.get("nargs")) in ("?", "*"):
                continue
            argv.append(value)
        elif _const(kwargs.get("required")) is True:
            argv += [first.value, value]
    if not found_parser and any(_is_argv_index(n) for n in ast.walk(tree)):
        argv.append(PROMPT)
    return tuple(argv)


def _dest(call: ast.Call, kwargs: dict) -> str:
    if isinstance(kwargs.get("dest"), ast.Constant):
        return kwargs["dest"].value
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    longs = [n for n in names if n.startswith("--")] or names
    return longs[0].lstrip("-").replace("-", "_")


def _is_argv_index(node: ast.AST) -> bool:
    """``sys.argv[1]``, ``sys.argv[1:]`` (joined into the prompt, usually)."""
    if not (isinstance(node, ast.Subscript) and _attr_name(node.value) == "sys.argv"):
        return False
    index = node.slice.lower if isinstance(node.slice, ast.Slice) else node.slice
    return isinstance(index, ast.Constant) and index.value == 1


def _reads_stdin(tree: ast.Module) -> bool:
    return any(_call_name(c) in _INTERACTIVE_CALLS or _call_name(c) == "sys.stdin.readline" for c in _calls(tree))


def _repl_exit_words(tree: ast.Module) -> tuple[str, ...]:
    """The words a REPL compares its input with (``if q.lower() in ("exit", "quit"): break``), in source order."""
    read_into: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call | ast.Attribute):
            inner = [c for c in ast.walk(node.value) if isinstance(c, ast.Call) and _call_name(c) in _INTERACTIVE_CALLS]
            if inner:
                read_into |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    words: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        reads = any(isinstance(n, ast.Name) and n.id in read_into for s in sides for n in ast.walk(s)) or any(
            isinstance(n, ast.Call) and _call_name(n) in _INTERACTIVE_CALLS for s in sides for n in ast.walk(s))
        if not reads:
            continue
        for side in sides:
            for n in ast.walk(side):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip().isalpha():
                    if n.value not in words:
                        words.append(n.value)
    return tuple(words)


# ------------------------------------------------------------------------------------------------ call


def _call_entry(fn) -> Entry:
    params = fn.args.args
    required = len(params) - len(fn.args.defaults)
    if required == 0:
        return Entry(CALL, fn.name, NO_ARGUMENT, description=f"`{fn.name}()` called")
    first = params[0].arg
    others = [p.arg for p in params[1:required]]  # a Lambda/AgentCore `context`…: None, as a local invocation
    keys = _reads_keys(fn, first)
    attrs = _reads_attrs(fn, first)
    annotation = _annotation_name(params[0].annotation)
    extra = len(others)
    tail = f", {', '.join('None' for _ in others)}" if others else ""
    if keys:
        json_key, json_keys = _json_body(fn, first, keys)
        shown = ", ".join(repr(k) + (f": json.dumps({{{', '.join(repr(j) + ': prompt' for j in json_keys)}}})"
                                     if k == json_key else ": prompt") for k in keys)
        return Entry(CALL, fn.name, AS_EVENT, keys=keys, json_key=json_key, json_keys=json_keys,
                     extra_arguments=extra, description=f"`{fn.name}({{{shown}}}{tail})` called")
    if attrs and annotation:
        return Entry(CALL, fn.name, AS_OBJECT, keys=attrs, annotation=annotation, extra_arguments=extra,
                     description=f"`{fn.name}({annotation}({', '.join(a + '=prompt' for a in attrs)}){tail})` called")
    return Entry(CALL, fn.name, AS_TEXT, extra_arguments=extra, description=f"`{fn.name}(prompt{tail})` called")


def _json_body(fn, param: str, keys: tuple[str, ...]) -> tuple[Optional[str], tuple[str, ...]]:
    """``("body", ("text",))`` when ``fn`` decodes ``param["body"]`` as JSON into a name (``body =
    json.loads(event.get("body") or "{}")``) and reads keys from it; else ``(None, ())``."""
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and _call_name(node.value) == "json.loads" and node.value.args):
            continue
        read = [k for k in _reads_keys(node.value.args[0], param) if k in keys]
        inner = _reads_keys(fn, node.targets[0].id)
        if len(read) == 1 and inner:
            return read[0], inner
    return None, ()


def _reads_keys(fn, param: str) -> tuple[str, ...]:
    """String keys read from ``param`` (``param["k"]``, ``param.get("k")``), in source order."""
    keys: list[str] = []
    for node in ast.walk(fn):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == param:
            key = _const(node.slice)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and isinstance(node.func.value, ast.Name) and node.func.value.id == param and node.args):
            key = _const(node.args[0])
        if isinstance(key, str) and key not in keys:
            keys.append(key)
    return tuple(keys)


def _reads_attrs(fn, param: str) -> tuple[str, ...]:
    attrs: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param:
            if node.attr not in attrs and not hasattr(str, node.attr):
                attrs.append(node.attr)
    return tuple(attrs)


def _annotation_name(annotation) -> Optional[str]:
    if isinstance(annotation, ast.Name) and annotation.id not in ("str", "dict", "Any", "object"):
        return annotation.id
    return None


# ------------------------------------------------------------------------------------------------ helpers


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _attr_name(node) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _call_name(call: ast.Call) -> str:
    return _attr_name(call.func)


def _call_name_of(node) -> str:
    return _attr_name(node) if node is not None else ""


def _const(node):
    return node.value if isinstance(node, ast.Constant) else None
