"""@osmosis_reward / @osmosis_rubric rules (spec §2.19), incl. the string-annotation fix."""

import asyncio
import textwrap
from typing import Optional

import pytest

from osmosis_compat.legacy.rewards import osmosis_reward, osmosis_rubric


def compile_module(source: str) -> dict:
    namespace: dict = {"__name__": "reward_module"}
    exec(compile(textwrap.dedent(source), "<reward_module>", "exec"), namespace)
    return namespace


# --- osmosis_reward: classic signatures ------------------------------------------------------------------------


@pytest.mark.parametrize("extra_annotation", [dict, Optional[dict], dict | None])
def test_classic_reward_accepted(extra_annotation):
    def reward(solution_str: str, ground_truth: str, extra_info: extra_annotation = None) -> float:
        return float(solution_str == ground_truth)

    wrapped = osmosis_reward(reward)
    assert wrapped("a", "a") == 1.0
    assert wrapped.__name__ == "reward"


def test_classic_reward_under_future_annotations_works():
    ns = compile_module(
        """
        from __future__ import annotations
        from typing import Optional
        from osmosis_compat.legacy.rewards import osmosis_reward

        @osmosis_reward
        def score(solution_str: str, ground_truth: str, extra_info: Optional[dict] = None) -> float:
            \"\"\"doc\"\"\"
            return 1.0 if solution_str.strip() == ground_truth else 0.0

        @osmosis_reward
        def score_pipe(solution_str: str, ground_truth: str, extra_info: dict | None = None) -> float:
            return 0.5
        """
    )
    assert ns["score"](" 4", "4") == 1.0
    assert ns["score"].__doc__ == "doc"
    assert ns["score_pipe"]("x", "y") == 0.5


def test_string_annotations_are_still_checked():
    def bad(solution_str: "int", ground_truth: "str", extra_info: "dict" = None):
        return 0.0

    with pytest.raises(TypeError, match="^First parameter 'solution_str' must be annotated as str, got <class 'int'>$"):
        osmosis_reward(bad)

    def unresolvable(solution_str: "NoSuchType", ground_truth: str, extra_info: dict = None):  # noqa: F821
        return 0.0

    with pytest.raises(TypeError, match="got NoSuchType"):
        osmosis_reward(unresolvable)


def test_classic_reward_signature_errors():
    def too_few(solution_str: str, ground_truth: str):
        return 0.0

    with pytest.raises(TypeError, match="^Function too_few must have at least 3 parameters, got 2$"):
        osmosis_reward(too_few)

    def unannotated(solution_str, ground_truth: str, extra_info: dict = None):
        return 0.0

    with pytest.raises(TypeError, match="First parameter 'solution_str' must be annotated as str"):
        osmosis_reward(unannotated)

    def wrong_second(solution_str: str, truth: str, extra_info: dict = None):
        return 0.0

    with pytest.raises(TypeError, match="Second parameter must be named 'ground_truth', got 'truth'"):
        osmosis_reward(wrong_second)

    def second_type(solution_str: str, ground_truth: int, extra_info: dict = None):
        return 0.0

    with pytest.raises(TypeError, match="Second parameter 'ground_truth' must be annotated as str"):
        osmosis_reward(second_type)

    def wrong_third(solution_str: str, ground_truth: str, info: dict = None):
        return 0.0

    with pytest.raises(TypeError, match="Third parameter must be named 'extra_info', got 'info'"):
        osmosis_reward(wrong_third)

    def third_type(solution_str: str, ground_truth: str, extra_info: list = None):
        return 0.0

    with pytest.raises(TypeError, match="Third parameter 'extra_info' must be annotated as dict"):
        osmosis_reward(third_type)

    def no_default(solution_str: str, ground_truth: str, extra_info: dict):
        return 0.0

    with pytest.raises(TypeError, match="Third parameter 'extra_info' must have a default value"):
        osmosis_reward(no_default)


def test_classic_reward_must_return_float():
    @osmosis_reward
    def returns_int(solution_str: str, ground_truth: str, extra_info: dict = None):
        return 1

    with pytest.raises(TypeError, match="must return a float, got int"):
        returns_int("a", "b")


def test_non_classic_reward_unchecked():
    @osmosis_reward
    def anything(messages, ground_truth):
        return 1

    assert anything([], "x") == 1


def test_data_source_dropped_unless_accepted():
    @osmosis_reward
    def plain(solution_str: str, ground_truth: str, extra_info: dict = None) -> float:
        return 1.0

    assert plain("a", "b", extra_info={}, data_source="gsm8k") == 1.0

    @osmosis_reward
    def wants(solution_str: str, ground_truth: str, extra_info: dict = None, data_source=None) -> float:
        return 1.0 if data_source == "gsm8k" else 0.0

    assert wants("a", "b", data_source="gsm8k") == 1.0

    @osmosis_reward
    def kwargs(solution_str: str, ground_truth: str, extra_info: dict = None, **kw) -> float:
        return float(len(kw))

    assert kwargs("a", "b", data_source="x") == 1.0

    @osmosis_reward
    def other(text, **kw):
        return kw

    assert other("t", data_source="d") == {"data_source": "d"}

    @osmosis_reward
    def other_plain(text):
        return text

    assert other_plain("t", data_source="d") == "t"


async def test_async_reward_wrapper():
    @osmosis_reward
    async def reward(solution_str: str, ground_truth: str, extra_info: dict = None) -> float:
        await asyncio.sleep(0)
        return 0.25

    assert asyncio.iscoroutinefunction(reward)
    assert await reward("a", "b", data_source="x") == 0.25

    @osmosis_reward
    async def bad(solution_str: str, ground_truth: str, extra_info: dict = None):
        return 1

    with pytest.raises(TypeError, match="must return a float"):
        await bad("a", "b")


# --- osmosis_rubric ----------------------------------------------------------------------------------------------


def test_rubric_classic_with_string_annotations():
    ns = compile_module(
        """
        from __future__ import annotations
        from typing import Optional
        from osmosis_compat.legacy.rewards import osmosis_rubric

        @osmosis_rubric
        def judge(solution_str: str, ground_truth: Optional[str], extra_info: dict) -> float:
            return 0.75
        """
    )
    judge = ns["judge"]
    assert judge("a", None, {}) == 0.75
    assert judge("a", "b", extra_info={}, data_source="x") == 0.75
    with pytest.raises(TypeError, match="'solution_str' must be a string"):
        judge(1, "b", {})
    with pytest.raises(TypeError, match="'ground_truth' must be a string or None"):
        judge("a", 2, {})
    with pytest.raises(TypeError, match="'extra_info' must be provided"):
        judge("a", "b")


def test_rubric_signature_errors():
    def too_few(solution_str: str, ground_truth: str):
        return 0.0

    with pytest.raises(TypeError, match="at least 3 parameters"):
        osmosis_rubric(too_few)

    def default_solution(solution_str: str = "", ground_truth: str = None, extra_info=None):
        return 0.0

    with pytest.raises(TypeError, match="'solution_str' cannot have a default"):
        osmosis_rubric(default_solution)

    def gt_type(solution_str: str, ground_truth: int, extra_info=None):
        return 0.0

    with pytest.raises(TypeError, match="'ground_truth' must be annotated as str or Optional"):
        osmosis_rubric(gt_type)

    def gt_default(solution_str: str, ground_truth: str = "x", extra_info=None):
        return 0.0

    with pytest.raises(TypeError, match="'ground_truth' cannot have a default"):
        osmosis_rubric(gt_default)

    def third(solution_str: str, ground_truth: str, info=None):
        return 0.0

    with pytest.raises(TypeError, match="Third parameter must be named 'extra_info'"):
        osmosis_rubric(third)


async def test_rubric_return_check_and_async():
    @osmosis_rubric
    def returns_int(solution_str: str, ground_truth: str, extra_info):
        return 1

    with pytest.raises(TypeError, match="must return a float"):
        returns_int("a", "b", {})

    @osmosis_rubric
    async def judge(solution_str: str, ground_truth: str | None, extra_info) -> float:
        return 1.0

    assert await judge("a", None, {}) == 1.0

    @osmosis_rubric
    def free(prompt):
        return "anything"

    assert free("p") == "anything"
