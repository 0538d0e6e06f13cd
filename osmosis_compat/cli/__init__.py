"""Command-line tools: ``osmosis-compat`` (serve, validate, eval, demo); ``osmosis-migrate`` lives in codemods."""
