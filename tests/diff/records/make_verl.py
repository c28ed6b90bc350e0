"""Writes verl generation dumps beside this file (verl-a/, verl-b/) with verl's own writer
(`RayPPOTrainer._write_generations`, what `trainer.validation_data_dir` and
`trainer.rollout_data_dir` get), so the diff's reader is tested on the format verl writes.
Run with verl installed: `python tests/diff/records/make_verl.py`.

Both runs validate on five GSM8K-style prompts at steps 0, 20 and 40, four samples each, and
B once more at step 60 (A's run ended before it); A also dumps its training rollouts at steps
1 and 2. At step 40, B scores lower than A on the prompts about apples and trains and higher
on the one about a bakery; the other two score alike."""

from __future__ import annotations

import shutil
from pathlib import Path

from verl.trainer.ppo.ray_trainer import RayPPOTrainer

HERE = Path(__file__).resolve().parent
QUESTIONS = [
    "Janet has 3 apples and buys 5 more. How many apples does she have?",
    "A train travels 60 km in 1.5 hours. What is its speed in km/h?",
    "A bakery sells 12 rolls a dozen. How many rolls are in 4 dozen?",
    "Tom reads 7 pages a day. How many pages in 3 weeks?",
    "What is 15% of 80?",
]
ANSWERS = ["8", "40", "48", "147", "12"]
# how many of the four samples each run gets right, by step
RIGHT = {
    "a": {0: [1, 0, 1, 0, 1], 20: [2, 1, 1, 1, 2], 40: [4, 3, 1, 2, 3]},
    "b": {0: [1, 0, 1, 0, 1], 20: [1, 1, 2, 1, 2], 40: [1, 1, 4, 2, 3], 60: [0, 0, 4, 2, 3]},
}


def chat(question: str) -> str:
    return f"system\nYou are a helpful assistant.\nuser\n{question}\nassistant\n"


def dump(folder: Path, step: int, right: list[int]) -> None:
    inputs, outputs, gts, scores, acc = [], [], [], [], []
    for q, answer, n in zip(QUESTIONS, ANSWERS, right, strict=True):
        for k in range(4):
            ok = k < n
            inputs.append(chat(q))
            outputs.append(f"... so the answer is #### {answer if ok else '0'}")
            gts.append(answer)
            scores.append(1.0 if ok else 0.0)
            acc.append(ok)
    RayPPOTrainer._write_generations(inputs, outputs, gts, scores, {"acc": acc}, str(folder), step)


def main() -> None:
    for name, steps in RIGHT.items():
        out = HERE / f"verl-{name}"
        shutil.rmtree(out, ignore_errors=True)
        for step, right in steps.items():
            dump(out / "val_generations", step, right)
    for step in (1, 2):
        dump(HERE / "verl-a" / "rollout_data", step, [1, 1, 1, 1, 1])


if __name__ == "__main__":
    main()
