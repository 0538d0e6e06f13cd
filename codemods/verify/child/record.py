"""What a child process reports for one case: the model calls as the model saw them, the final answer, the end.

The final answer is the policy's reply to the run's last model call (the policy is deterministic, so asking again
gives the reply that was sent) — the same rule on both sides, whatever the program printed or returned.
"""

from __future__ import annotations

import json
import os
import traceback
from typing import Any, Optional

from codemods.verify.child.sandbox import Blocked, Walls


def text_of(content: Any) -> str:
    """The text of a chat message content: a string, ``None``, or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) if isinstance(p, dict) else "" for p in content)
    return str(content)


def normalise_call(body: Any) -> dict[str, Any]:
    """``{"messages": [[role, text, [[tool, canonical arguments]…]]…], "tools": [names]}`` of one request."""
    body = body if isinstance(body, dict) else {}
    messages = []
    for m in body.get("messages") or []:
        calls = []
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or {}
            try:
                arguments = json.dumps(json.loads(fn.get("arguments") or "{}"), sort_keys=True)
            except ValueError:
                arguments = str(fn.get("arguments"))
            calls.append([fn.get("name", ""), arguments])
        messages.append([m.get("role", ""), text_of(m.get("content")).strip(), calls])
    tools = sorted(((t.get("function") or t).get("name") or "") for t in body.get("tools") or [] if isinstance(t, dict))
    return {"messages": messages, "tools": tools}


def final_answer(policy: Any, bodies: list[Any]) -> Optional[str]:
    if not bodies:
        return None
    body = bodies[-1] if isinstance(bodies[-1], dict) else {}
    params = {k: body[k] for k in ("response_format", "tool_choice") if body.get(k) is not None}
    message = policy.reply(body.get("messages") or [], body.get("tools") or [], params=params)["choices"][0]["message"]
    return (message.get("content") or "").strip() or None


def first_user_text(bodies: list[Any]) -> Optional[str]:
    """The input of the run's first model call: its last user message (earlier ones are history)."""
    for body in bodies[:1]:
        users = [m for m in (body or {}).get("messages") or [] if m.get("role") == "user"]
        if users:
            return text_of(users[-1].get("content")).strip()
    return None


def outcome(policy: Any, bodies: list[Any], side: dict[str, Any], *, reward: Optional[float] = None) -> dict[str, Any]:
    """The JSON record of one case (``RunOutcome.from_json`` reads it): the calls the endpoint saw, plus ``side``
    (:func:`side_of`: how the run ended, what it reached for, what was stubbed)."""
    record: dict[str, Any] = {
        "calls": [normalise_call(b) for b in bodies], "answer": final_answer(policy, bodies), "reward": reward,
        "first_user_text": first_user_text(bodies),
    }
    record.update(side)
    return record


def side_of(walls: Walls, *, error: Optional[BaseException] = None, error_text: Optional[str] = None,
            path: str = "") -> dict[str, Any]:
    """How a run ended (``error``/``error_kind`` when it failed) and what it reached for / needed stubbed."""
    side: dict[str, Any] = {"external": list(walls.external), "stubs": list(walls.stubs)}
    if error is not None:
        side["error"], side["error_kind"] = describe_error(error, walls, path)
    elif error_text is not None:
        side["error"], side["error_kind"] = error_text, ("external" if walls.external else "exception")
    return side


def describe_error(error: BaseException, walls: Walls, path: str) -> tuple[str, str]:
    """(text, kind) of a failure: ``external`` (something outside was reached), ``missing-file``, ``timeout``,
    ``environment`` (a variable the program requires) or ``exception`` (with the program's line that raised)."""
    chain = [error]
    while chain[-1].__cause__ is not None or chain[-1].__context__ is not None:
        nxt = chain[-1].__cause__ or chain[-1].__context__
        if nxt in chain or len(chain) > 8:
            break
        chain.append(nxt)
    if walls.external or any(isinstance(e, Blocked) for e in chain):
        return f"{type(error).__name__}: {error}", "external"
    if type(error).__name__ == "CaseTimeout":
        return str(error), "timeout"
    missing = next((e for e in chain if isinstance(e, FileNotFoundError) and e.filename), None)
    if missing is not None:
        return f"reads a file `{missing.filename}` absent here", "missing-file"
    if isinstance(error, KeyError) and _raised_from_environ(error):
        return f"needs the environment variable {error.args[0]}", "environment"
    return f"{type(error).__name__}: {error}{_where(error, path)}", "exception"


def _raised_from_environ(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.endswith(os.sep + "os.py")


def _where(error: BaseException, path: str) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    return f" (line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
