"""``osmosis-migrate --verify``: run the original and the migrated file on sample prompts and compare.

Both sides talk to osmosis-compat's fake controllers, answered by the deterministic ``ScriptedPolicy`` (it solves
arithmetic prompts with the tools it is offered), so a difference in the final answer, the reward or the number of
model calls is a difference the migration made — not noise. Nothing leaves 127.0.0.1.

What is compared, per migrated piece:

* a **legacy loop** (``legacy-loop`` edits OM301/OM302): the original module's ``app`` (or ``create_app(<loop>)``)
  driven over the legacy protocol by ``FakeTrainGate`` with ``metadata={"ground_truth": …}``, versus the migrated
  module's ``app`` (or ``LocalBackend(workflow=…, grader=…)`` built from its classes) driven over the workflow
  protocol by ``FakeWorkflowController`` with ``label=…``: the loop's reward versus the grader's, and the final
  assistant text.
* a **plain Strands / OpenAI Agents function** that became a workflow (OM103/OM203 edits, ``solve`` →
  ``SolveWorkflow``): the original function called natively with the prompt — its model calls redirected to the fake
  controller (LiteLLM calls, the OpenAI Agents default client, ``OPENAI_BASE_URL``/``OPENAI_API_BASE``/
  ``OPENAI_API_KEY``) — versus the workflow served with ``LocalBackend`` and driven over the workflow protocol: the
  final answer (the policy's reply to the run's last model call), the model calls, and the ground-truth reward of
  that answer (the graders' rule: the label in the final answer; the migrated file has no grader of its own).

Anything else (a function that takes no prompt or more than one argument, no workflow or grader found, a module
that cannot be imported) is reported *not verified* with the reason. This needs osmosis-compat installed (it is
imported here, lazily, only when ``--verify`` is given: the codemods themselves import no runtime code) and the
frameworks the file uses. Verification imports and runs the user's code, as serving it would.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Iterator, Optional, Sequence

SAME = "same"
DIFFERENT = "different"
NOT_VERIFIED = "not-verified"
ERROR = "error"

#: (prompt, ground truth): right labels, a multi-step chain, and a wrong label (a 0 reward must be kept too).
SAMPLE_CASES: tuple[tuple[str, str], ...] = (
    ("What is 2 + 3?", "5"),
    ("Compute (2 + 3) * 4", "20"),
    ("What is 6 * 7?", "41"),
)

_WRAPPED = re.compile(r"`(\w+)` wrapped as (\w+)\(AgentWorkflow\)")
_counter = itertools.count()


@dataclass
class RunOutcome:
    """One side of one case: the final answer, the reward, the model calls made, or the error."""

    answer: Optional[str] = None
    reward: Optional[float] = None
    model_calls: int = 0
    error: Optional[str] = None

    def key(self) -> tuple:
        return (self.answer, self.reward, self.model_calls, self.error is None)


@dataclass
class CaseOutcome:
    target: str
    prompt: str
    label: str
    original: RunOutcome
    migrated: RunOutcome

    @property
    def same(self) -> bool:
        return self.original.error is None and self.original.key() == self.migrated.key()


@dataclass
class FileVerification:
    """Verdict for one file: ``same`` / ``different`` / ``not-verified`` (``reason`` says why) / ``error``."""

    path: str
    status: str
    reason: Optional[str] = None
    cases: list[CaseOutcome] = field(default_factory=list)

    def describe(self) -> list[str]:
        """Human-readable lines for the CLI summary."""
        if self.status == SAME:
            targets = sorted({c.target for c in self.cases})
            return [f"  {self.path}: same behaviour on {len(self.cases)} prompt(s) ({', '.join(targets)})"]
        if self.status in (NOT_VERIFIED, ERROR):
            return [f"  {self.path}: {self.status}: {self.reason}"]
        lines = [f"  {self.path}: DIFFERENT"]
        for c in self.cases:
            if not c.same:
                lines.append(f"    {c.target} on {c.prompt!r} (label {c.label!r}): original {_show(c.original)}; "
                             f"migrated {_show(c.migrated)}")
        return lines


def _show(run: RunOutcome) -> str:
    if run.error is not None:
        return f"error {run.error}"
    return f"reward {run.reward}, answer {run.answer!r}, {run.model_calls} model call(s)"


def verify_migrations(
    items: Sequence[tuple[str, str, str, Sequence[Any]]], cases: Sequence[tuple[str, str]] = SAMPLE_CASES
) -> list[FileVerification]:
    """Verify each ``(path, original_text, migrated_text, edits)``; see the module docstring.

    Raises ``ImportError`` (with what to install) when osmosis-compat is not importable.
    """
    try:
        import osmosis_compat.testing  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(f"--verify needs osmosis-compat installed ({exc})") from None
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    async def run_all() -> list[FileVerification]:  # one event loop: clients pooled by the runtime stay valid
        return [await _verify_one(path, old, new, edits, cases) for path, old, new, edits in items]

    with _quiet():
        return asyncio.run(run_all())


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The user's code and the servers log every call at INFO and libraries warn on import: the report is what
    matters here (warnings stay visible when PYTHONWARNINGS is set, as with osmosis-compat's CLI)."""
    import logging
    import warnings

    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    with warnings.catch_warnings():
        if not os.environ.get("PYTHONWARNINGS"):
            warnings.simplefilter("ignore")
        try:
            yield
        finally:
            logging.disable(previous)


async def _verify_one(path: str, old: str, new: str, edits: Sequence[Any], cases) -> FileVerification:
    codes = {e.code for e in edits}
    wrapped = [m.groups() for e in edits if e.code in ("OM103", "OM203") for m in [_WRAPPED.search(e.message)] if m]
    if not (codes & {"OM301", "OM302"}) and not wrapped:
        return FileVerification(path, NOT_VERIFIED, "no loop or agent function was migrated (imports only)")
    with tempfile.TemporaryDirectory(prefix="osmosis-migrate-verify-") as tmp, _on_path(os.path.dirname(os.path.abspath(path))):
        try:
            if codes & {"OM301", "OM302"}:
                outcomes = await _verify_legacy(old, new, Path(tmp), cases)
            else:
                outcomes = []
                for function, workflow in wrapped:
                    outcomes += await _verify_function(old, new, function, workflow, Path(tmp), cases)
        except _NotVerifiable as exc:
            return FileVerification(path, NOT_VERIFIED, str(exc))
        except Exception as exc:  # the user's code: report, never crash the run
            return FileVerification(path, ERROR, f"{type(exc).__name__}: {exc}")
    status = SAME if all(c.same for c in outcomes) else DIFFERENT
    return FileVerification(path, status, cases=outcomes)


class _NotVerifiable(Exception):
    pass


@contextlib.contextmanager
def _on_path(directory: str) -> Iterator[None]:
    """The file's directory on ``sys.path`` (its sibling imports work, as when it is served from there)."""
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(directory)


def _load(text: str, tmp: Path, side: str):
    name = f"_osmosis_migrate_verify_{side}_{next(_counter)}"
    file = tmp / f"{name}.py"
    file.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise _NotVerifiable(f"the {side} module does not import: {type(exc).__name__}: {exc}") from exc
    return module


def _defined_here(module, base: type) -> list[type]:
    return [v for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, base) and v is not base and v.__module__ == module.__name__]


# ------------------------------------------------------------------------------------------ legacy loops

async def _verify_legacy(old: str, new: str, tmp: Path, cases) -> list[CaseOutcome]:
    from osmosis_compat.legacy import RolloutAgentLoop
    from osmosis_compat.server.legacy_app import create_app
    from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app
    from osmosis_compat.workflow.messages import last_assistant_text

    original = _load(old, tmp, "original")
    app = getattr(original, "app", None)
    if app is None:
        loops = [v for v in vars(original).values() if isinstance(v, RolloutAgentLoop)]
        classes = _defined_here(original, RolloutAgentLoop)
        if loops:
            app = create_app(loops[0])
        elif len(classes) == 1:
            try:
                app = create_app(classes[0]())
            except TypeError as exc:
                raise _NotVerifiable(f"cannot build {classes[0].__name__}(): {exc}") from None
        else:
            raise _NotVerifiable("the original module has no `app` and not exactly one loop class")
    legacy: list[RunOutcome] = []
    with FakeTrainGate(ScriptedPolicy()).serve() as gate, serve_app(app) as server:
        for i, (prompt, label) in enumerate(cases):
            record = await gate.run_rollout(
                server.url, rollout_id=f"verify-{i}", messages=[{"role": "user", "content": prompt}],
                metadata={"ground_truth": label},
            )
            calls = len(gate.chat_requests(f"verify-{i}"))
            if record.status != "COMPLETED":
                legacy.append(RunOutcome(model_calls=calls, error=str((record.callback or {}).get("error_message"))))
            else:
                legacy.append(RunOutcome(last_assistant_text(record.final_messages).strip(), record.reward, calls))

    migrated = _load(new, tmp, "migrated")
    samples = await _drive_workflow(_workflow_app(migrated, tmp, None), cases, grade=True)
    return [CaseOutcome("loop", p, label, o, m) for (p, label), o, m in zip(cases, legacy, samples)]


def _workflow_app(module, tmp: Path, workflow_name: Optional[str]):
    """The migrated module's rollout server: its own ``app`` when it has one, else one built from its classes."""
    from osmosis_compat.server.workflow_app import create_rollout_server
    from osmosis_compat.workflow import AgentWorkflow, Grader, LocalBackend

    backend = getattr(module, "backend", None)
    if workflow_name is None and getattr(module, "app", None) is not None:
        if isinstance(backend, LocalBackend):
            backend.artifact_root = tmp / "artifacts"
        return module.app
    if workflow_name is not None:
        workflow = getattr(module, workflow_name, None)
        if not (isinstance(workflow, type) and issubclass(workflow, AgentWorkflow)):
            raise _NotVerifiable(f"the migrated module has no workflow class {workflow_name}")
        grader = None  # the plain script had no grader: the verifier scores the final answer itself
    else:
        workflows, graders = _defined_here(module, AgentWorkflow), _defined_here(module, Grader)
        if len(workflows) != 1 or len(graders) != 1:
            raise _NotVerifiable(f"the migrated module has no `app` and {len(workflows)} workflow / "
                                 f"{len(graders)} grader classes (need one of each)")
        workflow, grader = workflows[0], graders[0]
    backend = LocalBackend(workflow=workflow, grader=grader)
    backend.artifact_root = tmp / "artifacts"
    return create_rollout_server(backend=backend, configure_logging=False)


async def _drive_workflow(app, cases, *, grade: bool) -> list[RunOutcome]:
    from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy, serve_app
    from osmosis_compat.workflow.messages import last_assistant_text

    policy = ScriptedPolicy()
    outcomes: list[RunOutcome] = []
    with FakeWorkflowController(policy).serve() as controller, serve_app(app) as server:
        for i, (prompt, label) in enumerate(cases):
            rollout_id = f"verify-{next(_counter)}"
            record = await controller.run_rollout(
                server.url, rollout_id=rollout_id, initial_messages=[{"role": "user", "content": prompt}],
                label=label, grade=grade,
            )
            calls = controller.chat_requests(rollout_id)
            status = (record.completion or {}).get("status")
            if status != "success":
                outcomes.append(RunOutcome(model_calls=len(calls), error=str((record.completion or {}).get("err_message"))))
            elif grade:
                rewards = list(record.rewards.values())
                samples = list(((record.grader or {}).get("samples") or {}).values())
                if len(rewards) != 1 or len(samples) != 1:
                    outcomes.append(RunOutcome(model_calls=len(calls), error=f"{len(samples)} samples graded"))
                else:
                    answer = last_assistant_text(samples[0].get("messages")).strip()
                    outcomes.append(RunOutcome(answer, rewards[0], len(calls)))
            else:
                answer = _final_answer(policy, calls)
                outcomes.append(RunOutcome(answer, _reward(answer, label), len(calls)))
    return outcomes


# ------------------------------------------------------------------------------------------ plain functions

def _reward(answer: Optional[str], label: str) -> float:
    """The graders' rule (examples/modern): 1.0 when the ground truth is in the final answer."""
    return 1.0 if answer and label.strip() in answer else 0.0


def _final_answer(policy, calls) -> Optional[str]:
    """The policy's reply to the last model call of a run: the answer the run ended with (the policy is
    deterministic, so asking again gives the reply that was sent)."""
    if not calls:
        return None
    body = calls[-1].body or {}
    message = policy.reply(body.get("messages") or [], body.get("tools") or [])["choices"][0]["message"]
    return (message.get("content") or "").strip() or None


async def _verify_function(old: str, new: str, function: str, workflow: str, tmp: Path, cases) -> list[CaseOutcome]:
    from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy

    policy = ScriptedPolicy()
    native: list[RunOutcome] = []
    with FakeWorkflowController(policy).serve() as controller:
        async with _redirect_models(controller.chat_completions_url, controller.controller_api_key):
            original = _load(old, tmp, "original")
            fn = getattr(original, function, None)
            if not callable(fn):
                raise _NotVerifiable(f"the original module has no function {function}")
            params = [p for p in inspect.signature(fn).parameters.values()
                      if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(params) != 1:
                raise _NotVerifiable(f"`{function}` takes {len(params)} required arguments; only a function of the "
                                     "prompt can be run on sample prompts")
            for prompt, label in cases:
                before = len(controller.chat_requests())
                try:
                    if inspect.iscoroutinefunction(fn):
                        await fn(prompt)
                    else:
                        await asyncio.to_thread(fn, prompt)
                except Exception as exc:
                    calls = controller.chat_requests()[before:]
                    native.append(RunOutcome(model_calls=len(calls), error=f"{type(exc).__name__}: {exc}"))
                    continue
                calls = controller.chat_requests()[before:]
                answer = _final_answer(policy, calls)
                native.append(RunOutcome(answer, _reward(answer, label), len(calls)))
    migrated = _load(new, tmp, "migrated")
    runs = await _drive_workflow(_workflow_app(migrated, tmp, workflow), cases, grade=False)
    return [CaseOutcome(function, p, label, o, m) for (p, label), o, m in zip(cases, native, runs)]


@contextlib.asynccontextmanager
async def _redirect_models(base_url: str, api_key: str) -> AsyncIterator[None]:
    """Send the original code's model calls to the fake controller, whatever endpoint it names (a verification
    must never reach a real model): LiteLLM calls (Strands ``LiteLLMModel``, Agents ``LitellmModel``) get the
    controller's ``api_base``/``api_key`` and an ``openai/`` model; the OpenAI Agents SDK's default client is the
    controller over chat completions; the OpenAI environment variables point at it. All restored afterwards."""
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_BASE": base_url, "OPENAI_API_KEY": api_key}
    saved_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    undo: list = []
    closing: list = []
    try:
        if "litellm" in sys.modules or importlib.util.find_spec("litellm") is not None:
            import litellm

            def redirected(call):
                def wrapper(*args, **kwargs):
                    model = str(kwargs.get("model", args[0] if args else "model"))
                    kwargs.update(model="openai/" + model.rsplit("/", 1)[-1], api_base=base_url, api_key=api_key)
                    kwargs.pop("base_url", None)
                    return call(*args[1:], **kwargs)
                return wrapper

            for name in ("acompletion", "completion"):
                original = getattr(litellm, name)
                setattr(litellm, name, redirected(original))
                undo.append(lambda n=name, o=original: setattr(litellm, n, o))
        if importlib.util.find_spec("agents") is not None:
            from agents import set_default_openai_api, set_default_openai_client
            from agents.models import _openai_shared
            from openai import AsyncOpenAI

            client, responses = _openai_shared.get_default_openai_client(), _openai_shared.get_use_responses_by_default()
            ours = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
            set_default_openai_client(ours, use_for_tracing=False)
            set_default_openai_api("chat_completions")
            undo.append(lambda: (_openai_shared.set_default_openai_client(client),
                                 _openai_shared.set_use_responses_by_default(responses)))
            closing.append(ours)
        yield
    finally:
        for step in reversed(undo):
            step()
        for ours in closing:  # in this loop: a client collected later would try to close in a closed loop
            await ours.close()
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
