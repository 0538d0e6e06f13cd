"""osmosis-migrate: libcst codemods from legacy loops and plain Strands / OpenAI Agents code to the Osmosis
integrations. Rules live in :mod:`codemods.rules`; the rule interface in :mod:`codemods.base`; the driver
(``migrate_source``, ``migrate_paths``) in :mod:`codemods.driver`; the CLI in :mod:`codemods.cli`.

Importing this package is cheap: libcst is imported only by the modules that transform code.
"""
