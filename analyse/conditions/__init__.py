"""Conditions: under which condition a piece of code runs, and whether an Ascend NPU host meets it.

One room for both modes (script and thirdparty):

* :mod:`~analyse.conditions.model` -- conditions are values: boolean expressions over atoms
  (``importable(lib)``, device predicates, options with their default, environment variables,
  versions, platforms), three-valued evaluation in the two NPU-host scenarios (with and without
  ``transfer_to_npu``), and their text (never inverted);
* :mod:`~analyse.conditions.build` -- an ``if`` test to a condition, by data flow (flags through
  variables, availability helpers summarised from their bodies, options by their defaults);
* :mod:`~analyse.conditions.options` -- where options and their defaults come from (argparse,
  click, typer, dataclass / attrs / pydantic / ``TrainingArguments`` fields, configuration files).

:mod:`analyse.guards` walks from a node to its module and combines the conditions of every
enclosing branch, early exit and ``try``; the verdict (:mod:`analyse.report`), reach
(:mod:`analyse.reach`) and the library mode (:mod:`analyse.callgraph`) read the result.

Depends on astroid only; nothing analysed is imported or evaluated.
"""

from analyse.conditions.build import build, classify, handler_catches_import
from analyse.conditions.model import (CONDITIONAL, NO_TRANSFER, OFF, ON, SCENARIOS, TRANSFER, Atom, Cond, conj,
                                      evaluate, neg, on_path, render, words)
from analyse.conditions.options import configure
from analyse.conditions.options import generation as options_generation
from analyse.conditions.options import module_flags as model_module_flags

__all__ = ["build", "classify", "options_generation", "model_module_flags", "handler_catches_import", "CONDITIONAL", "NO_TRANSFER", "OFF", "ON", "SCENARIOS",
           "TRANSFER", "Atom", "Cond", "conj", "evaluate", "neg", "on_path", "render", "words", "configure"]
