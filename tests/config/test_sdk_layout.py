"""The platform SDK's own job files, written by the real `dashscope` package (its TuningModel
classes and `to_yaml`), read beside their twins in the guide's layout; and every patch written
from them loaded back by the SDK's `TuningModel.load_from_yaml`.

Skipped where the SDK is not installed (the `platform` extra; CI installs it).
"""

from __future__ import annotations

import copy
import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from config_helpers import JOBS, write_yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.api import validate_job
from advisor.cli import main
from advisor.config import load_config, sdk_layout_text, write_patched

sdk = pytest.importorskip("dashscope.finetune.reinforcement.common.model")
types = pytest.importorskip("dashscope.finetune.reinforcement.common.model_types")
yaml = pytest.importorskip("yaml")  # PyYAML, the SDK's own loader

HP = {
    "algorithm": "gspo",
    "kl_loss_coef": 0.001,
    "learning_rate": 5e-6,
    "lr_scheduler_type": "cosine",
    "lr_warmup_steps": -1,
    "n_epochs": 3,
    "batch_size": 128,
    "n_rollouts": 8,
    "ppo_mini_batch_size": 32,
    "max_length": 8192,
    "max_prompt_length": 2048,
    "eval_steps": 50,
    "save_steps": 100,
    "save_strategy": "epoch",
    "save_total_limit": 3,
}
MOE_HP = {
    **HP,
    "kl_loss_coef": 0.0005,
    "learning_rate": 4e-6,
    "batch_size": 256,
    "ppo_mini_batch_size": 64,
    "n_epochs": 2,
    "max_prompt_length": 4096,
    "save_total_limit": 3,
    "expert_model_parallel_size": 4,
    "tensor_model_parallel_size": 4,
    "inference_tensor_parallel_size": 4,
}
RESOURCES = {"charge_type": "mtu_postpaid", "mtu_spec_code": "MTU4", "mtu_capacity": 24}
RUNTIME = {
    "cpu": 2.0,
    "memory_size": 4096,
    "disk_size": 512,
    "concurrency": 30,
    "capacity": 30,
    "min_capacity": 30,
    "max_capacity": 60,
    "memory_scale_threshold": 0.6,
    "concurrency_scale_threshold": 0.6,
}
ROLLOUT = {
    "type": "rollout",
    "name": "rollout-1",
    "timeout": 1200,
    "fcmodel": {"classpath": "functions.rollout.cot.CotRollout"},
    "runtime": RUNTIME,
}
REWARD = {
    "type": "reward",
    "name": "reward-1",
    "timeout": 120,
    "weight": 1.0,
    "fcmodel": {"classpath": "functions.reward.math.MathReward"},
    "runtime": RUNTIME,
}
DATASETS = [
    {"type": "training", "data_source_type": "file_id", "file_id": "file-train-1"},
    {"type": "validation", "data_source_type": "file_id", "file_id": "file-val-1"},
]


def _job(**over: Any) -> dict[str, Any]:
    spec = {
        "name": "sdk-job",
        "model": "qwen3.5-9b",
        "functions": [ROLLOUT, REWARD],
        "datasets": DATASETS,
        "hyper_parameters": HP,
        "resources": RESOURCES,
    }
    spec.update(over)
    return copy.deepcopy(spec)


def _with(fn: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {**copy.deepcopy(fn), **over}


# One job per SDK feature the guide's layout had no word for, and the rules that read them.
SPECS: dict[str, dict[str, Any]] = {
    "dense_gspo": _job(),
    "moe_grpo": _job(model="qwen3.5-35b-a3b", hyper_parameters={**MOE_HP, "algorithm": "grpo"}),
    "moe_gspo": _job(model="qwen3.5-35b-a3b", hyper_parameters=MOE_HP),
    "group_reward": _job(
        functions=[ROLLOUT, REWARD, _with(REWARD, type="group_reward", name="group-1", weight=0.5)]
    ),
    "filepath_classname": _job(
        functions=[
            ROLLOUT,
            _with(REWARD, fcmodel={"filepath": "functions/reward/math.py", "classname": "M"}),
        ]
    ),
    "cpu_half": _job(functions=[_with(ROLLOUT, runtime={**RUNTIME, "cpu": 0.5}), REWARD]),
    "testing_dataset": _job(
        datasets=[*DATASETS, {"type": "testing", "data_source_type": "file_id", "file_id": "t"}]
    ),
    "teacher_pg_opd": _job(
        teacher_model="qwen3.5-35b-a3b", training_type="pg_opd", functions=[ROLLOUT]
    ),
    "download_and_mount": _job(
        datasets=[
            {
                "type": "training",
                "data_source_type": "download_url",
                "download_url": "https://example.com/train.jsonl",
            },
            {
                "type": "validation",
                "data_source_type": "oss_mount",
                "mount_storage": {"region": "cn-beijing", "bucket": "b", "file_path": "v.jsonl"},
            },
        ]
    ),
    "registered_entities": _job(
        functions=[
            {
                "type": "rollout",
                "name": "r",
                "timeout": 900,
                "entity_id": "ro-123",
                "runtime": RUNTIME,
            },
            {
                "type": "reward",
                "name": "w",
                "timeout": 120,
                "entity_id": "rw-456",
                "runtime": RUNTIME,
            },
        ]
    ),
    "two_rewards_one_weight": _job(
        functions=[ROLLOUT, REWARD, _with(REWARD, name="reward-2", weight=None)]
    ),
    "small_runtime": _job(
        functions=[_with(ROLLOUT, timeout=60, runtime={**RUNTIME, "memory_size": 1024}), REWARD]
    ),
    "full_runtime": _job(
        functions=[
            _with(
                ROLLOUT,
                runtime={
                    **RUNTIME,
                    "layer_code": "layer-1",
                    "enable_vpc_config": True,
                    "security_group_id": "sg-1",
                    "switch_ids": ["vsw-1", "vsw-2"],
                    "vpc_id": "vpc-1",
                    "vpc_role": "role",
                    "enable_log": True,
                    "env": {"ENABLE_TRAJECTORY": True},
                },
            ),
            REWARD,
        ]
    ),
    "lr_above_dense_range": _job(hyper_parameters={**HP, "learning_rate": 1e-5}),
}

_CLASS = {
    "rollout": "RolloutFunctionComponent",
    "reward": "RewardFunctionComponent",
    "group_reward": "GroupRewardFunctionComponent",
}


def _sdk_model(spec: dict[str, Any]) -> Any:
    """The job built with the SDK's own classes."""
    functions = []
    for fn in spec["functions"]:
        fields = {k: v for k, v in fn.items() if v is not None}
        if "fcmodel" in fields:
            fields["fcmodel"] = sdk.FunctionComponentModel(**fields["fcmodel"])
        fields["runtime"] = sdk.FunctionComponentRuntime(**fields["runtime"])
        functions.append(getattr(sdk, _CLASS[fn["type"]])(**fields))
    datasets = []
    for ds in spec["datasets"]:
        fields = dict(ds)
        if "mount_storage" in fields:
            fields["mount_storage"] = sdk.MountStorage(**fields["mount_storage"])
        datasets.append(sdk.Dataset(**fields))
    return sdk.TuningModel(
        name=spec["name"],
        model=sdk.FoundationModel(name=spec["model"]),
        teacher_model=spec.get("teacher_model"),
        functions=functions,
        datasets=datasets,
        training=sdk.Training(
            type=types.TrainingType(spec.get("training_type", "reinforcement")),
            hyper_parameters=spec["hyper_parameters"],
            resources=spec["resources"],
        ),
    )


def _guide_twin(spec: dict[str, Any]) -> dict[str, Any]:
    """The same job in the guide's layout (job_name, model as a string, mode)."""
    doc: dict[str, Any] = {"job_name": spec["name"], "model": spec["model"]}
    if "teacher_model" in spec:
        doc["teacher_model"] = spec["teacher_model"]
    doc["mode"] = spec.get("training_type", "reinforcement")
    doc["datasets"] = spec["datasets"]
    doc["functions"] = [{k: v for k, v in fn.items() if v is not None} for fn in spec["functions"]]
    doc["training"] = {"hyper_parameters": spec["hyper_parameters"], "resources": spec["resources"]}
    return copy.deepcopy(doc)


@cache
def _written() -> dict[str, tuple[Path, Path]]:
    """Each job as the SDK writes it, and its guide-layout twin (one directory per session)."""
    root = Path(tempfile.mkdtemp(prefix="sdk-jobs-"))
    out = {}
    for name, spec in SPECS.items():
        sdk_path, guide_path = root / f"{name}.sdk.yaml", root / f"{name}.guide.yaml"
        _sdk_model(spec).to_yaml(str(sdk_path))
        write_yaml(_guide_twin(spec), guide_path)
        out[name] = (sdk_path, guide_path)
    return out


def _ids(path: Path, drop: tuple[str, ...] = ()) -> list[tuple[str, str, tuple[str, ...]]]:
    _, diag = validate_job(path)
    return sorted(
        (f.id, f.severity.value, tuple(f.params)) for f in diag.config_findings if f.id not in drop
    )


def test_there_are_a_dozen_sdk_written_jobs() -> None:
    assert len(SPECS) >= 12
    for sdk_path, _ in _written().values():
        assert sdk.TuningModel.load_from_yaml(str(sdk_path)).name == "sdk-job"


@pytest.mark.parametrize("name", list(SPECS))
def test_an_sdk_file_is_judged_as_its_guide_twin(name: str) -> None:
    sdk_path, guide_path = _written()[name]
    assert load_config(sdk_path).layout == "sdk"
    assert load_config(guide_path).layout == "yaml"
    # the twin differs by its layout alone, which C008 names once
    assert _ids(sdk_path) == _ids(guide_path, drop=("C008",))
    assert "C008" in {f[0] for f in _ids(guide_path)}


@pytest.mark.parametrize("name", list(SPECS))
def test_a_file_the_sdk_wrote_has_no_load_error(name: str) -> None:
    """Unknown keys, wrong types, bad choices (C001-C004): the SDK took the file, so do we."""
    sdk_path, _ = _written()[name]
    bad = [f for f in _ids(sdk_path) if f[0] in ("C001", "C002", "C003", "C004", "C009")]
    assert bad == []


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("moe_grpo", "C301"),  # GSPO is mandatory for MoE: the model is read from model.name
        ("lr_above_dense_range", "C304"),
        ("two_rewards_one_weight", "C515"),  # the group reward and the rewards alike
        ("small_runtime", "C501"),
        ("small_runtime", "C506"),
        ("full_runtime", "C514"),
    ],
)
def test_model_and_function_rules_fire_on_sdk_files(name: str, rule: str) -> None:
    sdk_path, _ = _written()[name]
    hits = [f for f in validate_job(sdk_path)[1].config_findings if f.id == rule]
    assert hits and all(f.line for f in hits), rule


def test_findings_cite_the_line_of_the_sdk_file() -> None:
    sdk_path, _ = _written()["moe_grpo"]
    lines = sdk_path.read_text().splitlines()
    (c301,) = [f for f in validate_job(sdk_path)[1].config_findings if f.id == "C301"]
    assert c301.line is not None and lines[c301.line - 1].strip() == "algorithm: grpo"


def test_the_lr_cap_by_model_size_holds_on_sdk_files() -> None:
    from advisor.static import scale_caps

    sdk_path, guide_path = _written()["dense_gspo"]
    assert scale_caps(load_config(sdk_path)) == scale_caps(load_config(guide_path))
    assert scale_caps(load_config(sdk_path)) == {"learning_rate": 7e-6}


def test_the_teacher_needs_no_rollout_or_reward() -> None:
    sdk_path, _ = _written()["teacher_pg_opd"]
    loaded = load_config(sdk_path)
    assert (loaded.config.teacher_model, loaded.config.mode) == ("qwen3.5-35b-a3b", "pg_opd")
    assert "C517" not in {f[0] for f in _ids(sdk_path)}


def test_guide_keys_in_an_sdk_file_point_at_the_sdk_field(tmp_path: Path) -> None:
    sdk_path, _ = _written()["dense_gspo"]
    text = sdk_path.read_text().replace("name: sdk-job", "job_name: sdk-job", 1)
    path = tmp_path / "job.yaml"
    path.write_text(text)
    (c001,) = [f for f in load_config(path).findings if f.id == "C001"]
    assert c001.suggested == "name" and "job_name" not in str(c001.suggested)


# ---------------------------------------------------------------------------------------------
# Patches


def _changed(doc: Any, changes: dict[str, Any]) -> Any:
    """`doc` (as PyYAML loads it) with `changes` made where write_patched puts them."""
    doc = copy.deepcopy(doc)
    hp = doc["training"]["hyper_parameters"]
    for key, value in changes.items():
        if key.startswith("functions."):
            _, i, _, field = key.split(".")
            doc["functions"][int(i)]["runtime"][field] = value
        elif key == "mtu_capacity":
            doc["training"]["resources"][key] = value
        else:
            hp[key] = value
    return doc


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(SPECS)),
    lr=st.floats(1e-9, 1e-2, allow_subnormal=False),
    kl=st.floats(0, 1),
    batch=st.integers(1, 4096),
    memory=st.integers(128, 65536),
    mtu=st.integers(1, 512),
)
def test_every_patch_of_an_sdk_file_loads_in_the_sdk(
    name: str, lr: float, kl: float, batch: int, memory: int, mtu: int
) -> None:
    sdk_path, _ = _written()[name]
    changes = {
        "learning_rate": lr,
        "kl_loss_coef": kl,
        "batch_size": batch,
        "functions.0.runtime.memory_size": memory,
        "mtu_capacity": mtu,
    }
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "patched.yaml"
        write_patched(sdk_path, changes, dest)
        job = sdk.TuningModel.load_from_yaml(str(dest))
        hp = job.training.hyper_parameters
        assert (hp["learning_rate"], hp["kl_loss_coef"], hp["batch_size"]) == (lr, kl, batch)
        assert job.functions[0].runtime.memory_size == memory
        before = yaml.safe_load(sdk_path.read_text())
        after = yaml.safe_load(dest.read_text())
        # the advised values alone differ, and the order of every mapping is kept
        want = _changed(before, changes)
        assert json.dumps(after) == json.dumps(want)


def test_the_advice_on_a_run_patches_its_sdk_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """P1's advice through the real entry point: the patch is an SDK file the SDK loads, with
    the learning rate capped by the model's size (9B: 7e-6), as on the guide's layout."""
    run = Path(__file__).resolve().parents[2] / "sample_metrics/corpus/p1-flat-trl-state-s0000"
    guide_job = run / "job.yaml"
    sdk_job = tmp_path / "job.sdk.yaml"
    text, _ = sdk_layout_text(guide_job)
    sdk_job.write_text(text)
    patched = {}
    for job in (guide_job, sdk_job):
        dest = tmp_path / f"patched-{job.stem}.yaml"
        code = main(
            [
                "diagnose",
                str(run / "trainer_state.json"),
                "--config",
                str(job),
                "--patched-config",
                str(dest),
                "--format",
                "json",
            ]
        )
        capsys.readouterr()
        assert code == 1 and dest.exists()
        patched[job] = yaml.safe_load(dest.read_text())["training"]["hyper_parameters"]
    loaded = sdk.TuningModel.load_from_yaml(str(tmp_path / "patched-job.sdk.yaml"))
    lr = loaded.training.hyper_parameters["learning_rate"]
    assert isinstance(lr, float) and 2e-6 < lr <= 7e-6
    assert patched[guide_job] == patched[sdk_job]


# ---------------------------------------------------------------------------------------------
# Conversion and the job objects the platform returns


@pytest.mark.parametrize(
    "name",
    [
        "guide_config.yaml",
        "dapo_kl0.yaml",
        "moe_35b_a3b.yaml",
        "guide_run_kwargs.json",
        "guide_submit_job.yaml",
        "guide_hyper_parameters.yaml",
    ],
)
def test_every_sample_job_converts_to_a_file_the_sdk_loads(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = JOBS / name
    before = src.read_bytes()
    dest = tmp_path / "job.sdk.yaml"
    code = main(["validate", str(src), "--convert-to", "sdk", "-o", str(dest)])
    out, err = capsys.readouterr()
    assert code in (0, 1) and f"wrote {dest}" in err
    assert src.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [dest.name]
    sdk.TuningModel.load_from_yaml(str(dest))
    assert "C008" not in out and "C009" not in out
    # the same job: every hyperparameter and the model read alike
    a, b = load_config(src), load_config(dest)
    assert (a.hyper_parameters, a.config.model) == (b.hyper_parameters, b.config.model)


def test_conversion_keeps_comments(tmp_path: Path) -> None:
    text, _ = sdk_layout_text(JOBS / "guide_config.yaml")
    assert "# learning rate" in text and "learning_rate: 2.0e-06" in text
    assert text.count("#") == (JOBS / "guide_config.yaml").read_text().count("#")


def test_convert_without_output_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", str(JOBS / "guide_config.yaml"), "--convert-to", "sdk"])
    _, err = capsys.readouterr()
    assert code == 2 and "--output" in err and len(err.strip().splitlines()) == 1


PLATFORM_JOB = {
    "job_id": "ft-202612051200-abcd",
    "job_name": "moe-grpo-1a2b3c4d",
    "status": "SUCCEEDED",
    "model": "qwen3.5-35b-a3b",
    "base_model": "qwen3.5-35b-a3b",
    "finetuned_output": "qwen3.5-35b-a3b-ft-abcd",
    "training_file_ids": ["file-train-1"],
    "validation_file_ids": ["file-val-1"],
    "hyper_parameters": {**{k: str(v) for k, v in MOE_HP.items()}, "algorithm": "grpo"},
    "training_type": "reinforcement",
    "create_time": "2026-12-05 12:00:00",
    "end_time": "2026-12-05 18:00:00",
    "user_identity": "u-1",
    "modifier": "u-1",
    "creator": "u-1",
    "group": "llm",
    "usage": 123456,
}


@pytest.mark.parametrize("listing", [False, True])
def test_a_platform_job_object_is_read_as_a_job(tmp_path: Path, listing: bool) -> None:
    path = tmp_path / "job.json"
    doc: Any = {"jobs": [PLATFORM_JOB], "page_no": 1, "total": 1} if listing else PLATFORM_JOB
    path.write_text(json.dumps(doc, indent=2))
    loaded, diag = validate_job(path)
    assert loaded.layout == "platform"
    assert loaded.config.model == "qwen3.5-35b-a3b"
    assert loaded.hyper_parameters["learning_rate"] == 4e-6  # sent as the string "4e-06"
    ids = {f.id for f in diag.config_findings}
    assert "C001" not in ids and "C301" in ids  # MoE + grpo, as on the job file
    assert any("ft-202612051200-abcd" in note for note in diag.assumptions)


def test_a_listing_of_several_jobs_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps({"jobs": [PLATFORM_JOB, PLATFORM_JOB]}))
    code = main(["validate", str(path)])
    _, err = capsys.readouterr()
    assert code == 2 and "2 platform jobs" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("path", sorted(JOBS.glob("sdk_*.yaml")), ids=lambda p: p.name)
def test_the_shipped_sdk_samples_load_in_the_sdk(path: Path) -> None:
    sdk.TuningModel.load_from_yaml(str(path))
    loaded, diag = validate_job(path)
    assert loaded.layout == "sdk"
    assert not {"C001", "C002", "C003", "C004", "C008", "C009"} & {
        f.id for f in diag.config_findings
    }
    twin = JOBS / path.name.removeprefix("sdk_")
    assert _ids(path) == _ids(twin, drop=("C008", "C009"))


@given(st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False))
def test_a_written_float_is_a_number_to_yaml_1_1_and_1_2(value: float) -> None:
    from ruamel.yaml import YAML

    from advisor.config import yaml11_number

    text = yaml11_number(value)
    assert yaml.safe_load(text) == value  # PyYAML: YAML 1.1, the SDK's loader
    assert YAML(typ="safe", pure=True).load(text) == value  # ruamel: YAML 1.2


_runtimes = st.fixed_dictionaries(
    {},
    optional={
        "cpu": st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0, 8.0]),
        "memory_size": st.integers(128, 65536),
        "disk_size": st.integers(64, 10240),
        "concurrency": st.integers(1, 200),
        "capacity": st.integers(0, 50),
        "max_capacity": st.integers(50, 200),
        "memory_scale_threshold": st.floats(0, 1),
        "concurrency_scale_threshold": st.floats(0, 1),
        "enable_vpc_config": st.booleans(),
        "enable_log": st.booleans(),
        "switch_ids": st.lists(st.text("abcdef0123456789-", min_size=1), max_size=3),
        "layer_code": st.text("abcdef0123456789-", min_size=1, max_size=12),
        "env": st.dictionaries(st.sampled_from(["A", "ENABLE_TRAJECTORY"]), st.booleans()),
    },
)
_functions = st.lists(
    st.builds(
        dict,
        type=st.sampled_from(["rollout", "reward", "group_reward"]),
        name=st.text("abcxyz-", min_size=1, max_size=8),
        timeout=st.integers(1, 3600),
        runtime=_runtimes,
        fcmodel=st.sampled_from(
            [{"classpath": "functions.f.F"}, {"filepath": "functions/f.py", "classname": "F"}]
        ),
    ),
    max_size=4,
)
_datasets = st.lists(
    st.builds(
        dict,
        type=st.sampled_from(["training", "validation", "testing"]),
        data_source_type=st.just("file_id"),
        file_id=st.text("abc123-", min_size=1, max_size=8),
    ),
    max_size=3,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    functions=_functions,
    datasets=_datasets,
    model=st.sampled_from(["qwen3.5-9b", "qwen3.5-35b-a3b", "my-model"]),
    training_type=st.sampled_from(["reinforcement", "pg_opd"]),
    lr=st.floats(1e-8, 1e-3),
)
def test_no_load_error_on_any_file_the_sdk_writes(
    functions: list[dict[str, Any]],
    datasets: list[dict[str, Any]],
    model: str,
    training_type: str,
    lr: float,
) -> None:
    """Whatever valid job the SDK's classes hold and write, the file is read without an unknown
    key, a wrong type or a bad choice (C001-C004), and without a number C009 would respell."""
    spec = _job(
        model=model,
        functions=functions,
        datasets=datasets,
        training_type=training_type,
        hyper_parameters={**HP, "learning_rate": lr},
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.yaml"
        _sdk_model(spec).to_yaml(str(path))
        loaded = load_config(path)
        assert loaded.layout == "sdk"
        bad = [
            (f.id, f.message)
            for f in loaded.findings
            if f.id in ("C001", "C002", "C003", "C004", "C009")
        ]
        assert bad == []
        assert [f.type for f in loaded.config.functions] == [f["type"] for f in functions]
        assert loaded.hyper_parameters["learning_rate"] == lr


def test_strings_yaml_1_2_would_read_as_numbers_are_read_as_the_sdk_reads_them(
    tmp_path: Path,
) -> None:
    """PyYAML writes the strings '0e0' and '1e09' unquoted (numbers to YAML 1.2 only) and
    reads `yes` as true: the SDK's reading is the one that counts."""
    spec = _job(
        functions=[
            _with(
                ROLLOUT,
                runtime={
                    **RUNTIME,
                    "layer_code": "0e0",
                    "switch_ids": ["1e09"],
                    "enable_log": True,
                },
            )
        ]
    )
    path = tmp_path / "job.yaml"
    _sdk_model(spec).to_yaml(str(path))
    text = path.read_text().replace("enable_log: true", "enable_log: yes")
    assert "layer_code: 0e0" in text and "- 1e09" in text and "enable_log: yes" in text
    path.write_text(text)
    loaded = load_config(path)
    runtime = loaded.config.functions[0].runtime or {}
    assert (runtime["layer_code"], runtime["switch_ids"], runtime["enable_log"]) == (
        "0e0",
        ["1e09"],
        True,
    )
    assert not [f for f in loaded.findings if f.id in ("C002", "C009")]


@pytest.mark.parametrize(("name", "code"), [("moe_grpo", 1), ("dense_gspo", 0)])
def test_validate_of_an_sdk_file_through_the_entry_point(
    name: str, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    sdk_path, _ = _written()[name]
    assert main(["validate", str(sdk_path), "--format", "json"]) == code
    data = json.loads(capsys.readouterr().out)
    ids = {f["id"] for f in data["config_findings"]}
    assert ("C301" in ids) == (name == "moe_grpo")
    assert not ids & {"C001", "C002", "C004", "C008", "C009"}
    assert main(["validate", str(sdk_path)]) == code
    assert "(sdk layout," in capsys.readouterr().out


def test_show_config_of_an_sdk_file_speaks_the_sdk_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = JOBS / "sdk_moe_35b_a3b.yaml"
    main(["validate", str(path), "--show-config", "--format", "json"])
    config = json.loads(capsys.readouterr().out)["config"]
    assert config["name"] == "moe-math" and config["model"] == {"name": "qwen3.5-35b-a3b"}
    assert config["training_type"] == "reinforcement" and "job_name" not in config


def _set(path: str, value: Any) -> Any:
    def mutate(doc: dict[str, Any]) -> None:
        node: Any = doc
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return mutate


@pytest.mark.parametrize(
    ("mutation", "sdk_takes_it"),
    [
        (_set("job_name", "x"), False),  # the guide's key
        (_set("model", "qwen3.5-9b"), False),  # the guide's model string
        (_set("functions.0.runtime.cpu", "two"), False),
        (_set("functions.0.timeout", 1.5), False),
        (_set("functions.0.type", "critic"), False),
        (_set("functions.0.fcmodel.module", "a.b"), False),
        (_set("datasets.0.type", "dev"), False),
        (_set("training.type", "sft"), False),
        (_set("model.size", "9b"), False),
        (_set("functions.0.runtime.cpu", 0.5), True),
        (_set("functions.0.type", "group_reward"), True),
        (_set("datasets.0.type", "testing"), True),
        (_set("training.hyper_parameters.custom_knob", 1), True),  # a plain dict to the SDK
        (_set("observability", {"anything": 1}), True),
    ],
)
def test_a_load_error_exactly_where_the_sdk_refuses_the_file(
    mutation: Any, sdk_takes_it: bool, tmp_path: Path
) -> None:
    sdk_path, _ = _written()["dense_gspo"]
    doc = yaml.safe_load(sdk_path.read_text())
    mutation(doc)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        sdk.TuningModel.load_from_yaml(str(path))
        took = True
    except Exception:
        took = False
    assert took == sdk_takes_it
    errors = [
        (f.id, f.message)
        for f in load_config(path).findings
        if f.id in ("C001", "C002", "C004") and f.severity.value == "error"
    ]
    assert bool(errors) == (not sdk_takes_it), errors


def test_set_takes_the_sdk_names_of_the_job_fields() -> None:
    loaded = load_config(
        JOBS / "sdk_guide_config.yaml",
        sets=["model.name=qwen3.5-35b-a3b", "training.type=pg_opd", "name=next"],
    )
    assert (loaded.config.model, loaded.config.mode, loaded.config.job_name) == (
        "qwen3.5-35b-a3b",
        "pg_opd",
        "next",
    )
