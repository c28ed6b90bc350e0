"""Ways to put the Advisor inside a running trainer. Each imports its framework lazily.

- `advisor.integrations.transformers.AdvisorCallback`: a transformers / TRL `TrainerCallback`.
- `advisor.integrations.verl`: a `Tracking.log` wrapper and a TaskRunner for verl's Ray actor.
- `advisor.integrations.hook`: a plain callable `hook(step, metrics)` for any orchestrator.
- `advisor.integrations.follow`: the sidecar route, following a growing log (`rl-advisor watch`).
"""

from __future__ import annotations
