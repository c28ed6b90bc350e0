"""Writes the two rlprobe recordings beside this file (rlprobe-a/, rlprobe-b/) with rlprobe's
own Recorder, so the diff's reader is tested on the format rlprobe writes. rlprobe is not a
dependency of the advisor: run this with rlprobe installed in a scratch environment,
`pip install rlprobe==0.1.0 && python tests/diff/records/make_rlprobe.py`.

Two runs of 40 steps over six arithmetic prompts, samples every 10 steps (two completions
per prompt, a group of 12: rlprobe keeps them all). Run B does worse than A on the prompts
about 7 and better on the one about 2; the other prompts score alike."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

from rlprobe import Recorder
from rlprobe.recorder.sampling import SamplingConfig

HERE = Path(__file__).resolve().parent
PROMPTS = ["2 + 2 =", "3 + 4 =", "7 * 7 =", "9 - 1 =", "7 + 5 =", "6 / 3 ="]
# the reward each run earns on each prompt once trained (it starts at 0.2)
FINAL = {
    "a": [0.5, 0.8, 0.9, 0.7, 0.85, 0.6],
    "b": [0.95, 0.8, 0.3, 0.7, 0.35, 0.6],
}


def record(name: str) -> None:
    out = HERE / f"rlprobe-{name}"
    shutil.rmtree(out, ignore_errors=True)
    rec = Recorder(
        out,
        algorithm="grpo",
        run_id=f"rlprobe-{name}",
        model_name="tiny",
        trainer_config={"learning_rate": 1e-6 if name == "a" else 3e-6, "num_generations": 2},
        capture_env=False,
        install_handlers=False,
        sampling=SamplingConfig(top_k=2, bottom_k=2, random_k=8),
    )
    for step in range(1, 41):
        done = 1 - math.exp(-step / 12)
        rewards = [0.2 + (f - 0.2) * done for f in FINAL[name]]
        mean = sum(rewards) / len(rewards)
        rec.log_step(
            step,
            reward_mean=mean + 0.01 * math.sin(step),
            reward_std=0.2,
            kl_mean=0.001 * step,
            entropy_mean=1.2 - 0.01 * step,
            completion_len_mean=20 + math.cos(step),
            grad_norm=0.5 + 0.05 * math.sin(3 * step),
            lr=1e-6,
        )
        if step % 10 == 0:
            samples = []
            for i, (prompt, r) in enumerate(zip(PROMPTS, rewards, strict=True)):
                for k, delta in enumerate((-0.05, 0.05)):
                    samples.append(
                        {
                            "sample_id": f"{step}-{i}-{k}",
                            "group_id": f"{step}-g{i}",
                            "prompt_id": f"q{i}",
                            "prompt_text": prompt,
                            "completion_text": f" {i}{k}",
                            "reward_total": round(r + delta, 6),
                            "reward_components": {"correct": round(r + delta, 6)},
                        }
                    )
            rec.log_samples(step, samples)
    rec.close()


if __name__ == "__main__":
    record("a")
    record("b")
