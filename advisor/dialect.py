"""Saying the advice in the user's framework: the Speaker renders a guide-named Change as TRL
GRPOConfig fields or verl Hydra keys, by the name table (`rulebook/dialects.yaml`, read by
advisor/book/dialects.py).

The remedy plans with the guide's names (knowledge.md §2, the platform's job); everything a
person or a patch sees passes through `Speaker`: the change's framework keys and values, the
advice sentences, the override line verl takes on its launch command and the GRPOConfig
keywords TRL takes. The table is data; this module only knows how to read it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from advisor.book.dialects import (
    FRAMEWORKS,
    Framework,
    Name,
    dialects,
)
from advisor.ingest.hints import _get, trl_algorithm
from advisor.types import Change, FrameworkKey

# ----------------------------------------------------------------------------- detection
_TRL_COLUMNS = ("frac_reward_zero_std", "completions/mean_length", "completions/clipped_ratio")
_VERL_COLUMNS = ("critic/score/mean", "critic/rewards/mean", "actor/pg_loss", "timing_s/step")
_OPENRLHF_COLUMNS = ("actor_grad_norm", "ppo_clip_ratio", "rollout/truncated_rate")


def framework_of_run(fmt: str, columns: Sequence[str], hints: Mapping[str, Any]) -> Framework:
    """The framework a run's log comes from: its format, else its metric names, else its
    config hints; the platform when nothing tells."""
    fmt = fmt or ""
    declared = hints.get("framework")
    if isinstance(declared, str) and declared in FRAMEWORKS:
        return declared  # type: ignore[return-value]
    if fmt.startswith("verl"):
        return "verl"
    if fmt.startswith("trl"):
        return "trl"
    if fmt.startswith("openrlhf"):
        return "openrlhf"
    cols = set(columns)
    for prefix in ("", "train/"):
        if any(prefix + c in cols for c in _TRL_COLUMNS):
            return "trl"
    if any(c in cols for c in _VERL_COLUMNS) or "adv_estimator" in hints:
        return "verl"
    if any(c in cols for c in _OPENRLHF_COLUMNS):
        return "openrlhf"
    return "platform"


_TRL_MARKERS = frozenset(
    {
        "num_generations",
        "per_device_train_batch_size",
        "output_dir",
        "beta",
        "max_completion_length",
        "gradient_accumulation_steps",
        "num_train_epochs",
    }
)
# TRL arguments the Speaker needs beside the guide's values
_TRL_OWN = (
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "steps_per_generation",
    "num_iterations",
    "loss_type",
    "epsilon",
    "epsilon_high",
    "importance_sampling_level",
    "eval_strategy",
    "max_completion_length",
)
_VERL_TOP = frozenset({"actor_rollout_ref", "algorithm", "trainer", "data", "critic"})


@cache
def trl_fields() -> frozenset[str]:
    """GRPOConfig's field names: from the installed TRL, else the table's TRL keys. Importing
    TRL imports torch and transformers (seconds, over ten on a busy machine): the names are
    kept in the cache folder under TRL's version and place, and read from there next time."""
    import json
    from importlib import metadata
    from pathlib import Path

    from advisor.resources import _cache_file, _write_cache

    try:
        dist = metadata.distribution("trl")
        kept = _cache_file(Path("trl-fields"), f"{dist.version} {dist.locate_file('')}".encode())
    except Exception:  # not installed, or no metadata: no cache to key
        kept = None
    if kept is not None:
        try:
            return frozenset(json.loads(kept.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            pass
    try:
        from trl import GRPOConfig  # optional: TRL is the user's, not a dependency

        names = sorted(f.name for f in dataclasses.fields(GRPOConfig))
        if kept is not None:
            _write_cache(kept, names)
        return frozenset(names)
    except Exception:  # TRL not installed (the extra) or broken: the table's own names
        book = dialects()
        out = {n.key for per in book.names.values() if (n := per.get("trl")) and n.key}
        out |= {
            k
            for per in book.names.values()
            if (n := per.get("trl"))
            for v in n.values.values()
            for k in v
        }
        out |= {"output_dir", "per_device_train_batch_size", "eval_strategy", "max_steps",
                "logging_steps", "epsilon", "report_to", "bf16", "seed"}  # fmt: skip
        return frozenset(out)


def framework_of_document(doc: Mapping[str, Any]) -> Framework | None:
    """The framework a config file is written for: verl's Hydra tree, a TRL / transformers
    arguments file (YAML for `trl grpo --config`, a saved TrainingArguments JSON); None for
    the platform's job."""
    keys = {str(k) for k in doc}
    if "actor_rollout_ref" in keys or len(keys & _VERL_TOP) >= 3:
        return "verl"
    if "hyper_parameters" in keys or "training" in keys:
        return None
    if len(keys & _TRL_MARKERS) >= 2:
        return "trl"
    return None


# ----------------------------------------------------------------------------- framework -> guide


def trl_hints(args: Mapping[str, Any]) -> dict[str, Any]:
    """Guide hyperparameters (and facts the Speaker needs) from TRL / transformers arguments
    given as a mapping (a config YAML, a saved TrainingArguments JSON, `vars(args)`).

    Only what maps one to one; what would need a guess (prompts per step depend on the number
    of processes) is left out, so the report says it is unknown."""

    def g(name: str) -> Any:
        v = args.get(name)
        return getattr(v, "value", v)  # transformers' enums (SaveStrategy) -> str

    hints: dict[str, Any] = {"framework": "trl"}
    direct = {
        "learning_rate": "learning_rate",
        "num_generations": "n_rollouts",
        "beta": "kl_loss_coef",
        "max_prompt_length": "max_prompt_length",
        "save_total_limit": "save_total_limit",
    }
    for name, param in direct.items():
        v = g(name)
        if v is not None and not isinstance(v, bool):
            hints[param] = v
    if isinstance(hints.get("kl_loss_coef"), int):
        hints["kl_loss_coef"] = float(hints["kl_loss_coef"])
    warm = g("warmup_steps")
    if isinstance(warm, int) and not isinstance(warm, bool) and warm > 0:
        hints["lr_warmup_steps"] = warm
    epochs, max_steps = g("num_train_epochs"), g("max_steps")
    numeric_epochs = isinstance(epochs, int | float) and not isinstance(epochs, bool)
    if numeric_epochs and float(epochs).is_integer() and max_steps in (None, -1):
        hints["n_epochs"] = int(epochs)
    sched = g("lr_scheduler_type")
    if sched in ("cosine", "linear", "constant"):
        hints["lr_scheduler_type"] = sched
    save = g("save_strategy")
    if save in ("steps", "epoch", "no"):
        hints["save_strategy"] = save
        if save == "steps" and isinstance(g("save_steps"), int):
            hints["save_steps"] = g("save_steps")
    if g("eval_strategy") == "steps":
        every = g("eval_steps") or g("logging_steps")
        if isinstance(every, int) or (isinstance(every, float) and every >= 1):
            hints["eval_steps"] = int(every)
    completion = g("max_completion_length")
    if isinstance(completion, int) and not isinstance(completion, bool) and completion > 0:
        hints["max_response_length"] = completion
        prompt = g("max_prompt_length")
        if isinstance(prompt, int) and prompt > 0:
            hints["max_length"] = prompt + completion
    for own in _TRL_OWN:
        v = g(own)
        if v is not None:
            hints[own] = v
    temperature = g("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        hints["temperature"] = float(temperature)
    algo = trl_algorithm(args)
    if algo:
        hints["algorithm"] = algo
    return {k: v for k, v in hints.items() if v is not None}


def framework_assumed(framework: str, hints: Mapping[str, Any]) -> dict[str, Any]:
    """Guide values a run of `framework` had by the framework's own defaults when its log and
    its hints say nothing of them: a TRL run that names no algorithm ran TRL's default
    (token-level importance sampling without Clip-Higher: GRPO), not the platform's GSPO."""
    if framework != "trl" or "algorithm" in hints:
        return {}
    if hints.get("adv_estimator") not in (None, "grpo"):
        return {}  # PPOTrainer (GAE, a value model): not a group-relative run at all
    defaults = dialects().frameworks["trl"].defaults
    algorithm = trl_algorithm({**defaults, **{k: hints[k] for k in _TRL_OWN if k in hints}})
    return {"algorithm": algorithm} if algorithm else {}


def verl_facts(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """What the Speaker needs from a verl config beside the guide's values."""
    out: dict[str, Any] = {"framework": "verl"}
    for name, path in {
        "use_kl_loss": "actor_rollout_ref.actor.use_kl_loss",
        "use_kl_in_reward": "algorithm.use_kl_in_reward",
    }.items():
        v = _get(cfg, path)
        if isinstance(v, bool):
            out[name] = v
    return out


# ----------------------------------------------------------------------------- the speaker
_Unknown = object()


class Speaker:
    """Renders guide-named changes and sentences in one framework's names.

    `hp`: the guide's values the job runs with (to compute a framework value from the guide's,
    e.g. the response cap = max_length - max_prompt_length); `facts`: what the run or the
    config file told about the framework itself (verl's use_kl_loss, TRL's
    gradient_accumulation_steps); `origin`: where each guide value came from, so an assumed one
    is said as such."""

    def __init__(
        self,
        framework: str = "platform",
        hp: Mapping[str, Any] | None = None,
        facts: Mapping[str, Any] | None = None,
        origin: Mapping[str, str] | None = None,
    ) -> None:
        book = dialects()
        info = book.frameworks.get(framework)
        self.framework = framework if info is not None else "platform"
        self.info = info or book.frameworks["platform"]
        speaks = self.info.same_as or self.framework
        self.speaks = speaks  # whose names are used (OpenRLHF's advice keeps the guide's)
        self.hp = dict(hp or {})
        self.facts = dict(facts or {})
        self.origin = dict(origin or {})

    @property
    def native(self) -> bool:
        """The framework's own names are used (not the guide's)."""
        return self.speaks in ("trl", "verl")

    def entry(self, param: str) -> Name | None:
        if not self.native:
            return None
        book = dialects()
        return book.names.get(param, book.sampling.get(param, {})).get(self.speaks)

    def can_set(self, param: str) -> bool:
        """Whether a patch can carry `param` for this run: a guide hyperparameter always, a
        framework's own setting (the sampling temperature) where the framework has a key."""
        if param in dialects().names:
            return True
        entry = self.entry(param)
        return entry is not None and entry.key is not None

    def _shows(self, when: Mapping[str, Any]) -> bool:
        """The run shows every fact of a `when` (a case's, a value case's)."""
        return all(self.facts.get(k, _Unknown) == v for k, v in when.items())

    def _case(self, entry: Name) -> tuple[str | None, dict[str, Any]]:
        for case in entry.cases:
            if self._shows(case.when):
                return case.key, dict(case.also if case.also is not None else entry.also)
        return entry.key, dict(entry.also)

    def name(self, param: str) -> str:
        """The framework's name of a guide parameter (the guide's own where it has none)."""
        entry = self.entry(param)
        if entry is None:
            return param
        key, _ = self._case(entry)
        return key if key is not None else param  # a choice (algorithm) keeps its own word

    def assumed(self, param: str) -> bool:
        return self.origin.get(param, "default") == "default"

    def marked(self, change: Change) -> Change:
        """The change with `assumed` set when its old value is not known (a default)."""
        assumed = self.assumed(change.param)
        return (
            change if change.assumed == assumed else dataclasses.replace(change, assumed=assumed)
        )

    def said(self, change: Change) -> Change:
        """The change marked and with its framework keys (what the JSON and report carry)."""
        change = self.marked(change)
        return dataclasses.replace(change, framework_keys=self.keys(change))

    def keys(self, change: Change) -> list[FrameworkKey]:
        """The framework settings a guide change means, with their old values where known."""
        entry = self.entry(change.param)
        if entry is None:
            return []
        if entry.values:
            cases = (c.values for c in entry.value_cases if self._shows(c.when))
            values = next(cases, entry.values)
            wanted = values.get(str(change.to), entry.values.get(str(change.to), {}))
            said = [self._setting(k, v) for k, v in wanted.items()]
            # what the run is known to do already stays; a value only assumed from the
            # framework's defaults is written (another release's default may differ)
            return [k for k in said if k.from_ != k.to or k.assumed]
        key, also = self._case(entry)
        if key is None:
            return []
        old, new = change.from_, change.to
        if entry.minus is not None:
            base = self.hp.get(entry.minus)
            ok = all(isinstance(x, int | float) for x in (old, new, base))
            old, new = (old - base, new - base) if ok else (None, None)
            known = self.facts.get("max_response_length")
            numbers = isinstance(old, int) and isinstance(new, int | float)
            if isinstance(known, int) and numbers and new is not None and known != old:
                # the run showed its own cap; the guide's difference is kept
                new, old = known + (new - old), known
        elif entry.divide_by is not None:
            per = self.hp.get(entry.divide_by)
            ok = isinstance(per, int) and per > 0 and all(isinstance(x, int) for x in (old, new))
            old, new = (old // per, max(1, new // per)) if ok else (None, None)
        elif entry.scale:
            own = self.facts.get(key)
            factor = change.factor if change.op == "multiply" else None
            if isinstance(own, int) and factor:
                old, new = own, max(1, round(own * factor))
            else:
                old, new = None, None
        out = [
            FrameworkKey(
                key=key,
                from_=old,
                to=new,
                note=entry.note,
                assumed=self.assumed(change.param) and not entry.scale,
            )
        ]  # fmt: skip
        if new not in (0, 0.0, None):
            out += [k for k in (self._setting(k, v) for k, v in also.items()) if k.from_ != k.to]
        held = self._held(entry, old, new)
        if held is not None:
            out.append(held)
        return out

    def _held(self, entry: Name, old: Any, new: Any) -> FrameworkKey | None:
        """The setting `entry.holds` names, scaled as the key was (None when unchanged)."""
        if entry.holds is None or not all(isinstance(x, int | float) for x in (old, new)):
            return None
        if old <= 0 or new <= 0 or old == new:
            return None
        key = entry.holds.key
        own = self.facts.get(key, self.info.defaults.get(key))
        if not isinstance(own, int) or isinstance(own, bool) or own < 1:
            return None
        to = max(1, round(own * new / old))
        if to == own:
            return None
        note = f"keeps {entry.holds.keeps}"
        return FrameworkKey(key=key, from_=own, to=to, note=note, assumed=key not in self.facts)

    def _setting(self, key: str, value: Any) -> FrameworkKey:
        """A framework setting to `value`; its old value the run's, else the framework's
        default (assumed: another release may differ)."""
        if key in self.facts or key.rsplit(".", 1)[-1] in self.facts:
            old = self.facts.get(key, self.facts.get(key.rsplit(".", 1)[-1]))
            assumed = False
        else:
            old, assumed = self.info.defaults.get(key), key in self.info.defaults
        return FrameworkKey(key=key, from_=old, to=value, assumed=assumed)

    def on_policy(self) -> bool:
        """Each generation batch is used up within one optimizer step (the framework's
        `off_policy_only` settings then change nothing); False when the framework has none."""
        rule = self.info.off_policy_only
        if rule is None:
            return False

        def value(key: str, fallback: int) -> int | None:
            v = self.facts.get(key, self.hp.get(key))
            v = rule.defaults.get(key, fallback) if v is None else v
            return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

        step = [value(k, 1) for k in rule.per_step]
        per_step = math.prod(x for x in step if x is not None)
        batch = [value(k, per_step) for k in rule.per_batch]
        if None in step or None in batch:
            return False  # a setting the run names that is no count: not judged
        return per_step % math.prod(x for x in batch if x is not None) == 0

    def inert(self, change: Change) -> str | None:
        """Why `change` does nothing in this run's framework: every setting it means is
        already so, or acts only on the off-policy updates this run does not make. None when
        it acts (or the framework's names are not spoken)."""
        if not self.native:
            return None
        said = self.keys(change)
        rule = self.info.off_policy_only
        if not said or rule is None or not self.on_policy():
            return None
        acting = [k for k in said if k.from_ != k.to and k.key not in rule.keys]
        if acting or not any(k.key in rule.keys and k.from_ != k.to for k in said):
            return None
        why = " ".join(rule.why.split())
        named = any(k in self.facts or k in self.hp for k in rule.per_batch)
        return why if named else f"{why} ({rule.assumed})"

    def unavailable(self, param: str) -> str | None:
        entry = self.entry(param)
        return entry.none if entry is not None else None

    # -- sentences ---------------------------------------------------------------------------
    def describe(self, change: Change) -> str:
        """`name old -> new (xF)` in the framework's names; the guide's parameter in brackets
        where the framework's value is not the guide's own."""
        how = (
            f" (x{change.factor:g})"
            if change.op == "multiply" and change.factor is not None
            else (
                f" ({change.factor:+g})" if change.op == "add" and change.factor is not None else ""
            )
        )
        mark = " (assumed)" if change.assumed else ""
        said = self.keys(change) if self.native else []
        if not said:
            none = self.unavailable(change.param) if self.native else None
            base = f"{change.param} {_v(change.from_)}{mark} -> {_v(change.to)}{how}"
            return f"{base} ({none})" if none else base
        parts = []
        for k in said:
            mark_k = " (assumed)" if k.assumed else ""
            if k.from_ is None and k.to is not None and k.key == said[0].key and how:
                parts.append(f"{k.key} {how.strip()[1:-1]}")
            else:
                parts.append(f"{k.key} {_v(k.from_)}{mark_k} -> {_v(k.to)}")
        return ", ".join(parts) + (how if said[0].from_ is not None and how else "")

    def text(self, sentence: str) -> str:
        """A rulebook sentence with the guide's parameter names replaced by the framework's."""
        if not self.native or not sentence:
            return sentence
        return _names_pattern().sub(lambda m: self._word(m), sentence)

    def _word(self, match: re.Match[str]) -> str:
        param, value = match.group(1), match.group(2)
        entry = self.entry(param)
        if entry is not None and entry.values and value:
            keys = self.keys(Change(param=param, to=value))
            if keys:
                said = ", ".join(f"{k.key}={_v(k.to)}" for k in keys)
                return f"{said} [{entry.note}]" if entry.note else said
        if (
            entry is not None
            and entry.key
            and entry.since_absent
            and self.speaks == "trl"
            and entry.key not in trl_fields()
        ):
            return f"{param} ({entry.since_absent})"
        if entry is not None and entry.key and (entry.minus or entry.divide_by or entry.scale):
            # the framework's value is not the guide's: the guide's word, with what it is made of
            if entry.minus:
                made = f"{self.name(entry.minus)} + {entry.key}"
            elif entry.divide_by:
                made = f"{entry.key} x {self.name(entry.divide_by)}"
            else:
                made = entry.note or entry.key
            word = f"{param}={value}" if value else param
            return f"{word} ({made})"
        name = self.name(param)
        return f"{name}={value}" if value else name

    # -- patches -----------------------------------------------------------------------------
    def settings(self, changes: Sequence[Change]) -> dict[str, Any]:
        """Framework key -> new value for a patch's changes (framework names only)."""
        out: dict[str, Any] = {}
        for c in changes:
            for k in self.keys(c):
                if k.to is not None:
                    out[k.key] = k.to
        return out

    def override_line(self, changes: Sequence[Change]) -> str | None:
        """What to add where the framework takes its settings: verl's Hydra overrides for the
        launch command, TRL's GRPOConfig keywords (and the `trl grpo` flags)."""
        settings = self.settings(changes)
        if not settings:
            return None
        if self.speaks == "verl":
            return " ".join(f"{k}={_hydra(v)}" for k, v in settings.items())
        if self.speaks == "trl":
            return "GRPOConfig(..., " + ", ".join(f"{k}={v!r}" for k, v in settings.items()) + ")"
        return None


    def override_args(self, changes: Sequence[Change]) -> str | None:
        """The change as command-line arguments ready to paste, in the run's dialect: the
        `trl grpo` flags (`--learning_rate 5e-05`, HfArgumentParser's form), verl's Hydra
        overrides, the platform's `--set key=value`."""
        if self.speaks == "verl":
            return self.override_line(changes)
        if self.speaks == "trl":
            settings = self.settings(changes)
            return " ".join(f"--{k} {_flag(v)}" for k, v in settings.items()) or None
        said = [f"--set {c.param}={_flag(c.to)}" for c in changes if c.to is not None]
        return " ".join(said) or None


def _flag(value: Any) -> str:
    """A value as a command-line argument reads it (HfArgumentParser: true/false, 5e-05)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _v(value: Any) -> str:
    if value is None:
        return "unset"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _hydra(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@cache
def _names_pattern() -> re.Pattern[str]:
    params = sorted(dialects().names, key=len, reverse=True)
    # a name as a word (not inside another identifier), with an optional `=value`
    return re.compile(r"(?<![\w./])(" + "|".join(map(re.escape, params)) + r")\b(?:=([\w.\-]+))?")


def speaker_for(
    framework: str, hp: Mapping[str, Any], hints: Mapping[str, Any], origin: Mapping[str, str]
) -> Speaker:
    return Speaker(framework, hp, hints, origin)


def set_names(framework: str | None = None) -> dict[str, str]:
    """Framework name -> guide parameter, for `--set` (every framework's names when None)."""
    out: dict[str, str] = {}
    for param, per in dialects().names.items():
        for fw, entry in per.items():
            if framework is not None and fw != framework:
                continue
            if entry.key and entry.minus is None and entry.divide_by is None and not entry.scale:
                out.setdefault(entry.key, param)
                for case in entry.cases:
                    out.setdefault(case.key, param)
    return out


def framework_key_params(framework: str) -> dict[str, str]:
    """Framework key -> guide parameter whose value needs a conversion (max_completion_length:
    max_length minus max_prompt_length), for `--set` of those keys."""
    out: dict[str, str] = {}
    for param, per in dialects().names.items():
        entry = per.get(framework)
        if entry is not None and entry.key and (entry.minus or entry.divide_by):
            out[entry.key] = param
    return out
