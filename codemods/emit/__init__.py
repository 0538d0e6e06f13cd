"""The emit layer of osmosis-migrate: libcst transformers that write exactly what a plan (:mod:`codemods.plan`)
says — a driver's body converted, the module assembled, the serving lines, the TODO markers, the imports."""
