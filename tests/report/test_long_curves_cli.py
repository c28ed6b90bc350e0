"""Long curves through `rl-advisor diagnose` (the real entry point): a reference that does not
match (REF), a KL inside the reward, a collapse inside the warm-up with the compute it wastes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from advisor.cli import main


def _verl_log(path: Path, cols: dict[str, np.ndarray]) -> Path:
    n = len(next(iter(cols.values())))
    lines = [
        f"step:{i + 1} - " + " - ".join(f"{k}:{float(v[i]):.6g}" for k, v in cols.items())
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _diagnose(capsys, path: Path, *extra: str) -> tuple[int, dict]:
    code = main(["diagnose", str(path), "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _healthy(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1, dtype=float)
    reward = 0.2 + 0.6 * (1 - np.exp(-t / (0.3 * n))) + rng.normal(0, 0.02, n)
    return {
        "critic/rewards/mean": reward,
        "actor/grad_norm": 0.5 * np.exp(rng.normal(0, 0.15, n)),
        "actor/entropy": 0.8
        * (0.6 + 0.4 * np.exp(-t / (0.5 * n)))
        * np.exp(rng.normal(0, 0.03, n)),
        "response_length/mean": 600 * np.exp(rng.normal(0, 0.03, n)),
        "response_length/clip_ratio": np.clip(0.01 + rng.normal(0, 0.004, n), 0, 1),
    }


def test_kl_near_one_from_step_one_is_ref_with_no_parameter_to_change(tmp_path, capsys) -> None:
    cols = _healthy(300, 1)
    cols["actor/kl_loss"] = 1.0 * np.exp(np.random.default_rng(2).normal(0, 0.05, 300))
    log = _verl_log(tmp_path / "train.log", cols)
    code, data = _diagnose(capsys, log, "--set", "eval_steps=20")
    ids = {f["id"]: f for f in data["findings"]}
    assert code == 1 and "REF" in ids and "P3" not in ids
    ref = ids["REF"]
    assert ref["severity"] == "error" and ref["onset_step"] == 1
    assert ref["action"]["changes"] == [] and "reference model" in ref["action"]["advice"]
    assert ref["evidence"][0]["statistic"]["first"] >= 0.1
    assert data["patch"]["from_finding"] == "REF" and data["patch"]["changes"] == []


def test_in_reward_kl_rising_to_a_third_of_a_nat_is_not_p3(tmp_path, capsys) -> None:
    n = 435
    t = np.arange(1, n + 1, dtype=float)
    rng = np.random.default_rng(3)
    kl = (0.32 * (t / n) ** 3 + 1e-4) * np.exp(rng.normal(0, 0.1, n))
    as_loss = {**_healthy(n, 3), "actor/kl_loss": kl}
    _, data = _diagnose(capsys, _verl_log(tmp_path / "loss.log", as_loss), "--set", "eval_steps=10")
    assert "P3" in {f["id"] for f in data["findings"]}  # the KL loss's yardstick
    in_reward = {**_healthy(n, 3), "critic/kl": kl}
    log = _verl_log(tmp_path / "reward.log", in_reward)
    _, data = _diagnose(capsys, log, "--set", "eval_steps=10")
    assert "P3" not in {f["id"] for f in data["findings"]}
    assert any("inside the reward" in a for a in data.get("assumptions", []))


def test_a_collapse_inside_the_warm_up_is_p4_and_its_waste_is_measured(tmp_path, capsys) -> None:
    rng = np.random.default_rng(5)
    lines = []
    for i, step in enumerate(range(10, 500, 10)):
        fall = min(i / 3, 1.0)
        ent = 0.96 * (0.1 / 0.96) ** fall if i <= 3 else rng.uniform(0.02, 0.08)
        length = 53 * (3.5 / 53) ** fall if i <= 3 else rng.uniform(2, 5)
        grad = 0.0 if (i >= 8 and rng.random() < 0.85) else 0.05 * np.exp(rng.normal(0, 0.3))
        d = {"loss": 0.0, "grad_norm": grad, "learning_rate": 1e-5, "reward": 0.05,
             "reward_std": 0.0, "frac_reward_zero_std": 1.0 if grad == 0 else 0.75,
             "completions/mean_length": length, "entropy": ent, "epoch": step / 500}  # fmt: skip
        lines.append(repr({k: float(v) for k, v in d.items()}))
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n")
    code, data = _diagnose(capsys, path)
    ids = {f["id"]: f for f in data["findings"]}
    assert code == 1 and ids["P4"]["severity"] == "warning"  # (a constant reward 0.05: P1 too)
    waste = {e["metric"]: e for e in ids["WASTE"]["evidence"]}
    stat = waste["grad_zero"]["statistic"]
    assert 0.6 <= stat["share"] <= 1.0 and stat["difficulty"] == "too_hard"
    assert "too hard" in waste["grad_zero"]["summary"]
