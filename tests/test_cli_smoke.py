import subprocess
import sys

from advisor import __version__


def test_version_through_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "advisor", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.strip() == f"rl-advisor {__version__}"


def test_usage_errors_are_one_line_exit_2(capsys) -> None:
    from advisor.cli import main

    for argv in (["bogus-command"], ["diagnose"], ["diagnose", "x", "--fail-on", "bogus"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("rl-advisor: error: "), err
