#!/usr/bin/env bash
# The trainers' own packages, for the tests that check rl-advisor against their real classes
# (TRL's GRPOConfig fields, verl's config keys, task runners and Tracking). They are not
# dependencies of rl-advisor. torch is the CPU build; verl is installed without its
# dependencies (vLLM, flash-attention, ...) and with only what its config and trainer modules
# import, which is all those tests need.
#   scripts/install_frameworks.sh [PYTHON]      (default: .venv/bin/python)
set -euo pipefail
py="${1:-.venv/bin/python}"
"$py" -m pip install --quiet "torch==2.13.0"
"$py" -m pip install --quiet "trl==1.16.*"
"$py" -m pip install --quiet --no-deps "verl==0.9.1"
"$py" -m pip install --quiet "ray==2.60.*" hydra-core "tensordict>=0.8,<=0.10,!=0.9.0" \
  codetiming orjson pyzmq msgpack torchdata "TransferQueue==0.1.11" pillow cachetools \
  uvicorn fastapi peft pylatexenc dill
