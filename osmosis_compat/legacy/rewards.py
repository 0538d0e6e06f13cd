"""``@osmosis_reward`` and ``@osmosis_rubric`` (spec/legacy-protocol.md §2.19, rules of v0.2.16/17).

Both decorators recognise the *classic* signature by a first parameter named ``solution_str`` and then check
it at decoration time; any other signature is passed through unchecked. A ``data_source`` keyword is dropped
before the call unless the function declares ``data_source`` or ``**kwargs``. Async functions get an async
wrapper.

Deliberate difference from upstream: ``@osmosis_reward`` resolves string annotations (``from __future__ import
annotations``) before checking them; upstream compared the raw annotation with ``is str`` and so rejected every
classic reward function in such a module ("… must be annotated as str, got str").
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import typing
from typing import Any, Callable, Optional, TypeVar, Union

__all__ = ["osmosis_reward", "osmosis_rubric"]

F = TypeVar("F", bound=Callable[..., Any])

_EMPTY = inspect.Parameter.empty


def _resolved_annotations(func: Callable[..., Any]) -> dict[str, Any]:
    """Parameter annotations with string annotations evaluated in the function's module namespace.

    A string that cannot be evaluated (a name that does not exist) is kept as the string.
    """
    raw = dict(getattr(func, "__annotations__", {}) or {})
    try:
        return typing.get_type_hints(func)
    except Exception:
        pass
    namespace = dict(getattr(func, "__globals__", {}) or {})
    module = sys.modules.get(getattr(func, "__module__", "") or "")
    if module is not None:
        namespace = {**vars(module), **namespace}
    resolved: dict[str, Any] = {}
    for name, annotation in raw.items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # noqa: S307 - annotations are the author's own code
            except Exception:
                pass
        resolved[name] = annotation
    return resolved


def _annotation(param: inspect.Parameter, hints: dict[str, Any]) -> Any:
    # Only string annotations are resolved; real objects are checked as written (as upstream).
    if isinstance(param.annotation, str):
        return hints.get(param.name, param.annotation)
    return param.annotation


def _union_args(annotation: Any) -> Optional[tuple[Any, ...]]:
    origin = typing.get_origin(annotation)
    if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return typing.get_args(annotation)
    return None


def _is_optional_of(annotation: Any, target: type) -> bool:
    """``target``, ``target | None`` or ``Optional[target]``."""
    if annotation is target:
        return True
    args = _union_args(annotation)
    return args is not None and set(args) == {target, type(None)}


def _keyword_filter(func: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    params = inspect.signature(func).parameters.values()
    accepts = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params) or any(
        p.name == "data_source" for p in params
    )

    def filter_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
        if not accepts:
            kwargs.pop("data_source", None)
        return kwargs

    return filter_kwargs


def _wrap(func: Callable[..., Any], before: Callable[..., None], after: Callable[[Any], Any]) -> Callable[..., Any]:
    filter_kwargs = _keyword_filter(func)
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs = filter_kwargs(kwargs)
            before(*args, **kwargs)
            return after(await func(*args, **kwargs))

        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs = filter_kwargs(kwargs)
        before(*args, **kwargs)
        return after(func(*args, **kwargs))

    return wrapper


def _no_check(*args: Any, **kwargs: Any) -> None:
    return None


def _identity(result: Any) -> Any:
    return result


def _float_result(func: Callable[..., Any]) -> Callable[[Any], Any]:
    def check(result: Any) -> Any:
        if not isinstance(result, float):
            raise TypeError(f"Function {func.__name__} must return a float, got {type(result).__name__}")
        return result

    return check


def osmosis_reward(func: F) -> F:
    """Mark ``func`` as a reward function.

    Classic form ``(solution_str: str, ground_truth: str, extra_info: dict = None, ...)`` is checked at
    decoration time (``TypeError`` naming the problem) and must return a ``float`` (an ``int`` raises
    ``TypeError`` at call time). Other signatures are not checked. ``data_source`` is dropped unless accepted.
    """
    params = list(inspect.signature(func).parameters.values())
    classic = bool(params) and params[0].name == "solution_str"
    if not classic:
        return _wrap(func, _no_check, _identity)  # type: ignore[return-value]
    if len(params) < 3:
        raise TypeError(f"Function {func.__name__} must have at least 3 parameters, got {len(params)}")
    hints = _resolved_annotations(func)
    solution, ground_truth, extra_info = params[:3]
    solution_type = _annotation(solution, hints)
    if solution_type is not str:
        raise TypeError(f"First parameter 'solution_str' must be annotated as str, got {solution_type}")
    if ground_truth.name != "ground_truth":
        raise TypeError(f"Second parameter must be named 'ground_truth', got '{ground_truth.name}'")
    ground_truth_type = _annotation(ground_truth, hints)
    if ground_truth_type is not str:
        raise TypeError(f"Second parameter 'ground_truth' must be annotated as str, got {ground_truth_type}")
    if extra_info.name != "extra_info":
        raise TypeError(f"Third parameter must be named 'extra_info', got '{extra_info.name}'")
    extra_info_type = _annotation(extra_info, hints)
    if not _is_optional_of(extra_info_type, dict):
        raise TypeError(
            f"Third parameter 'extra_info' must be annotated as dict, dict | None or Optional[dict], "
            f"got {extra_info_type}"
        )
    if extra_info.default is _EMPTY:
        raise TypeError("Third parameter 'extra_info' must have a default value")
    return _wrap(func, _no_check, _float_result(func))  # type: ignore[return-value]


def osmosis_rubric(func: F) -> F:
    """Mark ``func`` as a rubric scoring function.

    Classic form ``(solution_str: str, ground_truth: str | None, extra_info, ...)``: ``solution_str`` and
    ``ground_truth`` without defaults, string annotations resolved. At call time ``solution_str`` must be a
    ``str``, ``ground_truth`` a ``str`` or ``None``, ``extra_info`` supplied, and the result a ``float``.
    Other signatures are not checked. ``data_source`` is dropped unless accepted.
    """
    signature = inspect.signature(func)
    params = list(signature.parameters.values())
    classic = bool(params) and params[0].name == "solution_str"
    if not classic:
        return _wrap(func, _no_check, _identity)  # type: ignore[return-value]
    if len(params) < 3:
        raise TypeError(f"Function {func.__name__} must have at least 3 parameters, got {len(params)}")
    hints = _resolved_annotations(func)
    solution, ground_truth, extra_info = params[:3]
    if _annotation(solution, hints) is not str:
        raise TypeError(
            f"First parameter 'solution_str' must be annotated as str, got {_annotation(solution, hints)}"
        )
    if solution.default is not _EMPTY:
        raise TypeError("First parameter 'solution_str' cannot have a default value")
    if ground_truth.name != "ground_truth":
        raise TypeError(f"Second parameter must be named 'ground_truth', got '{ground_truth.name}'")
    if not _is_optional_of(_annotation(ground_truth, hints), str):
        raise TypeError(
            "Second parameter 'ground_truth' must be annotated as str or Optional[str], "
            f"got {_annotation(ground_truth, hints)}"
        )
    if ground_truth.default is not _EMPTY:
        raise TypeError("Second parameter 'ground_truth' cannot have a default value")
    if extra_info.name != "extra_info":
        raise TypeError(f"Third parameter must be named 'extra_info', got '{extra_info.name}'")

    def check_arguments(*args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind_partial(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"Invalid arguments for {func.__name__}: {exc}") from exc
        arguments = bound.arguments
        if "solution_str" not in arguments or not isinstance(arguments["solution_str"], str):
            raise TypeError("'solution_str' must be a string")
        if "ground_truth" not in arguments:
            raise TypeError("'ground_truth' must be provided (str or None)")
        if arguments["ground_truth"] is not None and not isinstance(arguments["ground_truth"], str):
            raise TypeError("'ground_truth' must be a string or None")
        if "extra_info" not in arguments:
            raise TypeError("'extra_info' must be provided")

    return _wrap(func, check_arguments, _float_result(func))  # type: ignore[return-value]
