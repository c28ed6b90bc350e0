"""Jobs written in Python as the guide shows them: client.run(...) / submit_job(...)."""

from __future__ import annotations

from pathlib import Path

from advisor.config import load_config, write_patched

RUN = """rollout_runtime = {"cpu": 2, "memory_size": 4096, "concurrency": 30}
client = AgenticRL()
result = await client.run(
    model="qwen3.5-9b",
    functions=[
        RolloutFunctionComponent(
            name="rollout-1",
            fcmodel=FunctionComponentModel(classpath="functions.rollout.rollout.R"),
            runtime=FunctionComponentRuntime(**rollout_runtime, capacity=5)),
        AgenticRLFunctionComponent(type=FunctionType.REWARD, entity_id="rw-1"),
    ],
    hyper_parameters={"algorithm": "grpo", "learning_rate": "2e-4", "n_epochs": -1},
)
"""


def test_run_call_is_read_with_lines(tmp_path: Path) -> None:
    path = tmp_path / "job.py"
    path.write_text(RUN, encoding="utf-8")
    loaded = load_config(path)
    assert loaded.layout == "keyword" and loaded.config.model == "qwen3.5-9b"
    rollout, reward = loaded.config.functions
    assert rollout.type == "rollout" and rollout.runtime == {
        "cpu": 2, "memory_size": 4096, "concurrency": 30, "capacity": 5,
    }  # fmt: skip
    assert rollout.fcmodel and rollout.fcmodel.classpath == "functions.rollout.rollout.R"
    assert reward.type == "reward" and reward.entity_id == "rw-1"
    assert loaded.hyper_parameters["algorithm"] == "grpo"
    assert loaded.hyper_parameters["learning_rate"] == 2e-4
    bad = [f for f in loaded.findings if f.id == "C003"]
    assert bad and bad[0].params == ["n_epochs"] and bad[0].line == 12


def test_python_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "job.py"
    path.write_text(
        f"run(model=open({str(marker)!r}, 'w').write('x'), hyper_parameters={{}})\n",
        encoding="utf-8",
    )
    loaded = load_config(path)
    assert not marker.exists()
    assert loaded.config.model is None  # a call is no model name: reported, never run
    assert any(f.id == "C002" and f.params == ["model"] for f in loaded.findings)


def test_patching_a_python_job_writes_the_yaml_keyword_form(tmp_path: Path) -> None:
    src = tmp_path / "job.py"
    src.write_text(RUN, encoding="utf-8")
    before = src.read_bytes()
    dest = tmp_path / "patched.yaml"
    write_patched(src, {"learning_rate": 1e-6}, dest)
    assert src.read_bytes() == before
    again = load_config(dest)
    assert again.hyper_parameters["learning_rate"] == 1e-6
    assert again.config.functions[0].runtime == {
        "cpu": 2, "memory_size": 4096, "concurrency": 30, "capacity": 5,
    }  # fmt: skip


def test_the_sdk_classes_of_a_group_reward_and_a_teacher_are_read(tmp_path: Path) -> None:
    path = tmp_path / "job.py"
    path.write_text(
        """client.submit_job(
    model="qwen3.5-9b",
    teacher_model="qwen3.5-35b-a3b",
    functions=[
        GroupRewardFunctionComponent(name="g", weight=0.5, timeout=120,
            fcmodel=FunctionComponentModel(filepath="functions/g.py", classname="G")),
    ],
    datasets=[Dataset(type=DatasetsType.TESTING, file_id="file-t")],
    hyper_parameters={"algorithm": "gspo"},
)
""",
        encoding="utf-8",
    )
    loaded = load_config(path)
    (group,) = loaded.config.functions
    assert (group.type, group.weight) == ("group_reward", 0.5)
    assert group.fcmodel and (group.fcmodel.filepath, group.fcmodel.classname) == (
        "functions/g.py",
        "G",
    )
    assert loaded.config.teacher_model == "qwen3.5-35b-a3b"
    assert [d.type for d in loaded.config.datasets] == ["testing"]
    assert not [f for f in loaded.findings if f.id in ("C001", "C002", "C004")]
