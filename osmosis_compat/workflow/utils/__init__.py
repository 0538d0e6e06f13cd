"""Small helpers of the workflow API, one module per upstream ``osmosis_ai.rollout.utils.*`` module."""
