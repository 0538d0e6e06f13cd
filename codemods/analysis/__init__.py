"""What the plain-framework rules know about a program before they change it: read-only facts.

The ``strands-agent`` and ``openai-agent`` rules read before they write (analysis → plan → emit,
:mod:`codemods.plain`): these modules build a small model of the program, the planner (:mod:`codemods.plan`) decides
from it what may change and why not, and the emitters (:mod:`codemods.emit`) write only what the plan says;
everything else becomes a TODO naming the precise reason.

* :mod:`codemods.analysis.module` — the top level of one module, indexed once: its module-level agents, models,
  sessions, string constants, functions, classes, the ``__main__`` block, who binds and who uses each name;
* :mod:`codemods.analysis.drivers` — the *drivers* (a top-level function, the module-level script code or the
  ``__main__`` block that runs an agent), and which functions are helpers or factories;
* :mod:`codemods.analysis.body` — the facts of one driver's body: where each agent is built, its run sites, where
  each run's input comes from, loops and ``gather``, interactive and process-level code;
* :mod:`codemods.analysis.code_facts` — read-only questions the planner asks about pieces of code (who calls a
  name and how, what an expression reads, where an input comes from);
* :mod:`codemods.analysis.names` — how often code refers to names, per statement, cheaply;
* :mod:`codemods.analysis.repo` — facts that cross files (a module-level agent, class or helper defined in one
  module and used in another), from libcst's scope analysis (:mod:`codemods.analysis.qualified`) over the files a
  question needs, found by the cheap import scans of :mod:`codemods.analysis.import_graph`.

Nothing here changes code; nothing here imports runtime code.
"""
