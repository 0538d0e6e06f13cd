"""What the plain-framework rules know about a program before they change it.

The ``strands-agent`` and ``openai-agent`` rules read before they write (DESIGN.md, "Conventions"): these modules
build a small model of the program, and the emitter (:mod:`codemods.wrap`) only writes what the model proves safe;
everything else becomes a TODO naming the precise reason.

* :mod:`codemods.analysis.program` — one module: its module-level agents, models, sessions, string constants,
  factories and functions, who uses each name, and for every *driver* (a function, module-level script code or an
  ``if __name__ == "__main__":`` block that runs an agent) the facts of its body: where each agent is built, its run
  sites, where each run's input comes from (the program's external input, a template around it, a previous agent's
  output, a carried-over conversation, a resumed ``RunState``, an image…), loops and ``gather``, interactive and
  process-level code.
* :mod:`codemods.analysis.repo` — facts that cross files (a module-level agent or ``@tool`` defined in one module
  and used in another), from libcst's scope analysis (:mod:`codemods.analysis.qualified`) over the files a question
  needs, found by the cheap import scans of :mod:`codemods.analysis.import_graph`.

Nothing here changes code; nothing here imports runtime code.
"""
