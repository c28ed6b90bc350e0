"""TensorBoard event files, behind the optional extra `rl-advisor[tensorboard]`.

The scalar tag is the metric key; each event carries its step. tensorboard is imported here
only, so the rest of the advisor never pays for it.
"""

from __future__ import annotations

from pathlib import Path

from advisor.ingest.frame import build_run
from advisor.types import InputError, Run


def read_tensorboard(files: list[Path], source: str) -> Run:
    try:
        from tensorboard.backend.event_processing.event_file_loader import (
            LegacyEventFileLoader,
        )
        from tensorboard.util import tensor_util
    except ImportError:
        raise InputError(
            f"{source}: reading TensorBoard event files needs the tensorboard extra: "
            "pip install 'rl-advisor[tensorboard]'"
        ) from None
    import polars as pl

    steps: list[int] = []
    keys: list[str] = []
    values: list[float] = []
    for f in files:
        try:
            for event in LegacyEventFileLoader(str(f)).Load():
                for v in event.summary.value:
                    if v.HasField("simple_value"):
                        x = float(v.simple_value)
                    elif v.HasField("tensor") and not v.tensor.string_val:
                        x = float(tensor_util.make_ndarray(v.tensor).reshape(-1)[0])
                    else:
                        continue
                    steps.append(int(event.step))
                    keys.append(v.tag)
                    values.append(x)
        except Exception as err:  # a corrupt or cut record: keep what was read
            raise InputError(f"{f}: expected TensorBoard event records ({err})") from None
    if not keys:
        raise InputError(f"{source}: expected scalar summaries in the event files, found none")
    long = pl.DataFrame({"step": steps, "key": keys, "value": values})
    wide = long.pivot(on="key", index="step", values="value", aggregate_function="last")
    return build_run(wide.sort("step"), source=source, fmt="tensorboard")
