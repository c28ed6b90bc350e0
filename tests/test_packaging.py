"""The wheel ships every package and the rulebook (which lives outside advisor/)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    conf = tomllib.loads(text)["tool"]["setuptools"]
    listed = set(conf["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "advisor").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert conf["package-dir"]["advisor.rulebook"] == "rulebook"
    assert (ROOT / "rulebook" / "__init__.py").exists()


def test_rulebook_found() -> None:
    from advisor.resources import rulebook_dir

    for name in ("config.yaml", "symptoms.yaml", "profiles.yaml"):
        assert (rulebook_dir() / name).is_file()
