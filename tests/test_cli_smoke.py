import subprocess
import sys

from advisor import __version__


def test_version_through_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "advisor", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.strip() == f"rl-advisor {__version__}"
