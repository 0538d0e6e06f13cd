"""The plan layer of osmosis-migrate: plain dataclasses saying what will be done to which node, or why not (the TODO
texts come from here), computed from the read-only facts of :mod:`codemods.analysis`; the emitters of
:mod:`codemods.emit` write exactly what a plan says."""
