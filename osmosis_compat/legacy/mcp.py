"""``osmosis_ai.rollout.mcp``: MCP agent loops are not part of osmosis-compat.

Importing this module raises ``ImportError`` with the reason and the way out.
"""

raise ImportError(
    "osmosis_ai.rollout.mcp: MCP agent loops (MCPAgentLoop, load_mcp_server, `osmosis test/eval --mcp`) are not "
    "part of osmosis-compat. Wrap the MCP server's tools in a RolloutAgentLoop (declare them in get_tools and "
    "call them from run) or in an AgentWorkflow."
)
