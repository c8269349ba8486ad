"""Conditions as values: boolean expressions over atoms, evaluated on an Ascend NPU host.

An :class:`Atom` is one fact the code tests (``importable(apex)``, ``torch.cuda.is_available()``,
``args.fp16`` with its default, ``$ACCELERATE_CPU_AFFINITY`` unset, ``sys.platform == "win32"``).
It knows its value in each :data:`SCENARIOS` of an NPU host (True, False, or None: it depends on a
choice the code cannot see) and its text. :class:`Not`, :class:`And`, :class:`Or` combine them;
:func:`evaluate` is three-valued (Kleene) logic; :func:`render` prints the expression with negations
pushed into the atoms, so ``not (not X)`` reads ``X`` and ``not (x is None)`` reads ``x is not None``.

Scenarios: ``transfer_to_npu`` (``from torch_npu.contrib import transfer_to_npu``: ``torch.cuda``
answers for the NPU, so ``torch.cuda.is_available()`` and ``x.is_cuda`` are true; ``x.device.type``
is still ``"npu"``) and ``no_transfer`` (the code unchanged on an NPU host: no CUDA device).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

TRANSFER, NO_TRANSFER = "transfer_to_npu", "no_transfer"
SCENARIOS = (TRANSFER, NO_TRANSFER)

# atom kinds (what the code tests); GUARD_KIND maps them to the report's guard kinds
IMPORTABLE = "importable"     # an optional library can be imported
CUDA = "cuda"                 # a CUDA device predicate (torch.cuda.is_available(), x.is_cuda)
CUDA_TYPE = "cuda-type"       # the device's type string is "cuda" (x.device.type == "cuda")
CUDA_BUILD = "cuda-build"     # torch was built with CUDA (torch.version.cuda)
NPU = "npu"                   # an NPU predicate (is_npu_available(), device.type == "npu")
OTHER_DEVICE = "other-device"  # another accelerator (torch.xpu.is_available(), torch.backends.mps)
OPTION = "option"             # a user setting, with its default when known
PARAM = "param"               # a parameter of the function that holds the branch, with its default
ENV = "env"                   # an environment variable (unset: the code's default)
VERSION = "version"
PLATFORM = "platform"
UNKNOWN = "unknown"           # something the model does not know how to value

GUARD_KIND = {IMPORTABLE: "availability-check", CUDA: "availability-check", CUDA_TYPE: "device-branch",
              CUDA_BUILD: "version-check", NPU: "device-branch", OTHER_DEVICE: "availability-check",
              OPTION: "option", PARAM: "option", ENV: "option", VERSION: "version-check",
              PLATFORM: "platform-check", UNKNOWN: "option"}
DEVICE_KINDS = (CUDA, CUDA_TYPE, CUDA_BUILD, NPU, OTHER_DEVICE)
CHOICE_KINDS = (OPTION, PARAM, ENV)

Value = Optional[bool]   # True / False / None (depends on a choice)


@dataclass(frozen=True)
class Atom:
    kind: str
    text: str                        # the test as the code says it
    values: Tuple[Value, Value] = (None, None)   # per scenario (SCENARIOS order)
    neg_text: str = ""               # the negated test, when it has a natural form (``x is not None``)
    default: str = ""                # the default the value was computed from (words), for options / env
    at_default: Value = None         # a choice's value with its default (a library parameter: the caller may change it)

    def value(self, scenario: str, defaults: bool = False) -> Value:
        v = self.values[0 if scenario == TRANSFER else 1]
        return self.at_default if v is None and defaults else v


@dataclass(frozen=True)
class Not:
    arg: "Cond"


@dataclass(frozen=True)
class And:
    args: Tuple["Cond", ...]


@dataclass(frozen=True)
class Or:
    args: Tuple["Cond", ...]


@dataclass(frozen=True)
class Const:
    value: bool


Cond = Union[Atom, Not, And, Or, Const]
TRUE, FALSE = Const(True), Const(False)


def neg(c: Cond) -> Cond:
    if isinstance(c, Not):
        return c.arg
    if isinstance(c, Const):
        return Const(not c.value)
    return Not(c)


def conj(*cs: Optional[Cond]) -> Optional[Cond]:
    parts = []
    for c in cs:
        if c is None or c == TRUE:
            continue
        if isinstance(c, And):
            parts.extend(c.args)
        else:
            parts.append(c)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def evaluate(c: Cond, scenario: str, defaults: bool = False, unchosen=False) -> Value:
    """Kleene three-valued value of *c* on an NPU host in *scenario*; *defaults*: the choices a caller
    could change (library parameters) take their default; *unchosen*: every choice (option, parameter,
    environment variable) is left open, whatever its value (or a tuple of the atom kinds left open)."""
    if isinstance(c, Atom):
        if unchosen and c.kind in (CHOICE_KINDS if unchosen is True else unchosen):
            return None
        return c.value(scenario, defaults)
    if isinstance(c, Const):
        return c.value
    if isinstance(c, Not):
        v = evaluate(c.arg, scenario, defaults, unchosen)
        return None if v is None else not v
    vals = [evaluate(a, scenario, defaults, unchosen) for a in c.args]
    if isinstance(c, And):
        if any(v is False for v in vals):
            return False
        return True if all(v is True for v in vals) else None
    if any(v is True for v in vals):
        return True
    return False if all(v is False for v in vals) else None


ON, OFF, CONDITIONAL = "on", "off", "conditional"


def on_path(c: Optional[Cond]) -> dict:
    """{scenario: "on" | "off" | "conditional"} for code that runs when *c* holds."""
    out = {}
    for s in SCENARIOS:
        v = True if c is None else evaluate(c, s)
        out[s] = ON if v is True else OFF if v is False else CONDITIONAL
    return out


def atoms(c: Optional[Cond]):
    if c is None:
        return
    if isinstance(c, Atom):
        yield c
    elif isinstance(c, Not):
        yield from atoms(c.arg)
    elif isinstance(c, (And, Or)):
        for a in c.args:
            yield from atoms(a)


def known(c: Optional[Cond]) -> bool:
    """True when the expression has an atom the model recognised (not only UNKNOWN atoms)."""
    return any(a.kind != UNKNOWN for a in atoms(c))


def render(c: Cond, negated: bool = False) -> str:
    """The expression as code-like text, with negations pushed into the atoms (never ``not not``)."""
    if isinstance(c, Const):
        return str(c.value != negated)
    if isinstance(c, Atom):
        if not negated:
            return c.text
        if c.neg_text:
            return c.neg_text
        return f"not {c.text}" if _simple(c.text) else f"not ({c.text})"
    if isinstance(c, Not):
        return render(c.arg, not negated)
    op_and = isinstance(c, And) != negated     # De Morgan
    sep = " and " if op_and else " or "
    parts = []
    for a in c.args:
        s = render(a, negated)
        inner = a.arg if isinstance(a, Not) else a
        if isinstance(inner, (And, Or)):
            s = f"({s})"
        parts.append(s)
    return sep.join(parts)


def _simple(text: str) -> bool:
    return all(ch.isalnum() or ch in "._()[]'\"," for ch in text.replace(", ", ","))


def off_whatever_chosen(c: Optional[Cond], scenario: str = TRANSFER) -> bool:
    """True when the path is off on an NPU host whatever its options, parameters and environment say: an enclosing
    test of the host (another accelerator's branch, a dead torch-version branch) decides it, not a choice."""
    return c is not None and evaluate(c, scenario, unchosen=True) is False


def off_whatever_set_in_code(c: Optional[Cond], scenario: str = TRANSFER) -> bool:
    """True when the path is off on an NPU host whatever the options and parameters in code say: a host test or an
    environment variable at its value (unset) keeps it off. An environment test that holds with its default
    (``if not self.skip``, ``$SKIP`` unset) does not: the options decide."""
    return c is not None and evaluate(c, scenario, unchosen=(OPTION, PARAM)) is False


def off_by_default(c: Optional[Cond]) -> bool:
    """True when the path depends on a choice but is off with every choice at its default."""
    return c is not None and evaluate(c, TRANSFER) is None and evaluate(c, TRANSFER, defaults=True) is False


def default_off_words(c: Optional[Cond]) -> str:
    """The choices that keep a path off with their defaults, as the code says them (``mixed_precision == 'fp8'``)."""
    out = []

    def walk(x, negated):
        if isinstance(x, Not):
            walk(x.arg, not negated)
        elif isinstance(x, (And, Or)):
            for a in x.args:
                walk(a, negated)
        elif isinstance(x, Atom) and x.kind in CHOICE_KINDS and x.value(TRANSFER) is None \
                and x.at_default is not None and (x.at_default is negated):
            s = f"`{render(x, negated)}`"
            if s not in out:
                out.append(s)

    walk(c, False)
    return " and ".join(out[:3])


def choices(c: Optional[Cond], scenario: str = TRANSFER):
    """The atoms whose value is unknown in *scenario*: the choices the path depends on."""
    return [a for a in atoms(c) if a.value(scenario) is None]


def words(c: Optional[Cond], scenario: str = TRANSFER) -> str:
    """One sentence on what the code's running depends on, for a ``conditional`` path."""
    out = []
    for a in choices(c, scenario):
        what = {IMPORTABLE: "whether the optional library is installed", PARAM: "the caller's argument",
                OPTION: "a user option", ENV: "an environment variable", VERSION: "the installed versions",
                PLATFORM: "the platform", UNKNOWN: "a value the analysis cannot see"}.get(a.kind, "the device")
        s = f"`{a.text}` ({what})"
        if s not in out:
            out.append(s)
        if len(out) >= 3:
            break
    return "depends on " + ", ".join(out) if out else ""
