"""The contexts a workflow and a grader run in (upstream ``context.py``, spec workflow-api §2.4–§2.6, §6).

- :class:`AgentWorkflowContext` — what ``AgentWorkflow.run(ctx)`` gets: prompt, config, metadata, artifacts dir.
- :class:`GraderContext` — what ``Grader.grade(ctx)`` gets: label, the samples, metadata, artifacts dir.
- :class:`RolloutContext` — the ambient per-rollout state (endpoint, key, rollout id, sample sources), found
  through :func:`get_rollout_context`; integrations register their :class:`SampleSource` on it.

0.3 aliases live next to the 0.2.31 names (``GraderContext.sample`` / ``set_reward``,
``RolloutContext.set_sample_source`` / ``get_sample``, ``SampleSource.get_sample()`` without a name); the
0.2.18 ``register_agent`` is kept too. ``docs/workflow-api.md`` lists which era each name comes from.
"""

from __future__ import annotations

import inspect
import os
from abc import ABC, abstractmethod
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from osmosis_compat.workflow.types.sample import RolloutSample

if TYPE_CHECKING:
    from osmosis_compat.workflow.types.config import AgentWorkflowConfig

__all__ = [
    "API_KEY_ENV",
    "AgentWorkflowContext",
    "CHAT_COMPLETIONS_URL_ENV",
    "GraderContext",
    "HarborAgentWorkflowContext",
    "ROLLOUT_ID_ENV",
    "RolloutContext",
    "SampleSource",
    "get_rollout_context",
    "rollout_contextvar",
]

CHAT_COMPLETIONS_URL_ENV = "OSMOSIS_CHAT_COMPLETIONS_URL"
API_KEY_ENV = "OSMOSIS_API_KEY"
ROLLOUT_ID_ENV = "OSMOSIS_ROLLOUT_ID"

TConfig = TypeVar("TConfig", bound="AgentWorkflowConfig")


class SampleSource(ABC):
    """Something that can produce a rollout's sample once ``run()`` has returned (collected lazily).

    0.2.x sources implement ``async get_sample(self, name)`` and stamp ``name`` into ``RolloutSample.id``;
    0.3-style sources implement ``async get_sample(self)``. :class:`RolloutContext` calls either shape.
    """

    @abstractmethod
    async def get_sample(self, name: str | None = None) -> RolloutSample:
        """Return the sample registered under ``name``."""
        raise NotImplementedError


class _MessagesAttributeSource(SampleSource):
    """0.2.18 ``register_agent`` compatibility: the sample is the object's ``.messages`` list."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    async def get_sample(self, name: str | None = None) -> RolloutSample:
        return RolloutSample(id=name or "", messages=list(getattr(self.agent, "messages", None) or []))


def _accepts_name(method: Any) -> bool:
    """Whether a source's ``get_sample`` takes the sample name (0.2.x) or nothing (0.3)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # builtins/C callables: assume the 0.2.x shape
        return True
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in parameters
    )


async def collect_sample(name: str, source: SampleSource) -> RolloutSample:
    """Await ``source.get_sample`` in whichever shape it has and check it returned a :class:`RolloutSample`; a
    sample without an ``id`` (0.3 removed it) takes the registration name."""
    method = source.get_sample
    sample = await (method(name) if _accepts_name(method) else method())
    if not isinstance(sample, RolloutSample):
        raise TypeError(
            f"Sample source {name!r} ({type(source).__name__}) returned {type(sample).__name__}, "
            "expected a RolloutSample"
        )
    if sample.id is None:
        sample.id = name
    return sample


@dataclass
class RolloutContext:
    """Ambient state of one rollout: where model calls go, with which key, and which sample sources exist.

    Empty ``chat_completions_url`` / ``api_key`` / ``rollout_id`` fall back to the ``OSMOSIS_CHAT_COMPLETIONS_URL``
    / ``OSMOSIS_API_KEY`` / ``OSMOSIS_ROLLOUT_ID`` environment variables. ``with ctx:`` makes it the current
    context (:func:`get_rollout_context`); leaving the block sets the current context to ``None`` (upstream
    behaviour: it does not restore an outer value).
    """

    chat_completions_url: str = ""
    api_key: str | None = None
    rollout_id: str = ""
    sample_sources: dict[str, SampleSource] = field(default_factory=dict)
    progress: Any = None
    """0.3.8: the server's status tracker (``set_status`` reports ``grading`` through it); ``None`` outside a
    polling rollout."""
    process_id: str | None = None
    """0.3.8: the serving process's id (as ``GET /health`` reports it)."""
    preview_path: Path | None = None
    """0.3.8 field, kept for attribute compatibility (osmosis-compat publishes no file previews)."""
    preview_enabled: bool = False
    """0.3.8 field, kept for attribute compatibility."""
    routing_headers: bool = True
    """osmosis-compat: send the 0.2.x ``x-rollout-id`` / ``x-sample-id`` headers with model calls. ``False`` for
    0.3.8 rollouts, whose identity is in the per-rollout ``chat_completions_url`` (0.3.8 sends none)."""

    def __post_init__(self) -> None:
        if not self.chat_completions_url:
            self.chat_completions_url = os.environ.get(CHAT_COMPLETIONS_URL_ENV, "")
        if not self.api_key:
            self.api_key = os.environ.get(API_KEY_ENV) or None
        if not self.rollout_id:
            self.rollout_id = os.environ.get(ROLLOUT_ID_ENV, "")

    async def set_status(self, status: str) -> None:
        """0.3.8: report the rollout's life-cycle status (e.g. ``"grading"``) to the polling server (no-op without
        one)."""
        setter = getattr(self.progress, "set_status", None)
        if setter is not None:
            await setter(str(status))

    def __enter__(self) -> RolloutContext:
        rollout_contextvar.set(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        rollout_contextvar.set(None)

    # -- registration (0.2.20+) ---------------------------------------------------------------------------

    def register_sample_source(self, name: str, source: SampleSource) -> None:
        """Register ``source`` as the producer of sample ``name``; ``ValueError`` if the name is taken."""
        if name in self.sample_sources:
            raise ValueError(
                f"Sample source {name!r} already exists in this rollout. Give each agent/session a unique name "
                "(e.g. OsmosisStrandsAgent(name=...), OsmosisMemorySession(name=...))."
            )
        self.sample_sources[name] = source

    async def get_samples(self) -> dict[str, RolloutSample]:
        """Collect every registered source, in registration order: ``{name: sample}``."""
        return {name: await collect_sample(name, source) for name, source in list(self.sample_sources.items())}

    # -- 0.2.18–0.2.19 -------------------------------------------------------------------------------------

    def register_agent(self, sample_id: str, agent: Any) -> None:
        """0.2.18 name: the sample is ``agent.messages`` at collection time. Re-registering an id replaces it
        (0.2.18 overwrote silently)."""
        self.sample_sources[sample_id] = _MessagesAttributeSource(agent)

    @property
    def registered_agents(self) -> dict[str, Any]:
        """0.2.18 view: ``{sample_id: agent}`` for what :meth:`register_agent` registered."""
        return {
            name: source.agent
            for name, source in self.sample_sources.items()
            if isinstance(source, _MessagesAttributeSource)
        }

    # -- 0.3 aliases -----------------------------------------------------------------------------------------

    @property
    def default_sample_name(self) -> str:
        """Name under which 0.3-style single samples are registered: the rollout id (or ``"sample"``)."""
        return self.rollout_id or "sample"

    def set_sample_source(self, source: SampleSource) -> None:
        """0.3 name: the rollout's one sample source. ``ValueError`` if a source is already registered."""
        if self.sample_sources:
            raise ValueError(
                "This rollout already has a sample source "
                f"({', '.join(repr(n) for n in self.sample_sources)}); 0.3-style set_sample_source() allows one "
                "per rollout. Use register_sample_source(name, source) for several named samples."
            )
        self.sample_sources[self.default_sample_name] = source

    @property
    def sample_source(self) -> SampleSource | None:
        """0.3 view: the one registered source (``None`` if none; ``ValueError`` if there are several)."""
        if not self.sample_sources:
            return None
        return self.sample_sources[_only_name(self.sample_sources, "RolloutContext.sample_source")]

    async def get_sample(self) -> RolloutSample | None:
        """0.3 name: the one sample (``None`` without a source; ``ValueError`` if there are several)."""
        if not self.sample_sources:
            return None
        name = _only_name(self.sample_sources, "RolloutContext.get_sample()")
        return await collect_sample(name, self.sample_sources[name])


rollout_contextvar: ContextVar[RolloutContext | None] = ContextVar("rollout_contextvar", default=None)


def get_rollout_context() -> RolloutContext | None:
    """The :class:`RolloutContext` of the rollout running in this task, or ``None`` outside one."""
    return rollout_contextvar.get()


def _only_name(samples: dict[str, Any], what: str) -> str:
    if len(samples) == 1:
        return next(iter(samples))
    raise ValueError(
        f"{what} is the 0.3 single-sample view, but this rollout has {len(samples)} samples "
        f"({', '.join(repr(n) for n in samples)}). Use ctx.samples / ctx.set_sample_reward(sample_id, reward)."
    )


@dataclass(init=False)
class AgentWorkflowContext(Generic[TConfig]):
    """What ``AgentWorkflow.run(ctx)`` receives.

    ``prompt`` — the request's ``initial_messages`` unchanged; ``config`` — a deep copy of the backend's
    workflow config (or ``None``); ``metadata`` — the request's per-row metadata (or ``None``);
    ``artifacts_dir`` — ``~/.osmosis/<rollout_id>/artifacts`` (or ``None`` if it could not be created).
    """

    prompt: list[dict[str, Any]]
    config: TConfig | None
    metadata: dict[str, Any] | None
    artifacts_dir: Path | None

    def __init__(
        self,
        prompt: list[dict[str, Any]],
        config: TConfig | None = None,
        metadata: dict[str, Any] | None = None,
        artifacts_dir: Path | None = None,
    ) -> None:
        self.prompt = prompt
        self.config = config
        self.metadata = metadata
        self.artifacts_dir = artifacts_dir


@dataclass(init=False)
class HarborAgentWorkflowContext(AgentWorkflowContext[TConfig]):
    """Context for workflows run by upstream's Harbor container backend (kept for imports; ``environment`` is
    the Harbor environment object)."""

    environment: Any

    def __init__(
        self,
        prompt: list[dict[str, Any]],
        config: TConfig | None,
        environment: Any = None,
        metadata: dict[str, Any] | None = None,
        artifacts_dir: Path | None = None,
    ) -> None:
        super().__init__(prompt, config, metadata, artifacts_dir)
        self.environment = environment


@dataclass
class GraderContext:
    """What ``Grader.grade(ctx)`` receives: ``label`` (the row's ground truth), ``samples`` (the very objects the
    workflow phase produced, keyed by sample id), ``metadata`` and ``artifacts_dir`` (as the workflow saw them).

    0.2.x graders call :meth:`set_sample_reward`; 0.3-style graders use :attr:`sample` / :meth:`set_reward`,
    which work when the rollout has exactly one sample.
    """

    label: str | None = None
    samples: dict[str, RolloutSample] = field(default_factory=dict)
    project_path: str | None = None
    metadata: dict[str, Any] | None = None
    artifacts_dir: Path | None = None

    def get_samples(self) -> dict[str, RolloutSample]:
        """The samples dict itself (not a copy)."""
        return self.samples

    def set_sample_reward(self, sample_id: str, reward: float) -> None:
        """Set the reward of sample ``sample_id`` in place; ``ValueError("Sample <id> not found")`` if unknown."""
        if sample_id not in self.samples:
            raise ValueError(f"Sample {sample_id} not found")
        self.samples[sample_id].reward = reward

    # -- 0.2.18 name -----------------------------------------------------------------------------------------

    @property
    def workspace_path(self) -> str | None:
        """0.2.18 name of :attr:`project_path`."""
        return self.project_path

    # -- 0.3 aliases -----------------------------------------------------------------------------------------

    @property
    def sample(self) -> RolloutSample | None:
        """0.3 single-sample view: ``None`` without samples, the only sample, or ``ValueError`` if several."""
        if not self.samples:
            return None
        return self.samples[_only_name(self.samples, "GraderContext.sample")]

    def set_reward(self, reward: float) -> None:
        """0.3 name: set the reward of the rollout's one sample (``ValueError`` if it has none or several)."""
        if not self.samples:
            raise ValueError("GraderContext.set_reward(): this rollout has no sample to reward")
        self.set_sample_reward(_only_name(self.samples, "GraderContext.set_reward()"), reward)
