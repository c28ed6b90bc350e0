"""The symptom rulebook (rulebook/symptoms.yaml): its schema, its loader and its JSON schema.

Plain dataclasses (advisor/schema.py): a rulebook read from the cache needs no pydantic, which
checks the YAML into them on a cache miss. The loader expands the named conditions into plain
trees, refuses a duplicate id or an unknown detector, and checks every leaf's parameters
against the detectors' declared ones (advisor/book/paramspec.py). The engine
(advisor/engine/) evaluates the rules; the remedy reads their actions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from advisor import schema
from advisor.detectors import DETECTORS
from advisor.resources import detectors_yaml
from advisor.schema import STRICT, Plain, declared
from advisor.types import InputError, Scalar, Severity

if TYPE_CHECKING:
    from pydantic import Field

    from advisor.book.paramspec import DetectorBook

ALGORITHMS = ("gspo", "grpo", "dapo")
# Facts about the job (from hp) or the run's end (`crashed`: it ended other than "completed").
Predicate = Literal[
    "on_policy", "kl_off", "kl_strong", "is_dapo", "is_gspo", "is_grpo", "crashed", "late_start",
    "kl_in_reward",
]


# ============================================================================ rulebook schema
# Plain dataclasses (advisor/schema.py): a rulebook read from the cache needs no pydantic,
# which checks the YAML into them on a cache miss. Keyword-only, as a model's fields are.
_REASON = "why the thresholds are what they are (`rules ID` says it)"


class _M(Plain):
    __pydantic_config__ = STRICT
    # the named condition a node was expanded from (`rules ID` says it); an attribute, not a
    # field: no rulebook key, kept by model_copy
    _condition = ""


@declared()
class PerAlgorithm(_M):
    """A threshold that depends on the algorithm (GSPO clips ~100x more tokens than GRPO;
    typical KL coefficients: GRPO ~0.04, GSPO ~0.001, DAPO 0 — knowledge.md §3)."""

    default: Scalar
    gspo: Scalar | None = None
    grpo: Scalar | None = None
    dapo: Scalar | None = None

    def pick(self, algorithm: str | None) -> Scalar:
        value = getattr(self, algorithm, None) if algorithm in ALGORITHMS else None
        return self.default if value is None else value


@declared()
class Leaf(_M):
    """One detector on one metric (a list of metrics means: any of them)."""

    detector: str
    metric: str | list[str]
    params: dict[str, Scalar | PerAlgorithm] = field(default_factory=dict)
    reason: Annotated[str, Field(description=_REASON)] = ""
    per: Annotated[
        str | None,
        Field(
            description="a companion metric the detector reads beside this one (canonical "
            "name): the spread a swing is measured against, the validation a fall is shared "
            "with, the length a step time is divided by"
        ),
    ] = None
    rounds: Annotated[
        str | None,
        Field(
            description="on a DAPO job, the reward whose success rate sets how many generation "
            "rounds dynamic sampling needs per step (unless the job logs its rounds: "
            "settings.rounds_metric)"
        ),
    ] = None
    skip_if: Annotated[
        list[Predicate],
        Field(description="hp predicates under which this evidence means nothing (leaf is ABSENT)"),
    ] = field(default_factory=list)
    skip_note: Annotated[
        str, Field(description="said in the assumptions when skip_if applies")
    ] = ""
    only_if: Annotated[
        list[Predicate],
        Field(description="facts that must all hold, else the leaf is false"),
    ] = field(default_factory=list)
    keep: Annotated[
        dict[str, Scalar | PerAlgorithm],
        Field(
            description="params that replace `params` while the rule's finding is active "
            "(hysteresis: a stricter condition starts a finding than keeps it alive)"
        ),
    ] = field(default_factory=dict)
    while_active: Annotated[
        bool,
        Field(
            description="judged only while the rule's finding is active: a condition that keeps "
            "a symptom alive but cannot start one (a KL that jumped and stays high)"
        ),
    ] = False

    @property
    def metrics(self) -> list[str]:
        return [self.metric] if isinstance(self.metric, str) else list(self.metric)


@declared()
class AllOf(_M):
    all: list[Node]
    reason: Annotated[str, Field(description=_REASON)] = ""


@declared()
class AnyOf(_M):
    any: list[Node]
    reason: Annotated[str, Field(description=_REASON)] = ""
    hold: Annotated[
        bool,
        Field(
            description="once the rule's finding is active, these alternatives count as "
            "holding: the finding clears only when the rule's other conditions stop (DIV stays "
            "while the reward stays down, even after the entropy that marked the collapse "
            "settles)"
        ),
    ] = False


@declared()
class NotOf(_M):
    not_: Annotated[Node, Field(alias="not")]
    reason: Annotated[str, Field(description=_REASON)] = ""


@declared()
class Use(_M):
    """A named condition of the rulebook's `conditions`, used in a rule's tree; on a condition
    that is one leaf, `params` and `keep` set some of its parameters for this use."""

    use: Annotated[str, Field(description="the condition's name")]
    params: dict[str, Scalar | PerAlgorithm] = field(default_factory=dict)
    keep: dict[str, Scalar | PerAlgorithm] = field(default_factory=dict)
    reason: Annotated[str, Field(description=_REASON)] = ""


Node = Leaf | AllOf | AnyOf | NotOf | Use


@declared()
class Condition(_M):
    """A condition named once and used by name in the rules (`- use: low_reward`)."""

    means: Annotated[str, Field(min_length=1, description="what it says about the run, in words")]
    when: Node


@declared()
class SizeBy(_M):
    """One measure of how far the run is off, read from what the run showed (a fact of
    `advisor.runfacts`): `ratio` gives the factor (fact / target) ** power; `kl_controller`
    replays the adaptive KL controller of Ziegler et al. 2019 over the run's KL to the
    reference (each step the coefficient x (1 + gain x clip(KL / target - 1, -clip, clip)))."""

    kind: Literal["ratio", "kl_controller"] = "ratio"
    fact: Annotated[str, Field(description="the run fact measured (advisor.runfacts)")]
    target: Annotated[float, Field(gt=0, description="where a healthy run has the fact")]
    power: Annotated[
        float, Field(description="ratio: the factor is (fact / target) ** power")
    ] = 1.0
    gain: Annotated[float, Field(gt=0, description="kl_controller: its K_beta")] = 0.1
    clip: Annotated[float, Field(gt=0, description="kl_controller: its error clip")] = 0.2
    why: Annotated[str, Field(min_length=1, description="why this measure sizes the step")]


@declared()
class SizeSpec(_M):
    """The step sized to the fault: the first measure of `by` the run has gives the factor,
    held inside `bounds` ([mild, strongest]). While the same move has not cured (the run
    history of `--previous`), each step's factor is raised to the power `escalate` of the
    last one (geometric growth), never past a value a history round showed too far."""

    bounds: Annotated[
        tuple[float, float], Field(description="[mild, strongest] factor of one step")
    ]
    by: list[SizeBy] = field(default_factory=list)
    escalate: Annotated[
        float | None,
        Field(
            description="the power of the last failed step's factor the next one takes "
            "(2: x10 then x100); none: a failed step falls back"
        ),
    ] = None
    spent_at: Annotated[
        float | None,
        Field(
            description="after a step that did not cure, the raw factor the run's evidence "
            "must ask for at least (in the step's direction) for the same setting to go on; "
            "below it the setting is spent and the fallback is used (default: the mild bound)"
        ),
    ] = None
    source: Annotated[str, Field(min_length=1, description="where the sizing comes from")]


@declared()
class ChangeSpec(_M):
    param: str
    op: Literal["multiply", "add", "set"]
    range: Annotated[
        tuple[float, float] | None,
        Field(description="[mild, strong] factor (multiply) or addend (add)"),
    ] = None
    value: Annotated[Scalar | None, Field(description="the value for op: set")] = None
    min_from: Annotated[
        float | None,
        Field(
            description="the change applies only while the current value is at least this; "
            "below it the change would do nothing that matters and the fallback is used"
        ),
    ] = None
    size: Annotated[
        SizeSpec | None, Field(description="the factor sized from the run (multiply only)")
    ] = None


@declared()
class ActionSpec(_M):
    advice: Annotated[str, Field(min_length=1)]
    changes: list[ChangeSpec] = field(default_factory=list)
    safety: Literal["safe", "unsafe", "display_only"] = "unsafe"


@declared()
class FirstWhen(_M):
    """An action that goes before the rule's primary when a fact of the run (advisor.runfacts)
    names the cause: a sampling temperature so low that every group's answers are alike."""

    fact: Annotated[str, Field(description="the run fact (advisor.runfacts)")]
    below: Annotated[float | None, Field(description="it applies while the fact is below")] = None
    above: Annotated[float | None, Field(description="it applies while the fact is above")] = None
    why: Annotated[str, Field(min_length=1, description="why the fact names the cause")]
    action: ActionSpec


@declared()
class Urgent(_M):
    """A finding whose evidence reaches a level that makes it the first thing to fix: its
    priority is raised while the first evidence's `level` statistic is at least `at_least`."""

    at_least: Annotated[float, Field(description="the first evidence's level that makes it urgent")]
    priority: Annotated[int, Field(description="the priority it then takes (lower = more urgent)")]
    why: Annotated[str, Field(min_length=1, description="why it goes first at that level")]


@declared()
class CaseChange(_M):
    """One declared change to a case's healthy base run, from step `start` on."""

    metric: Annotated[str, Field(description="canonical metric the change applies to")]
    start: Annotated[int, Field(ge=1, description="first step changed")] = 1
    end: Annotated[
        int | None, Field(ge=1, description="last step changed (default: the last)")
    ] = None
    multiply: Annotated[
        float | None, Field(description="x this (reached over `over` steps)")
    ] = None
    add: Annotated[float | None, Field(description="+ this (reached over `over` steps)")] = None
    set: Annotated[float | None, Field(description="this value (NaN allowed: .nan)")] = None
    over: Annotated[int, Field(ge=1, description="steps over which the change ramps in")] = 1
    period: Annotated[
        float | None, Field(gt=0, description="a sine of this period in steps...")
    ] = None
    amplitude: Annotated[float, Field(description="...and this half peak-to-peak, added")] = 0.0
    noise: Annotated[float, Field(ge=0, description="seeded normal noise of this sd, added")] = 0.0
    every: Annotated[
        int, Field(ge=1, description="set only every this many steps (an evaluation)")
    ] = 1


@declared()
class RuleCase(_M):
    """A firing or non-firing case beside its rule: a small healthy base run (400 steps,
    eval_steps 20, reward rising to a plateau, KL levelling off, entropy easing) plus the
    declared changes; one test runs every rule's cases (tests/engine/test_rule_cases.py)."""

    name: Annotated[str, Field(min_length=1)]
    change: list[CaseChange] = field(default_factory=list)
    ending: Annotated[
        str | None, Field(description="how the run ends (RunEnding kind), if not")
    ] = None
    hp: Annotated[
        dict[str, Scalar], Field(description="job values over the base")
    ] = field(default_factory=dict)
    expect: Literal["fires", "quiet"]
    onset: Annotated[int | None, Field(description="expected onset step (fires)")] = None
    within: Annotated[int, Field(ge=0, description="onset tolerance, steps")] = 40


@declared()
class SymptomRule(_M):
    """One run-time symptom: its documentation (ruff's sections), conditions and actions."""

    id: Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*$")]
    name: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]
    severity: Severity
    priority: Annotated[
        int, Field(description="lower = more urgent; the patch follows the top finding")
    ]
    summary: Annotated[str, Field(min_length=1, description="what it detects")]
    why: Annotated[str, Field(min_length=1, description="why it is bad")]
    example: Annotated[
        str, Field(min_length=1, description="what the curves look like when it fires")
    ]
    use_instead: Annotated[
        str, Field(min_length=1, description="what a healthy run shows instead")
    ]
    source: Annotated[
        str, Field(min_length=1, description="knowledge.md section/row or a public source")
    ]
    causes: Annotated[
        list[Annotated[str, Field(min_length=1)]],
        Field(min_length=1, description="likely causes, most probable first"),
    ]
    warmup: Annotated[
        bool, Field(description="judged only after the warm-up (false: events)")
    ] = True
    settles: Annotated[
        bool,
        Field(
            description="an episode that cleared `settled_blocks` blocks or more before the "
            "run's end is kept as info, with no change to make (a passing slowdown)"
        ),
    ] = False
    unless: Annotated[
        list[Predicate], Field(description="not judged when true")
    ] = field(default_factory=list)
    unless_note: str = ""
    suppressed_by: Annotated[
        list[str],
        Field(
            description="rule ids that, while active, explain this symptom away (P1 after a DIV)"
        ),
    ] = field(default_factory=list)
    on_ending: Annotated[
        list[str], Field(description="RunEnding kinds that fire it")
    ] = field(default_factory=list)
    urgent: Urgent | None = None
    recovery: Annotated[
        Literal["cleared", "learnt"],
        Field(
            description="when an episode that cleared is over: `cleared`, once it stayed clear "
            "for clear_after evaluations; `learnt`, also only if the run's reward then stands "
            "above its untrained level (settings.learning_metric: the median of its last 3 "
            "block means above every point of its first logged block, by that block's sd) or "
            "at settings.learning_low or more. A run back at the untrained policy's level "
            "after a collapse or a stall has not recovered: its episode keeps its severity"
        ),
    ] = "cleared"
    fallback_first: Annotated[
        list[str],
        Field(
            description="detectors whose evidence makes the fallback the action (the evidence "
            "says the primary cannot be the cause: a constant reward is no learning-rate "
            "problem)"
        ),
    ] = field(default_factory=list)
    first_when: Annotated[
        list[FirstWhen],
        Field(description="actions that go first when a fact of the run names the cause"),
    ] = field(default_factory=list)
    fallback_if_only: Annotated[
        list[str],
        Field(
            description="detector:metric pairs: when every piece of evidence is one of them, "
            "the fallback is the action (a reward alone non-finite is the reward function's, "
            "not the optimizer's)"
        ),
    ] = field(default_factory=list)
    when: Node | None = None
    absent_note: Annotated[str, Field(description="said when its metrics were not logged")] = ""
    action: ActionSpec
    fallback: ActionSpec | None = None
    cases: Annotated[
        list[RuleCase], Field(description="firing and non-firing cases of this rule")
    ] = field(default_factory=list)


@declared()
class Settings(_M):
    default_eval_steps: Annotated[
        int, Field(ge=1, description="eval_steps when unknown, no length")
    ] = 10
    eval_steps_fraction: Annotated[
        int,
        Field(ge=1, description="eval_steps = run length / this when unknown (guide: 10 to 20)"),
    ] = 20
    min_warmup_steps: Annotated[int, Field(ge=1)] = 30
    max_warmup_share: Annotated[
        float,
        Field(
            gt=0,
            le=1,
            description="the warm-up is at most this share of a run whose length is known "
            "(never below min_warmup_steps)",
        ),
    ] = 0.5
    warmup_blocks: Annotated[int, Field(ge=2, description="blocks the warm-up is cut into")] = 6
    window_blocks: Annotated[
        int, Field(ge=8, description="blocks kept per metric (rolling window)")
    ] = 32
    clear_after: Annotated[
        int, Field(ge=1, description="evaluations without a symptom to clear it")
    ] = 2
    rel_scale_floor: Annotated[
        float, Field(ge=0, description="noise floor, fraction of |level|")
    ] = 0.01
    abs_scale_floor: Annotated[float, Field(gt=0)] = 1e-9
    early_break: Annotated[
        dict[str, Literal["up", "down", "both"]],
        Field(
            description="metrics (and the direction that is a symptom) whose baseline is the "
            "level before a break inside the warm-up (a collapse there must not become the "
            "yardstick)"
        ),
    ] = field(default_factory=dict)
    settled_blocks: Annotated[int, Field(ge=1, description="see SymptomRule.settles")] = 4
    early_break_z: Annotated[
        float, Field(gt=0, description="break: first-half sigmas apart")
    ] = 8.0
    early_break_ratio: Annotated[
        float, Field(gt=1, description="break: x or / this far apart")
    ] = 3.0
    kl_strong_coef: Annotated[
        float,
        Field(
            gt=0,
            description="a KL coefficient at or above this dominates any reward signal "
            "(predicate kl_strong): 25 x GRPO's typical 0.04, beyond the guide's advised range",
        ),
    ] = 1.0
    rounds_metric: Annotated[
        str,
        Field(
            description="the metric a DAPO job logs its generation rounds per step under: when "
            "it is logged, a leaf's `rounds` estimate is not used (the rounds are judged as "
            "logged)"
        ),
    ] = "gen_batches"
    learning_metric: Annotated[
        str,
        Field(
            description="the metric whose level says whether a run learnt (rules with "
            "`recovery: learnt`): higher is better, and its first logged block is the untrained "
            "policy's level"
        ),
    ] = "reward_mean"
    learning_low: Annotated[
        float,
        Field(
            description="a learning_metric level ending at or above this is no failure to "
            "learn, whatever its start (a run saturated from its first step ends where it "
            "started): 0.5, the low_reward condition's level on an accuracy-like 0..1 reward"
        ),
    ] = 0.5
    evaluation_metric: Annotated[
        str,
        Field(
            description="the validation metric: a last block holding an evaluation is judged "
            "however short it is (the run's last evaluation is its last word)"
        ),
    ] = "val_reward"


@declared()
class SymptomRulebook(_M):
    version: int
    false_alarm_budget: Annotated[str, Field(min_length=1)]
    settings: Settings = field(default_factory=Settings)
    conditions: Annotated[
        dict[str, Condition], Field(description="named conditions the rules use by name")
    ] = field(default_factory=dict)
    rules: list[SymptomRule]

    @property
    def by_id(self) -> dict[str, SymptomRule]:
        return {r.id: r for r in self.rules}


def rulebook_path() -> Path:
    from advisor.resources import rulebook_dir

    return rulebook_dir() / "symptoms.yaml"


def parse_symptom_rules(path: Path) -> SymptomRulebook:
    """Read and schema-check a symptom rulebook; InputError names the file and the field."""
    from pydantic import ValidationError

    from advisor.resources import read_rulebook_data

    data = read_rulebook_data(path, "symptom rulebook")
    try:
        book = schema.validate(SymptomRulebook, data)
    except ValidationError as err:
        raise InputError(f"{path}: {schema.first_error(err)}") from None
    book = _expand_conditions(book, path)
    _check_references(book, path)
    check_rulebook(book, path)
    return book


def _expand_conditions(book: SymptomRulebook, path: Path) -> SymptomRulebook:
    """Each `use` of a named condition replaced by the condition's tree (its own uses too), so
    the engine sees plain trees. An unknown name or a condition that uses itself is an
    InputError naming the rule and the place."""
    import difflib

    conditions = book.conditions

    def expand(node: Node, where: str, using: tuple[str, ...]) -> Node:
        if isinstance(node, Use):
            cond = conditions.get(node.use)
            if cond is None:
                close = difflib.get_close_matches(node.use, sorted(conditions), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise InputError(
                    f"{path}: {where}: unknown condition {node.use!r}{hint} (the conditions: "
                    f"{', '.join(sorted(conditions)) or 'none'})"
                )
            if node.use in using:
                chain = " -> ".join((*using, node.use))
                raise InputError(f"{path}: {where}: condition {node.use!r} uses itself ({chain})")
            target = expand(cond.when, f"conditions.{node.use}.when", (*using, node.use))
            update: dict[str, Any] = {"reason": node.reason} if node.reason else {}
            if node.params or node.keep:
                if not isinstance(target, Leaf):
                    raise InputError(
                        f"{path}: {where}: params or keep on a use of {node.use!r}, which is "
                        "not a single detector leaf"
                    )
                update["params"] = {**target.params, **node.params}
                update["keep"] = {**target.keep, **node.keep}
            target = target.model_copy(update=update) if update else target
            target._condition = node.use
            return target
        if isinstance(node, AllOf):
            kids = [expand(n, f"{where}.all[{i}]", using) for i, n in enumerate(node.all)]
            return node.model_copy(update={"all": kids})
        if isinstance(node, AnyOf):
            kids = [expand(n, f"{where}.any[{i}]", using) for i, n in enumerate(node.any)]
            return node.model_copy(update={"any": kids})
        if isinstance(node, NotOf):
            return node.model_copy(update={"not_": expand(node.not_, f"{where}.not", using)})
        return node

    for name, cond in conditions.items():  # every condition resolves, used or not
        expand(cond.when, f"conditions.{name}.when", (name,))
    rules = [
        r.model_copy(update={"when": expand(r.when, f"rule {r.id}: when", ())})
        if r.when is not None
        else r
        for r in book.rules
    ]
    return book.model_copy(update={"rules": rules})


def _check_references(book: SymptomRulebook, path: Path) -> None:
    seen: set[str] = set()
    for rule in book.rules:
        if rule.id in seen:
            raise InputError(f"{path}: rule {rule.id}: id used twice")
        seen.add(rule.id)
        for leaf in leaves(rule.when):
            if leaf.detector not in DETECTORS:
                raise InputError(
                    f"{path}: rule {rule.id}: unknown detector {leaf.detector!r}; "
                    f"expected one of {sorted(DETECTORS)}"
                )


def leaves(node: Node | None) -> Iterable[Leaf]:
    if node is None:
        return
    if isinstance(node, Leaf):
        yield node
    elif isinstance(node, AllOf):
        for n in node.all:
            yield from leaves(n)
    elif isinstance(node, AnyOf):
        for n in node.any:
            yield from leaves(n)
    elif isinstance(node, NotOf):
        yield from leaves(node.not_)


@lru_cache(maxsize=4)
def _load_cached(path: str, mtime: float) -> SymptomRulebook:
    from advisor.resources import load_validated

    # the detectors' declared parameters check every leaf (check_rulebook): their file keys
    # the cache too; book/paramspec.py (its classes: ~2 ms a start) is imported to check only
    return load_validated(Path(path), parse_symptom_rules, __name__, also=(detectors_yaml(),))


def load_symptom_rules(path: Path | None = None) -> SymptomRulebook:
    """The symptom rulebook (cached per file and modification time)."""
    p = Path(path) if path is not None else rulebook_path()
    try:
        mtime = p.stat().st_mtime
    except OSError as err:
        raise InputError(f"{p}: cannot read the symptom rulebook: {err}") from None
    return _load_cached(str(p), mtime)


def export_schema() -> dict[str, Any]:
    """The JSON schema of the rulebook (committed as rulebook/schema_symptoms.json)."""
    return schema.json_schema(SymptomRulebook, by_alias=True)


def walk(node: Node | None, where: str = "when") -> Iterator[tuple[str, Leaf]]:
    """Every leaf of a condition tree with its place (`when.any[1].all[0]`)."""
    if node is None:
        return
    if isinstance(node, Leaf):
        yield where, node
    elif isinstance(node, AllOf):
        for i, child in enumerate(node.all):
            yield from walk(child, f"{where}.all[{i}]")
    elif isinstance(node, AnyOf):
        for i, child in enumerate(node.any):
            yield from walk(child, f"{where}.any[{i}]")
    elif isinstance(node, NotOf):
        yield from walk(node.not_, f"{where}.not")


def check_rulebook(book: SymptomRulebook, path: Path, spec: DetectorBook | None = None) -> None:
    """Every leaf's keys and values against its detector's declared parameters.

    Raises InputError naming the file, the rule, the leaf and (for an unknown key) the closest
    declared one."""
    from advisor.book.paramspec import detector_book

    spec = spec or detector_book()
    for rule in book.rules:
        for where, leaf in walk(rule.when):
            problem = leaf_problem(leaf, spec)
            if problem:
                metric = leaf.metric if isinstance(leaf.metric, str) else "/".join(leaf.metric)
                raise InputError(
                    f"{path}: rule {rule.id}: {where} ({leaf.detector} on {metric}): {problem}"
                )


def leaf_problem(leaf: Leaf, spec: DetectorBook) -> str | None:
    """What is wrong with one leaf's params and keep, or None."""
    if leaf.detector not in spec.detectors:
        return f"detector {leaf.detector!r} has no entry in rulebook/detectors.yaml"
    params = spec.params_of(leaf.detector)
    allowed = spec.keys_of(leaf.detector)
    reads = spec.detectors[leaf.detector].companions
    for companion in ("per", "rounds"):
        if getattr(leaf, companion) is not None and companion not in reads:
            return f"{companion}: {leaf.detector} reads no `{companion}` companion"
    for part, given in (("params", leaf.params), ("keep", leaf.keep)):
        for key, value in given.items():
            if key.startswith("_"):
                return f"{part}.{key}: set by the engine, not a rulebook key"
            if key in spec.companions:
                return f"{part}.{key}: a companion metric is the leaf's own `{key}:`, not a param"
            if key not in allowed:
                import difflib

                close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                return (
                    f"{part}.{key}: unknown parameter of {leaf.detector}{hint} "
                    f"(it reads {', '.join(sorted(allowed)) or 'none'})"
                )
            for value_ in _values(value):
                bad = params[key].problem(value_)
                if bad:
                    return f"{part}.{key}: {bad}"
    missing = [k for k, p in params.items() if p.required and k not in leaf.params]
    if missing:
        return f"params: {', '.join(missing)} required by {leaf.detector}"
    return None


def _values(value: object) -> list[Scalar]:
    """A threshold's values: one, or one per algorithm."""
    if isinstance(value, float | int | bool | str):
        return [value]
    picks = (getattr(value, a, None) for a in ("default", "gspo", "grpo", "dapo"))
    return [v for v in picks if isinstance(v, float | int | bool | str)]


def write_schema(dest: Path | None = None) -> Path:
    """Write the rulebook's JSON schema (`python -m advisor.book.symptoms` regenerates it)."""
    import json

    from advisor.resources import rulebook_dir

    path = dest or rulebook_dir() / "schema_symptoms.json"
    path.write_text(json.dumps(export_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_schema())
