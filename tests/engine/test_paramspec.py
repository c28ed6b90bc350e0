"""rulebook/detectors.yaml declares every parameter each detector reads, and the rulebook's
leaves set only declared parameters, with valid values."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sources import source_tree

from advisor import detectors
from advisor.book.paramspec import detector_book
from advisor.book.symptoms import check_rulebook, parse_symptom_rules, rulebook_path, walk
from advisor.types import InputError

# Keys the engine passes in, and the companion each stands for.
INJECTED = {"_per": "per", "_rounds": "rounds", "_rounds_n": "rounds"}
# Keys the engine passes in that are no companion: how it asks for the evidence.
ASKED = {"_brief"}




def _reads() -> dict[str, dict[str, set[object]]]:
    """Per registered detector: each key it reads from its params (through the helpers it hands
    them to) and the literal defaults it reads them with."""
    tree = source_tree(detectors)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def direct(fn: ast.FunctionDef, name: str) -> tuple[dict[str, set[object]], list[tuple]]:
        keys: dict[str, set[object]] = {}
        calls: list[tuple[ast.FunctionDef, str]] = []
        for node in ast.walk(fn):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == name and node.args
                    and isinstance(node.args[0], ast.Constant)):
                found = keys.setdefault(node.args[0].value, set())
                if len(node.args) > 1:
                    try:
                        found.add(ast.literal_eval(node.args[1]))
                    except ValueError:
                        found.add("<expression>")
            elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                  and node.value.id == name and isinstance(node.slice, ast.Constant)):
                keys.setdefault(node.slice.value, set())
            elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
                  and any(isinstance(c, ast.Name) and c.id == name for c in node.comparators)):
                keys.setdefault(node.left.value, set())
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = funcs.get(node.func.id)
                if callee is None:
                    continue
                names = [a.arg for a in callee.args.args]
                calls += [(callee, names[i]) for i, a in enumerate(node.args)
                          if isinstance(a, ast.Name) and a.id == name and i < len(names)]
                calls += [(callee, kw.arg) for kw in node.keywords
                          if isinstance(kw.value, ast.Name) and kw.value.id == name and kw.arg]
        return keys, calls

    def closure(fn: ast.FunctionDef, name: str, seen: set[tuple[str, str]]) -> dict:
        if (fn.name, name) in seen:
            return {}
        seen.add((fn.name, name))
        keys, calls = direct(fn, name)
        out = {k: set(v) for k, v in keys.items()}
        for callee, param in calls:
            for k, v in closure(callee, param, seen).items():
                out.setdefault(k, set()).update(v)
        return out

    out = {}
    for fn in funcs.values():
        for dec in fn.decorator_list:
            if isinstance(dec, ast.Call) and getattr(dec.func, "id", "") == "detector":
                out[dec.args[0].value] = closure(fn, "p", set())
    return out


READS = _reads()
SPEC = detector_book()


def test_the_scan_finds_every_registered_detector() -> None:
    assert set(READS) == set(detectors.DETECTORS)


def test_every_detector_is_declared_and_nothing_else() -> None:
    assert set(SPEC.detectors) == set(detectors.DETECTORS)


@pytest.mark.parametrize("name", sorted(detectors.DETECTORS))
def test_the_spec_declares_exactly_what_the_detector_reads(name: str) -> None:
    reads = READS[name]
    user_keys = {k for k in reads if k not in INJECTED and k not in ASKED}
    companions = {INJECTED[k] for k in reads if k in INJECTED}
    declared = set(SPEC.params_of(name))
    assert user_keys - declared == set(), f"{name} reads undeclared {user_keys - declared}"
    assert declared - user_keys == set(), f"{name} declares unread {declared - user_keys}"
    assert set(SPEC.detectors[name].companions) == companions


def test_brief_names_every_detector_that_reads_it() -> None:
    """The engine asks a detector for its evidence without the summary (`_brief`) only when
    its registration says `brief`: the detectors that read the key are exactly those."""
    assert {n for n, reads in READS.items() if "_brief" in reads} == {
        n for n, reg in detectors.REGISTRY.items() if reg.brief
    }


@pytest.mark.parametrize("name", sorted(detectors.DETECTORS))
def test_declared_defaults_are_the_code_defaults(name: str) -> None:
    params = SPEC.params_of(name)
    for key, defaults in READS[name].items():
        literals = {d for d in defaults if d != "<expression>"}
        if key in params and len(literals) == 1 and "<expression>" not in defaults:
            (code,) = literals
            assert params[key].default == code, (name, key, params[key].default, code)


def test_the_rulebook_passes() -> None:
    check_rulebook(parse_symptom_rules(rulebook_path()), rulebook_path())


def _with(tmp_path: Path, old: str, new: str) -> Path:
    text = rulebook_path().read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = tmp_path / "symptoms.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


P4_SHIFT = (
    "params: {direction: down, min_z: 4, min_ratio: 0.3, k: 3, m: 4, onset: hinge, strong: 2}"
)


def test_a_misspelt_key_names_the_rule_the_leaf_and_the_likely_key(tmp_path: Path) -> None:
    path = _with(tmp_path, P4_SHIFT, P4_SHIFT.replace("min_ratio", "min_ratoi"))
    with pytest.raises(InputError) as err:
        parse_symptom_rules(path)
    msg = str(err.value)
    assert "rule P4" in msg and "when.any[0].all[0] (shift on entropy)" in msg
    assert "params.min_ratoi" in msg and "did you mean 'min_ratio'?" in msg


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("min_z: 4,", "expected a number in [0, 100], found -4"),  # out of range
        ("k: 3,", "expected an integer, found 2.5"),
        ("direction: down,", "expected one of ['up', 'down'], found 'sideways'"),
        ("strong: 2}", "set by the engine"),  # an engine-injected key
    ],
)
def test_bad_values_and_engine_keys_are_load_errors(
    tmp_path: Path, change: str, said: str
) -> None:
    replacement = {
        "min_z: 4,": "min_z: -4,",
        "k: 3,": "k: 2.5,",
        "direction: down,": "direction: sideways,",
        "strong: 2}": "strong: 2, _per: reward_mean}",
    }[change]
    path = _with(tmp_path, P4_SHIFT, P4_SHIFT.replace(change, replacement))
    with pytest.raises(InputError, match="rule P4") as err:
        parse_symptom_rules(path)
    assert said in str(err.value)


def test_every_leaf_detector_has_a_summary_and_meanings() -> None:
    book = parse_symptom_rules(rulebook_path())
    for rule in book.rules:
        for _, leaf in walk(rule.when):
            assert SPEC.detectors[leaf.detector].summary
            for key in leaf.params:
                if key not in SPEC.companions:
                    assert SPEC.params_of(leaf.detector)[key].meaning


def test_exported_schema_is_fresh() -> None:
    import json

    from advisor import schema
    from advisor.book.paramspec import DetectorBook, spec_path

    committed = json.loads((spec_path().parent / "schema_detectors.json").read_text())
    assert committed == json.loads(json.dumps(schema.json_schema(DetectorBook))), (
        "rulebook/schema_detectors.json is stale: run `python -m advisor.book.paramspec`"
    )
