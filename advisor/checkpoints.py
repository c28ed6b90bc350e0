"""Which checkpoint to publish: the best validation reward, if the job's save settings kept it
(knowledge.md §6). Reads the validation curve and the job's save settings only; the API puts
its advice in the Diagnosis (`Diagnosis.checkpoint`), the report says it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.config import HyperParams


def saved_steps(
    hp: HyperParams,
    last_step: int,
    training_samples: int | None = None,
    completed: bool = True,
) -> tuple[list[int] | None, str]:
    """Steps at which the job saved a checkpoint, as far as its save settings tell.

    Returns (steps or None when unknowable, a note on what was assumed). The final step of a
    completed run is counted as saved (trainers save at the end), and said so; a crashed run
    did not get there.
    """
    strategy = hp.get("save_strategy")
    if strategy == "no":
        return [], "save_strategy=no saves no checkpoint"
    if strategy == "steps":
        every = hp.get("save_steps")
        if not isinstance(every, int) or every < 1:
            return None, "save_steps is unknown"
        steps = list(range(every, last_step + 1, every))
        note = f"save_strategy=steps saves every {every} steps"
    elif strategy == "epoch":
        bs = hp.get("batch_size")
        if not training_samples or not isinstance(bs, int):
            return (
                None,
                "save_strategy=epoch: the epoch length is unknown (pass --training-samples)",
            )
        per_epoch = math.ceil(training_samples / bs)
        steps = list(range(per_epoch, last_step + 1, per_epoch))
        note = f"save_strategy=epoch saves every {per_epoch} steps (one epoch)"
    else:
        return None, "save_strategy is unknown"
    if completed and (not steps or steps[-1] != last_step):
        steps.append(last_step)
        note += f", plus the final step {last_step} (assumed)"
    return steps, note


def checkpoint_advice(
    val: Sequence[tuple[int, float]],
    hp: HyperParams,
    last_step: int | None,
    training_samples: int | None = None,
    completed: bool = True,
) -> dict[str, Any] | None:
    """Which checkpoint to publish: the best validation reward, if the save settings kept it
    (knowledge.md §6: publish the best validation/data/reward/mean@1, not necessarily the last;
    keep 3 to 5 so the best one survives)."""
    points = [(int(s), float(v)) for s, v in val if v is not None and math.isfinite(v)]
    if last_step is None:
        return None
    if not points:
        return {
            "metric": "val_reward",
            "advice": "The log has no validation reward, so the best checkpoint cannot be told: "
            "set eval_steps (total steps / 10 to 20) and publish the checkpoint with the best "
            "validation reward.",
        }
    # Step 0 is the validation before training: the base model, not a checkpoint to publish.
    base = next((v for s, v in points if s <= 0), None)
    points = [p for p in points if p[0] > 0]
    if not points:
        return {
            "metric": "val_reward",
            "base_val_reward": base,
            "advice": "Only the validation before training (the base model) is in the log: "
            "no trained checkpoint can be ranked yet.",
        }
    best_step, best = max(points, key=lambda p: (p[1], -p[0]))
    last_val_step, last_val = points[-1]
    saved, note = saved_steps(hp, last_step, training_samples, completed)
    limit = hp.get("save_total_limit")
    kept = saved[-limit:] if saved is not None and isinstance(limit, int) else saved
    out: dict[str, Any] = {
        "metric": "val_reward",
        "best_step": best_step,
        "best_val_reward": best,
        "last_eval_step": last_val_step,
        "last_val_reward": last_val,
        "save_strategy": hp.get("save_strategy"),
        "save_steps": hp.get("save_steps"),
        "save_total_limit": limit,
        "saved_note": note,
        "kept_steps": kept,
        "best_kept": None if kept is None else best_step in kept,
        "publish_step": None,
        "base_val_reward": base,
    }
    out["advice"] = _checkpoint_sentence(out, dict(points), kept, note)
    if base is not None and base >= best:
        out["advice"] += (
            f" No trained checkpoint beat the base model's validation reward ({base:.4g} "
            "before training): the run did not improve on it."
        )
    return out


def _checkpoint_sentence(
    out: dict[str, Any], val: dict[int, float], kept: list[int] | None, note: str
) -> str:
    best_step, best = out["best_step"], out["best_val_reward"]
    head = f"Best validation reward {best:.4g} at step {best_step}"
    if out["last_eval_step"] != best_step:
        last, last_val = out["last_eval_step"], out["last_val_reward"]
        head += f" (the last evaluation, step {last}, read {last_val:.4g})"
    if kept is None:
        return f"{head}. Whether a checkpoint of it was kept cannot be told: {note}."
    if not kept:
        return f"{head}. No checkpoint was kept ({note}): set save_strategy=steps to keep one."
    if best_step in kept:
        out["publish_step"] = best_step
        return f"{head}; its checkpoint was kept ({note}): publish step {best_step}."
    scored = [(val[s], s) for s in kept if s in val]
    pick = max(scored)[1] if scored else min(kept, key=lambda s: abs(s - best_step))
    out["publish_step"] = pick
    limit = out["save_total_limit"]
    why = f"{note}; save_total_limit={limit} kept {kept}"
    picked = f"step {pick}" + (f" (validation {val[pick]:.4g})" if pick in val else "")
    fix = (
        "next time save at multiples of eval_steps and keep 3 to 5 checkpoints "
        "(save_total_limit) so the best one survives."
    )
    worst = min(val.values())
    if pick in val and best > worst and (best - val[pick]) > 0.8 * (best - worst):
        # The kept ones are far below the best (e.g. all after a collapse): do not publish them.
        out["publish_step"] = None
        return (
            f"{head}, but no checkpoint of that step survives ({why}), and the best kept one, "
            f"{picked}, has lost most of the gain: none is worth publishing. Re-run "
            f"(the fix above) and {fix}"
        )
    return (
        f"{head}, but no checkpoint of that step survives ({why}). Publish {picked}, the best "
        f"kept one; {fix}"
    )
