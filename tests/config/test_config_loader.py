"""The load pass: three shapes, layering, --set, all errors at once, unreadable files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from config_helpers import BASES, JOBS, read_yaml, write_yaml

from advisor.api import validate_job
from advisor.config import load_config, parse_set
from advisor.types import InputError, Severity

GUIDE_EXAMPLES = [
    "guide_config.yaml",
    "guide_run_kwargs.yaml",
    "guide_run_kwargs.json",
    "guide_hyper_parameters.yaml",
]


@pytest.mark.parametrize("name", sorted(p.name for p in JOBS.glob("*.*")))
def test_shipped_jobs_carry_no_error(name: str) -> None:
    _, diag = validate_job(JOBS / name)
    errors = [(f.id, f.message) for f in diag.config_findings if f.severity is Severity.error]
    assert errors == []


def test_the_three_shapes_read_the_same_hyperparameters() -> None:
    loaded = {n: load_config(JOBS / n) for n in GUIDE_EXAMPLES}
    layouts = {n: cfg.layout for n, cfg in loaded.items()}
    assert layouts == {
        "guide_config.yaml": "yaml",
        "guide_run_kwargs.yaml": "keyword",
        "guide_run_kwargs.json": "keyword",
        "guide_hyper_parameters.yaml": "flat",
    }
    hp = {n: cfg.hyper_parameters for n, cfg in loaded.items()}
    assert hp["guide_run_kwargs.yaml"] == hp["guide_run_kwargs.json"]
    for name in GUIDE_EXAMPLES:  # the guide's values, every shape
        assert hp[name]["learning_rate"] == 2e-6
        assert hp[name]["batch_size"] == 64
        assert hp[name]["algorithm"] == "gspo"
    kw = loaded["guide_run_kwargs.yaml"].config
    assert [d.type for d in kw.datasets] == ["training", "validation"]
    assert [f.type for f in kw.functions] == ["rollout", "reward"]
    assert kw.resources.mtu_capacity == 24


def test_yaml_1_1_float_without_dot_is_a_float(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("learning_rate: 1e-6\nkl_loss_coef: 1E-3\n", encoding="utf-8")
    loaded = load_config(path)
    assert loaded.hyper_parameters["learning_rate"] == pytest.approx(1e-6)
    assert isinstance(loaded.hyper_parameters["kl_loss_coef"], float)
    assert not [f for f in loaded.findings if f.id in ("C002", "C003")]


def test_layering_default_file_run_set(tmp_path: Path) -> None:
    loaded = load_config(
        JOBS / "guide_config.yaml",
        sets=["n_rollouts=16", "training.hyper_parameters.batch_size=128"],
        hints={"learning_rate": 3e-6, "max_prompt_length": 1536},
    )
    hp, origin = loaded.hyper_parameters, loaded.origin
    assert (hp["n_rollouts"], origin["n_rollouts"]) == (16, "set")
    assert (hp["batch_size"], origin["batch_size"]) == (128, "set")
    # the file says 2e-6: an explicit config wins over the log's value (reported as C006)
    assert (hp["learning_rate"], origin["learning_rate"]) == (2e-6, "file")
    assert (hp["kl_loss_coef"], origin["kl_loss_coef"]) == (0.002, "file")
    # what the file leaves out, the run's log fills
    assert (hp["max_prompt_length"], origin["max_prompt_length"]) == (1536, "run")
    assert (hp["n_gpus_training"], origin["n_gpus_training"]) == (8, "default")
    assert len(hp) == 25
    assert [f.id for f in loaded.findings if f.id == "C006"] == ["C006"]


def test_a_logged_lr_a_hair_below_the_files_is_no_clash(tmp_path: Path) -> None:
    """The peak of a logged lr schedule is sampled at logging steps (1e-5 logs 9.99e-6)."""
    path = tmp_path / "job.yaml"
    path.write_text("learning_rate: 1e-5\nbatch_size: 64\n", encoding="utf-8")
    close = load_config(path, hints={"learning_rate": 9.99154e-6, "batch_size": 64})
    assert not [f for f in close.findings if f.id == "C006"]
    for clash in ({"learning_rate": 2e-6}, {"batch_size": 63}):
        far = load_config(path, hints=clash)
        assert [f.id for f in far.findings if f.id == "C006"] == ["C006"]


@pytest.mark.parametrize(
    ("item", "key", "value"),
    [
        ("learning_rate=1e-5", "learning_rate", 1e-5),
        ("algorithm=dapo", "algorithm", "dapo"),
        ("n_epochs=3", "n_epochs", 3),
        ("save_strategy=no", "save_strategy", "no"),
        ("resources.mtu_capacity=32", "resources.mtu_capacity", 32),
        ("env={A: 1}", "env", {"A": 1}),
    ],
)
def test_parse_set_reads_yaml_values(item: str, key: str, value: object) -> None:
    assert parse_set(item) == (key, value)


def test_set_on_paths_resources_and_functions() -> None:
    loaded = load_config(
        JOBS / "guide_config.yaml",
        sets=[
            "resources.mtu_capacity=48",
            "functions.0.runtime.concurrency=64",
            "model=qwen3.5-35b-a3b",
        ],
    )
    assert loaded.config.resources.mtu_capacity == 48
    assert loaded.config.functions[0].runtime["concurrency"] == 64
    assert loaded.config.model == "qwen3.5-35b-a3b"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("learning_rate", "expected KEY=VALUE"),
        ("=3", "expected KEY=VALUE"),
        ("learnin_rate=1e-5", "did you mean learning_rate?"),
        ("functions.7.timeout=600", "no index 7"),
        ("learning_rate=[1, 2", "not a YAML scalar"),
    ],
)
def test_bad_set_is_an_input_error(item: str, expected: str) -> None:
    with pytest.raises(InputError, match=expected.replace("?", r"\?").replace("[", r"\[")):
        load_config(JOBS / "guide_config.yaml", sets=[item])


def test_bad_set_value_is_an_unusable_call_naming_the_flag() -> None:
    """A value typed on the command line that cannot be used stops the call (exit 2): judging
    the run on the file's value instead would answer a question the user did not ask."""
    for item, expected in (("learning_rate=fast", "must be a number"), ("n_rollouts=0", "outside")):
        with pytest.raises(InputError, match=rf"--set {item.split('=')[0]}.*{expected}"):
            load_config(JOBS / "guide_config.yaml", sets=[item])


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    data = read_yaml(BASES / "9b.yaml")
    hp = data["training"]["hyper_parameters"]
    hp.update(algorithm="ppo", batch_size="many", n_epochs=0, learning_rat=1e-6)
    del hp["max_prompt_length"]
    data["functions"][0]["runtime"]["memory_scale_threshold"] = 2
    loaded = load_config(write_yaml(data, tmp_path / "job.yaml"))
    got = sorted((f.id, f.params[0]) for f in loaded.findings)
    assert got == [
        ("C001", "training.hyper_parameters.learning_rat"),
        ("C002", "batch_size"),
        ("C003", "functions[0].runtime.memory_scale_threshold"),
        ("C003", "n_epochs"),
        ("C004", "algorithm"),
        ("C005", "max_prompt_length"),
        ("C008", "job_name"),  # the guide's layout, which the SDK refuses
    ]
    assert all(f.line for f in loaded.findings if f.id != "C005")


def test_findings_carry_the_file_line(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("# comment\nalgorithm: gspo\nn_rollouts: 1\n", encoding="utf-8")
    _, diag = validate_job(path)
    (single,) = [f for f in diag.config_findings if f.id == "C205"]
    assert single.line == 3


def test_training_samples_counted_from_local_jsonl(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3}\n')
    data = read_yaml(BASES / "9b.yaml")
    loaded = load_config(write_yaml(data, tmp_path / "job.yaml"))
    assert loaded.training_samples == 3
    assert (
        load_config(write_yaml(data, tmp_path / "job.yaml"), training_samples=99).training_samples
        == 99
    )


def test_missing_training_file_is_noted_not_invented(tmp_path: Path) -> None:
    loaded = load_config(write_yaml(read_yaml(BASES / "9b.yaml"), tmp_path / "job.yaml"))
    assert loaded.training_samples is None
    assert any("not found locally" in n for n in loaded.notes)


def test_no_config_gives_defaults_without_warnings() -> None:
    loaded = load_config(None, hints={"learning_rate": 1e-6, "n_rollouts": 4})
    assert loaded.findings == []
    assert loaded.origin["learning_rate"] == "run"
    assert loaded.origin["batch_size"] == "default"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [1, 2\n", r"job\.yaml:\d+:\d+: not valid YAML/JSON"),
        ("training:\n  hyper_parameters:\n    lr: 1\n   bad: 2\n", r"job\.yaml:4:\d+: not valid"),
        ("- 1\n- 2\n", r"job\.yaml:1: expected a mapping of job config keys, got a list"),
        ("just text\n", r"got a string"),
        ("", r"empty file"),
        ('{"a": 1,, }', r"job\.yaml:1:9: not valid JSON"),
        ("a: 1\na: 2\n", r"job\.yaml:2:\d+: not valid YAML/JSON"),
    ],
)
def test_unreadable_files_are_input_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=expected) as err:
        load_config(path)
    assert "\n" not in str(err.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="is a directory"):
        load_config(tmp_path)


def test_json_keyword_form_with_string_numbers(tmp_path: Path) -> None:
    """The guide's own runtime override passes learning_rate as the string "2e-4"."""
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"hyper_parameters": {"learning_rate": "2e-4"}}))
    loaded = load_config(path)
    assert loaded.hyper_parameters["learning_rate"] == 2e-4
    assert not [f for f in loaded.findings if f.severity is Severity.error]


def test_function_type_enum_constant_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("functions:\n  - {type: FunctionType.ROLLOUT, entity_id: ro-1}\n"
                    "  - {entity_id: rw-1}\n")  # fmt: skip
    loaded = load_config(path)
    assert [f.type for f in loaded.config.functions] == ["rollout", "reward"]


def test_invalid_values_are_listed_in_the_files_order(tmp_path: Path) -> None:
    """The note on values replaced by defaults is the same text on every run (file order)."""
    base = read_yaml(BASES / "9b.yaml")
    hp = base["training"]["hyper_parameters"]
    spoilt = {"n_rollouts", "learning_rate", "eval_steps", "kl_loss_coef", "batch_size"}
    for key in spoilt & hp.keys():
        hp[key] = "not-a-number"
    path = write_yaml(base, tmp_path / "job.yaml")
    written = read_yaml(path)["training"]["hyper_parameters"]
    keys = [k for k in written if k in spoilt]  # as the file lists them
    notes = [n for n in load_config(path).notes if n.startswith("invalid values")]
    assert len(notes) == 1 and len(keys) >= 3
    order = [notes[0].index(f"{k}=") for k in keys]
    assert order == sorted(order), notes[0]


@pytest.mark.parametrize(("value", "rule"), [("0", "C003"), ("0.5", "C002")])
def test_a_function_field_set_from_the_command_line_is_checked_as_in_the_file(
    tmp_path: Path, value: str, rule: str
) -> None:
    """0 is below the range; 0.5 is no whole number of seconds (the SDK's timeout is an int)."""
    job = read_yaml(JOBS / "guide_config.yaml")
    job["functions"][0]["timeout"] = float(value)
    in_file = load_config(write_yaml(job, tmp_path / "job.yaml"))
    by_set = load_config(JOBS / "guide_config.yaml", sets=[f"functions.0.timeout={value}"])
    for loaded in (in_file, by_set):
        assert [f.id for f in loaded.findings if "timeout" in f.message] == [rule]
