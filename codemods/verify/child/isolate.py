"""One run of the original program in a fork of the child: a fresh process per case, at the cost of a fork.

The fork inherits the imported frameworks, the model redirection and the walls; the endpoint keeps serving in the
child's thread (the fork only connects to it). The fork reports how its run ended through a pipe; a fork that
overruns its time even past its own timer (blocked in C code) is killed.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
from typing import Any, Callable

from codemods.verify.child.record import side_of
from codemods.verify.child.sandbox import Walls

_GRACE_S = 10.0


def run_forked(run: Callable[[], Any], walls: Walls, path: str, timeout: float) -> dict[str, Any]:
    """``side_of`` the run made by ``run()`` in a forked process."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fork: run, report, leave without running anyone's clean-up
        os.close(read_end)
        try:
            run()
            side = side_of(walls)
        except BaseException as exc:  # noqa: BLE001 - the program's failure is the report
            side = side_of(walls, error=exc, path=path)
        with os.fdopen(write_end, "w", encoding="utf-8") as out:
            json.dump(side, out, default=str)
        os._exit(0)
    os.close(write_end)
    data, deadline = b"", time.monotonic() + timeout + _GRACE_S
    with os.fdopen(read_end, "rb") as pipe:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    finished, _ = os.waitpid(pid, os.WNOHANG)
    if not finished:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if not data:
        return {"external": [], "stubs": list(walls.stubs), "error_kind": "timeout",
                "error": f"did not finish within {timeout + _GRACE_S:g} s on the sample prompt"}
    return json.loads(data)
