"""`rl-advisor rules [ID]`: list every rule, or explain one in the ruff shape.

Generated from the rulebooks (rulebook/config.yaml and rulebook/symptoms.yaml), never hand-kept.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.book.config import rulebook
from advisor.book.paramspec import meanings, summary
from advisor.cli import OutputFormat, app
from advisor.report.escape import Md, prose
from advisor.report.templating import render
from advisor.types import InputError

if TYPE_CHECKING:
    from advisor.book.config import ConfigRule, CouplingRepair
    from advisor.book.symptoms import Leaf, Node, SymptomRule


@dataclass(frozen=True)
class RuleDoc:
    """One rule's documentation, whatever rulebook it comes from."""

    id: str
    name: str
    kind: str  # "config" or "symptom"
    severity: str
    summary: str
    why: str
    example: str
    use_instead: str
    source: str
    params: list[str] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)  # further sections, e.g. causes


def config_rule_docs() -> list[RuleDoc]:
    return [
        RuleDoc(
            id=r.id,
            name=r.name,
            kind="config",
            severity=r.severity.value,
            summary=r.summary,
            why=r.why,
            example=r.example,
            use_instead=r.use_instead,
            source=r.source,
            params=list(r.params),
            extra=_config_extra(r),
        )
        for r in rulebook().rules
    ]


def _config_extra(rule: ConfigRule) -> dict[str, str]:
    check = {k: v for k, v in asdict(rule.check).items() if v is not None}
    if check.get("kind") == "load":
        extra = {"Check": "while the job file is read (names, types, ranges, choices, layout)"}
    elif check.get("kind") == "require":
        extra = {"Check": f"fires unless `{check['expr']}`"}
    else:
        extra = {"Check": ", ".join(f"{k}: {v}" for k, v in check.items())}
    if rule.when:
        extra["When"] = rule.when
    if rule.repair is not None:
        extra["Repair"] = _list_md(_repair_lines(rule.repair))
    return extra


def _size_lines(change: Any) -> list[str]:
    """How a change's step is sized from the run (rulebook `size`), for `rules ID`."""
    size = change.size
    lo, hi = size.bounds
    lines = [f"{change.param}: a factor between x{lo:g} and x{hi:g}, from the first of:", ""]
    for by in size.by:
        if by.kind == "kl_controller":
            how = (
                f"the adaptive KL controller replayed over {by.fact} (target {by.target:g}, "
                f"K {by.gain:g}, error clipped at {by.clip:g})"
            )
        else:
            how = f"({by.fact} / {by.target:g}) ** {by.power:g}"
        lines.append(f"- {how}: {by.why}")
    lines.append("")
    if size.escalate:
        lines.append(
            f"A step that did not cure (`--previous`) is followed by its factor to the power "
            f"{size.escalate:g}, kept between values earlier runs showed too low and too high"
            + (
                f", while the run still asks for at least x{size.spent_at:g}"
                if size.spent_at is not None
                else ""
            )
            + "."
        )
    lines.append(f"Source: {size.source}")
    return lines


def _repair_lines(repair: CouplingRepair) -> list[str]:
    """How the remedy restores the coupling after its own change broke it, in order."""
    lines = ["When the advisor's change breaks this coupling, the first of these that applies:"]
    lines.append("")
    for i, move in enumerate(repair.moves, 1):
        moved = ", ".join(move.if_changed)
        only = f" (only when the change moved {moved})" if moved else ""
        lines.append(f"{i}. `{move.param}` = `{move.to}`{only}")
    if repair.assume:
        said = ", ".join(f"{k} = {v}" for k, v in repair.assume.items())
        lines += ["", f"A value the job leaves out is taken as: {said}."]
    return lines


def symptom_rule_docs() -> tuple[list[RuleDoc], str]:
    """The engine's symptom rules, or none and a note when the engine is not available."""
    try:
        from advisor.engine import load_symptom_rules

        book = load_symptom_rules()
    except Exception as err:  # the engine is another module; never let it break `rules`
        return [], f"Symptom rules unavailable ({type(err).__name__}: {err})."
    means = {name: c.means for name, c in book.conditions.items()}
    return [_symptom_doc(r, means) for r in book.rules], ""


def _symptom_doc(rule: SymptomRule, conditions: dict[str, str]) -> RuleDoc:
    extra = {}
    if rule.causes:
        extra["Likely causes"] = _list_md([f"{i}. {c}" for i, c in enumerate(rule.causes, 1)])
    extra["Action"] = rule.action.advice + "".join(
        f" Only while {c.param} >= {c.min_from:g}; below, the fallback."
        for c in rule.action.changes
        if c.min_from is not None
    )
    sized = [c for c in rule.action.changes if c.size is not None]
    if sized:
        extra["Step size"] = _list_md([line for c in sized for line in _size_lines(c)])
    if rule.first_when:
        extra["Goes first"] = _list_md([
            f"- while the run's {w.fact} is"
            + (f" below {w.below:g}" if w.below is not None else "")
            + (f" above {w.above:g}" if w.above is not None else "")
            + f": {w.action.advice.strip()} ({w.why})"
            for w in rule.first_when
        ])
    if rule.fallback is not None:
        extra["Fallback"] = rule.fallback.advice + (
            f" First when every piece of evidence is {' or '.join(rule.fallback_if_only)}."
            if rule.fallback_if_only
            else ""
        )
    if rule.when is not None:
        when = "after the warm-up" if rule.warmup else "from the first block"
        extra["When it fires"] = _list_md([
            f"Judged on block means {when} (rulebook/symptoms.yaml, rule `{rule.id}`):",
            "",
            *_when_lines(rule.when, 0, conditions),
        ])
    if rule.recovery == "learnt":
        extra["When it ends"] = (
            "An episode that cleared counts as recovered (info) only when the reward ends above "
            "the untrained policy's level (its first logged block) or at the rulebook's "
            "learning_low (0.5) or more; one back at that level keeps its severity."
        )
    return RuleDoc(
        id=rule.id,
        name=rule.name,
        kind="symptom",
        severity=str(getattr(rule.severity, "value", rule.severity)),
        summary=rule.summary,
        why=rule.why,
        example=rule.example,
        use_instead=rule.use_instead,
        source=rule.source,
        extra=extra,
    )


_ITEM = re.compile(r"^(\s*)(- |\d+\. )?(.*)$")


def _list_md(lines: list[str]) -> str:
    """Lines of a Markdown list (or a paragraph), each escaped as prose after its marker: the
    template prints the body as it is, so its line breaks stay."""

    out = []
    for line in lines:
        m = _ITEM.match(line)
        assert m is not None  # the pattern matches any line
        pad, marker, text = m.group(1), m.group(2) or "", m.group(3)
        out.append(f"{pad}{marker}{prose(text)}" if text else pad + marker.rstrip())
    return Md("\n".join(out))


def _when_lines(node: Node, depth: int, conditions: dict[str, str] | None = None) -> list[str]:
    """A rule's condition tree as nested Markdown bullets a reviewer can check: each node with
    its named condition (`conditions`: name -> what it means), the reason for its thresholds
    and each threshold in words."""
    from advisor.book.symptoms import AllOf, AnyOf, Leaf, NotOf

    pad = "  " * depth
    named = node._condition
    label = f" (`{named}`: {(conditions or {}).get(named, '')})" if named else ""
    reason = [f"{pad}  - why: {node.reason}"] if node.reason else []
    if isinstance(node, AllOf | AnyOf):
        word, children = (
            ("all of", node.all) if isinstance(node, AllOf) else ("any of", node.any)
        )
        lines = [f"{pad}- {word}{label}:", *reason]
        for child in children:
            lines += _when_lines(child, depth + 1, conditions)
        return lines
    if isinstance(node, NotOf):
        return [f"{pad}- not{label}:", *reason, *_when_lines(node.not_, depth + 1, conditions)]
    assert isinstance(node, Leaf)  # uses are expanded when the rulebook loads
    metric = node.metric if isinstance(node.metric, str) else " or ".join(node.metric)
    text = f"{pad}- `{node.detector}` on `{metric}`"
    said = summary(node.detector)
    if said:
        text += f": {said[0].lower()}{said[1:].rstrip('.')}"
    elif node.params:
        text += f" ({_params(node.params)})"
    if node.only_if:
        text += f"; only if {', '.join(node.only_if)}"
    if node.skip_if:
        text += f"; not judged if {', '.join(node.skip_if)}"
    if node.keep:
        text += f"; once reported, kept with {_params(node.keep)}"
    return [text + label, *reason, *_meaning_lines(node, pad + "  ")]


def _meaning_lines(leaf: Leaf, pad: str) -> list[str]:
    """Each threshold a leaf sets, said in words (rulebook/detectors.yaml)."""

    said = meanings(leaf.detector)
    lines = []
    for key, value in leaf.params.items():
        if key not in said:
            continue
        meaning, unit = said[key]
        unit = "" if not unit or unit == "the metric's unit" else f" {unit}"
        lines.append(f"{pad}- `{key}` = {_value(value)}{unit}: {meaning}")
    for key in ("per", "rounds"):
        companion = getattr(leaf, key, None)
        if companion and key in said:
            lines.append(f"{pad}- `{key}` = `{companion}`: {said[key][0]}")
    return lines


def _value(value: Any) -> str:
    if hasattr(value, "pick"):  # a value per algorithm
        per = {a: getattr(value, a) for a in ("default", "gspo", "grpo", "dapo")}
        return ", ".join(f"{a} {v}" for a, v in per.items() if v is not None)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _params(params: dict[str, Any]) -> str:
    out = []
    for key, value in params.items():
        if hasattr(value, "pick"):  # a value per algorithm
            per = {a: getattr(value, a) for a in ("default", "gspo", "grpo", "dapo")}
            value = ", ".join(f"{a} {v}" for a, v in per.items() if v is not None)
            out.append(f"{key}: {value}")
        else:
            out.append(f"{key}={value}")
    return ", ".join(out)


def all_rule_docs() -> tuple[list[RuleDoc], str]:
    symptoms, note = symptom_rule_docs()
    return symptoms + config_rule_docs(), note


def find_rule(docs: list[RuleDoc], key: str) -> RuleDoc:
    """By id (case-insensitive) or name; InputError with the nearest ones otherwise."""

    wanted = key.strip().lower()
    # C2O1 / CZ01 / c2l1: a letter typed for a digit in an id
    digits = wanted[:1] + wanted[1:].translate(str.maketrans("oilsz", "01152"))
    for doc in docs:
        if wanted in (doc.id.lower(), doc.name.lower()):
            return doc
    names = [d.id for d in docs] + [d.name for d in docs]
    near = difflib.get_close_matches(key, names, n=3, cutoff=0.5) or difflib.get_close_matches(
        key.upper(), names, n=3, cutoff=0.5
    )
    same = [d.id for d in docs if d.id.lower() == digits]
    near = same + [n for n in near if n not in same][: 3 - len(same)]
    hint = f"; did you mean {' or '.join(near)}?" if near else "; `rl-advisor rules` lists them"
    raise InputError(f"rules {key}: no rule with this id or name{hint}")


@app.command("rules")
def rules(
    rule_id: Annotated[
        str | None, typer.Argument(metavar="[RULE_ID]", help="A rule id or name.")
    ] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = (
        OutputFormat.markdown
    ),
) -> None:
    """List every rule (config and symptom), or explain one: rl-advisor rules C201."""

    docs, note = all_rule_docs()
    if rule_id is not None:
        try:
            doc = find_rule(docs, rule_id)
        except InputError as err:
            if note:  # the symptom rulebook did not load: say why, not only "no such rule"
                raise InputError(f"{err} ({note})") from None
            raise
        if fmt is OutputFormat.json:
            typer.echo(json.dumps(asdict(doc), indent=2, ensure_ascii=False))
        else:
            typer.echo(render("rule.md.j2", r=doc), nl=False)
        return
    if fmt is OutputFormat.json:
        typer.echo(json.dumps([asdict(d) for d in docs], indent=2, ensure_ascii=False))
        return
    n_config = sum(d.kind == "config" for d in docs)
    typer.echo(
        render(
            "rules.md.j2",
            rules=docs,
            n_config=n_config,
            n_symptom=len(docs) - n_config,
            symptom_note=note,
        ),
        nl=False,
    )
