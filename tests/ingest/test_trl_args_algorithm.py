"""TRL arguments say one algorithm whichever way they reach the advisor: printed as text in a
console log (ingest.hints.trl_arg_hints) or as a typed mapping (a config file, trainer args:
dialect.trl_hints)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from advisor.dialect import trl_hints
from advisor.ingest.hints import trl_arg_hints

ARGS = st.fixed_dictionaries(
    {},
    optional={
        "num_generations": st.integers(2, 16),
        "beta": st.sampled_from([0.0, 0.001, 0.04, 1.0]),
        "loss_type": st.sampled_from(["grpo", "dapo", "dr_grpo", "bnpo"]),
        "importance_sampling_level": st.sampled_from(["token", "sequence"]),
        "epsilon": st.sampled_from([0.1, 0.2, 0.3]),
        "epsilon_high": st.sampled_from([0.2, 0.28, 0.3]),
    },
)


@given(ARGS)
def test_printed_and_typed_arguments_name_the_same_algorithm(args: dict[str, object]) -> None:
    printed = {k: repr(v) if isinstance(v, str) else str(v) for k, v in args.items()}
    assert trl_arg_hints(printed).get("algorithm") == trl_hints(args).get("algorithm")


def test_trl_s_default_loss_type_is_not_the_dapo_algorithm() -> None:
    # loss_type "dapo" (TRL's default) is DAPO's token-level normalisation alone
    hints = trl_arg_hints({"loss_type": "dapo", "beta": "0.0", "num_generations": "8"})
    assert hints["algorithm"] == "grpo"
    clip_higher = trl_arg_hints({"epsilon": "0.2", "epsilon_high": "0.28", "beta": "0.0"})
    assert clip_higher["algorithm"] == "dapo"
    assert trl_arg_hints({"importance_sampling_level": "sequence", "beta": "0"})["algorithm"] == (
        "gspo"
    )
