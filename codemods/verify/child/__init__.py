"""The child process of ``--verify``: runs one side of one file on every case, walled in (``sandbox``), and writes
what it saw as JSON. Started as ``python -m codemods.verify.child SPEC OUT`` by :mod:`codemods.verify.runner`;
only it imports the runtime (osmosis-compat, the frameworks)."""
