"""osmosis-ai 0.3.8's evaluation config file (``configs/eval/<rollout>.toml``), read and checked as 0.3.8 does.

Ported from 0.3.8's ``platform/cli/shared_config.py`` and ``eval_config.py`` (MIT licence), so a file is accepted
or refused with the same messages (``tests/evaluation/test_eval_config_oracle.py`` compares them with the real
loader)::

    [experiment]               # required: rollout, entrypoint, model_path, dataset; optional branch | commit_sha
    [evaluation]               # optional: limit, n, batch_size, pass_threshold, agent_workflow_timeout_s,
                               #           grader_timeout_s (values are the platform's to check)
    [env]                      # optional: NAME = "value" (^[A-Z_][A-Z0-9_]*$, not _OSMOSIS_*)
    [secrets]                  # required: required = ["OPENAI_API_KEY", ...]
    [advanced]                 # optional, passed through

Locally, ``experiment.dataset`` (a platform dataset name) is replaced by ``--dataset-file``, and the entrypoint is
``rollouts/<rollout>/<entrypoint>`` under the workspace (the directory holding ``rollouts/``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = ["EvalConfig", "EvalConfigError", "load_eval_config"]

ENV_VAR_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
SECRET_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
COMMIT_SHA_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
RESERVED_ENV_PREFIX = "_OSMOSIS_"
_EXPECTED = {"bool_parsing": "a boolean", "bool_type": "a boolean", "dict_type": "a table",
             "float_parsing": "a number", "float_type": "a number", "int_parsing": "an integer",
             "int_type": "an integer", "string_type": "a string"}
_REQUIRED_EXPERIMENT = ("rollout", "entrypoint", "model_path", "dataset")


class EvalConfigError(ValueError):
    """The config file cannot be used; the message says every problem found (0.3.8's wording)."""


class _Experiment(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    rollout: str
    entrypoint: str
    model_path: str
    dataset: str
    branch: Optional[str] = None
    commit_sha: Optional[str] = None

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (not value or any(char.isspace() for char in value)):
            raise ValueError("must not be empty or contain whitespace")
        return value

    @field_validator("commit_sha")
    @classmethod
    def _commit_sha(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not COMMIT_SHA_RE.fullmatch(value):
            raise ValueError("must be a hexadecimal Git commit SHA (7-40 hex characters), e.g. a full 40-character "
                             f"SHA; got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_reference(self) -> "_Experiment":
        if self.branch is not None and self.commit_sha is not None:
            raise ValueError("Provide either branch or commit_sha, not both")
        return self


class _Evaluation(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    limit: Any = None
    n: Any = None
    batch_size: Any = None
    pass_threshold: Any = None
    agent_workflow_timeout_s: Any = None
    grader_timeout_s: Any = None


class _Advanced(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow")


class EvalConfig(BaseModel):
    """A parsed evaluation config: ``experiment``, ``evaluation``, ``env``, ``secrets``, ``advanced``."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    experiment: _Experiment
    evaluation: _Evaluation = Field(default_factory=_Evaluation)
    advanced: _Advanced = Field(default_factory=_Advanced)
    env: dict[str, str] = Field(default_factory=dict)
    secrets: list[str] = Field(default_factory=list)
    path: Optional[Path] = None

    def number(self, key: str, default: Any, kind: type) -> Any:
        """``[evaluation].<key>`` as ``kind`` (``default`` when unset); :class:`EvalConfigError` otherwise."""
        value = getattr(self.evaluation, key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
            raise EvalConfigError(f"[evaluation].{key} in {self.path} must be {'an integer' if kind is int else 'a number'}"
                                  f", got {value!r}")
        return kind(value)

    def entrypoint_path(self) -> Path:
        """``rollouts/<rollout>/<entrypoint>`` under the workspace: the config's directory or the nearest parent
        holding ``rollouts/``."""
        start = (self.path or Path("config.toml")).resolve().parent
        for directory in (start, *start.parents):
            if (directory / "rollouts").is_dir():
                return directory / "rollouts" / self.experiment.rollout / self.experiment.entrypoint
        return Path.cwd() / "rollouts" / self.experiment.rollout / self.experiment.entrypoint


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise EvalConfigError(f"Config file not found: {path}") from None
    except tomllib.TOMLDecodeError as e:
        raise EvalConfigError(f"Invalid TOML in {path}: {e}") from e
    except OSError as e:
        raise EvalConfigError(f"Cannot read config file {path}: {e}") from e


def _table(raw: dict[str, Any], name: str, path: Path, *, required: bool = False) -> dict[str, Any]:
    if name not in raw:
        if required:
            raise EvalConfigError(f"Missing [{name}] section in {path}")
        return {}
    if not isinstance(raw[name], dict):
        raise EvalConfigError(f"[{name}] must be a table in {path}")
    return raw[name]


def _secrets(raw: dict[str, Any], path: Path) -> list[str]:
    if "secrets" not in raw:
        raise EvalConfigError(f"Missing [secrets] section in {path}")
    value = raw["secrets"]
    if not isinstance(value, dict):
        raise EvalConfigError(f"[secrets] must be a table in {path}")
    extra = sorted(set(value) - {"required"})
    if extra:
        raise EvalConfigError(f"[secrets] in {path} only supports the 'required' field; unknown key(s): "
                              f"{', '.join(extra)}.")
    if "required" not in value:
        raise EvalConfigError(f"Missing 'required' in [secrets] section of {path}")
    required = value["required"]
    if not isinstance(required, list) or not all(isinstance(item, str) for item in required):
        raise EvalConfigError(f"'required' in [secrets] of {path} must be a list of strings, "
                              'e.g. required = ["OPENAI_API_KEY"].')
    return required


def _issue(error: Any, section: str) -> dict[str, str]:
    field_path = ".".join(str(part) for part in tuple(error.get("loc") or ()))
    key = f"{section}.{field_path}" if section and field_path else field_path or section
    kind = str(error.get("type"))
    if kind == "extra_forbidden":
        return {"key": key, "message": "Unrecognized key"}
    if kind in _EXPECTED:
        return {"key": key, "message": f"must be {_EXPECTED[kind]}, got {error.get('input')!r}"}
    return {"key": key, "message": f"is invalid: {error.get('msg', 'invalid value')}"}


def load_eval_config(path: str | Path) -> EvalConfig:
    """Read and check ``path``; :class:`EvalConfigError` with 0.3.8's message for any problem."""
    path = Path(path)
    raw = _read_toml(path)
    experiment = _table(raw, "experiment", path, required=True)
    for key in _REQUIRED_EXPERIMENT:
        if key not in experiment:
            raise EvalConfigError(f"Missing '{key}' in [experiment] section of {path}")
    evaluation = _table(raw, "evaluation", path)
    advanced = _table(raw, "advanced", path)
    env = _table(raw, "env", path)
    secrets = _secrets(raw, path)
    allowed = {"experiment", "advanced", "env", "secrets", "evaluation"}
    issues = [{"key": name, "message": "Unrecognized section"} for name in raw if name not in allowed]
    parsed: dict[str, Any] = {}
    for name, model, data in (("experiment", _Experiment, experiment), ("evaluation", _Evaluation, evaluation),
                              ("advanced", _Advanced, advanced)):
        try:
            parsed[name] = model(**data)
        except ValidationError as e:
            issues.extend(_issue(error, name) for error in e.errors())
    issues.extend({"key": f"env.{k}", "message": f"must be a string, got {v!r}"}
                  for k, v in env.items() if not isinstance(v, str))
    if issues:
        raise EvalConfigError("\n".join(["Invalid eval config:", *(f"  - {i['key']}: {i['message']}" for i in issues)]))
    for key in env:
        if not ENV_VAR_NAME_RE.match(key):
            raise EvalConfigError(f"Invalid env var name '{key}' in [env] of {path}: must match ^[A-Z_][A-Z0-9_]*$")
        if key.startswith(RESERVED_ENV_PREFIX):
            raise EvalConfigError(f"'{key}' in [env] of {path}: env var names starting with {RESERVED_ENV_PREFIX} are "
                                  "reserved by the platform; choose a different name.")
    duplicates = sorted({name for name in secrets if secrets.count(name) > 1})
    if duplicates:
        raise EvalConfigError(f"Duplicate secret name(s) in [secrets].required of {path}: {', '.join(duplicates)}. "
                              "Each name must appear once.")
    for name in secrets:
        if not SECRET_NAME_RE.match(name):
            raise EvalConfigError(f"Invalid secret name '{name}' in {path}: use uppercase letters, digits, and "
                                  "underscores, starting with a letter (e.g. MY_SECRET). Must match ^[A-Z][A-Z0-9_]*$.")
    overlap = sorted(set(env) & set(secrets))
    if overlap:
        raise EvalConfigError(f"Name(s) appear in both [env] and [secrets] of {path}: {', '.join(overlap)}. Each env "
                              "var name must come from exactly one place.")
    return EvalConfig(**parsed, env=env, secrets=secrets, path=path)
