"""Agent-loop registry (spec §2.12)."""

import pytest

from osmosis_compat.legacy import registry
from osmosis_compat.legacy.base import RolloutAgentLoop
from osmosis_compat.legacy.exceptions import AgentLoopNotFoundError


class Loop(RolloutAgentLoop):
    name = "loop"

    def __init__(self, name="loop"):
        self.name = name

    def get_tools(self, request):
        return []

    async def run(self, ctx):
        return ctx.complete([])


@pytest.fixture(autouse=True)
def clean_registry():
    registry._registry.clear()
    yield
    registry._registry.clear()


def test_registry_class():
    reg = registry.AgentLoopRegistry()
    a, b = Loop("a"), Loop("b")
    reg.register(b)
    reg.register(a)
    assert reg.list_names() == ["b", "a"]
    assert reg.get("a") is a and reg.get("zzz") is None
    with pytest.raises(ValueError) as info:
        reg.register(Loop("a"))
    assert str(info.value) == (
        "Agent loop 'a' is already registered. Use a different name or unregister the existing one first."
    )
    assert reg.unregister("a") is True and reg.unregister("a") is False
    reg.clear()
    assert reg.list_names() == []


def test_module_functions_use_global_registry():
    loop = Loop("calc")
    registry.register_agent_loop(loop)
    assert registry.get_agent_loop("calc") is loop
    assert registry.list_agent_loops() == ["calc"]
    with pytest.raises(AgentLoopNotFoundError) as info:
        registry.get_agent_loop("missing")
    assert info.value.available == ["calc"]
    assert str(info.value) == "Agent loop 'missing' not found. Available: ['calc']"
    assert registry.unregister_agent_loop("calc") is True
    assert registry.list_agent_loops() == []
