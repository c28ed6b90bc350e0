"""The `rl-advisor` command line: one small module per command, registered here.

Exit codes follow linters (contract.md): 0 nothing at or above --fail-on, 1 findings at or above
it, 2 unusable input or call (one line on stderr, never a traceback).

The framework (typer) is imported only when a call needs it: a plain `diagnose` call is parsed
and run without it (cli/diagnose_core.py), every other call, `--help` and every usage error go
through it.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, Any, NoReturn

from advisor import lazy
from advisor._version import __version__
from advisor.codecache import kept_code

if TYPE_CHECKING:
    import typer


class Exit(IntEnum):
    OK = 0
    FINDINGS = 1
    UNUSABLE = 2


class OutputFormat(StrEnum):
    markdown = "markdown"
    json = "json"


class ReportFormat(StrEnum):
    """diagnose's formats: those of every command, and the one-file HTML report."""

    markdown = "markdown"
    json = "json"
    html = "html"


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def _build_app() -> typer.Typer:
    typer = lazy.typer

    app = typer.Typer(
        name="rl-advisor",
        help="Diagnose RL fine-tuning runs (GSPO, GRPO, DAPO) and patch their job config.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    def _version(value: bool) -> None:
        if value:
            typer.echo(f"rl-advisor {__version__}")
            raise typer.Exit()

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False,
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ) -> None:
        """Diagnose RL fine-tuning runs and patch their job config."""

    return app


def _app() -> typer.Typer:
    got = globals().get("app")
    if got is None:
        got = globals()["app"] = _build_app()
    return got


def __getattr__(name: str) -> Any:
    """`advisor.cli.app`, the typer application, built the first time a module asks for it."""
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def fail(message: str) -> None:
    """Print one line on stderr and exit 2 (unusable input)."""
    typer = lazy.typer

    typer.echo(error_line(message), err=True)
    raise typer.Exit(Exit.UNUSABLE)


def error_line(message: str) -> str:
    """The one line of an unusable input or call, in the user's language: the message is
    composed in English and said from rulebook/i18n/messages.yaml (advisor.i18n.say); one the
    catalogue lacks stays as written."""
    from advisor.i18n import say, t

    return t("rl-advisor: error: {message}", message=say(message))


_COMMANDS = ("diagnose", "validate", "watch", "rules", "harness", "diff", "demo")


def _register(argv: list[str]) -> None:
    """Each command module adds itself to `app`. A call naming its command loads that one only
    (click's lazy subcommands: building every command's parameters costs ~20 ms a start);
    `--help`, no command or an unknown one loads them all, to list them or suggest one;
    `--version` before any command (without `--help`) loads none: it prints and exits first."""
    named = next((a for a in argv if not a.startswith("-")), None)
    before = argv[: argv.index(named)] if named is not None else argv
    if "--version" in before and "--help" not in before:
        return
    for name in (named,) if named in _COMMANDS else _COMMANDS:
        importlib.import_module(f"advisor.cli.{name}")


def _click_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """Click's usage-error and abort classes; newer typer vendors its own copy of click."""
    usage: list[type[Exception]] = []
    abort: list[type[Exception]] = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mod = __import__(name, fromlist=["ClickException"])
        except ImportError:
            continue
        usage.append(mod.ClickException)
        if hasattr(mod, "Abort"):
            abort.append(mod.Abort)
    return tuple(usage), tuple(abort)


def main(argv: list[str] | None = None, *, fresh: bool = False) -> int:
    """The command line's exit code. `fresh`: the process imports nothing before this call (the
    `rl-advisor` command), so settings that must precede polars' import can still be made."""
    # pydantic looks for plugins in every installed distribution's entry points the first time
    # it builds a validator (~30 ms here, more in a training environment); this process is
    # ours and uses none. A user's own setting is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # numpy's OpenBLAS starts a pool of threads when it is imported, whose workers spin for
    # 70-130 ms of CPU per run; this process multiplies no matrix large enough to share out.
    # Set before numpy is first imported (lazily, after this); a user's own setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        args = _take_lang(args)
    except ValueError as err:
        sys.stderr.write(error_line(str(err)) + "\n")
        return Exit.UNUSABLE
    if args[:1] == ["diagnose"]:
        # The collector stays off from the command's imports through its work (see
        # without_cyclic_gc); on again after, for a caller's process that goes on.
        with without_cyclic_gc():
            from advisor.cli import argv as plain

            parsed = plain.parse_argv(args[1:])
            if parsed is not None:
                # The run's read starts first, on its own thread (advisor.reading): everything
                # below is imported while it reads.
                from advisor.reading import Reading, small_read

                if fresh and small_read(parsed["metrics"]):
                    # one reader thread: see advisor.reading (a user's own setting is kept)
                    os.environ.setdefault("POLARS_MAX_THREADS", "1")
                reading = Reading(parsed["metrics"])
                reading.start(alongside=True)
                # numpy imported here, at the command's first level: deep in the call stack
                # its import (a function called ~1,000 times at one depth) crosses the
                # interpreter's 16 KB frame-stack chunk boundary again and again, each time a
                # page mapped and unmapped (~1,200 of each: with the read's threads running,
                # each unmapping a TLB flush on their CPUs)
                lazy.numpy  # noqa: B018
                from advisor.cli.diagnose_core import execute

                return _guarded(lambda: execute(**parsed, reading=reading))
    return _framework(args)


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a diagnosis runs, back as it was after.

    A diagnosis leaves few reference cycles (its objects die by reference count; the job
    file's YAML reader leaves a few hundred objects, whatever the run's length:
    tests/test_diagnose_gc.py), but the imports of numpy, polars and the engine create ~60k
    long-lived objects, which the collector scans again and again for nothing: ~30 ms of a cold
    `rl-advisor diagnose` on a quiet machine, up to ~100 ms on a busy one. Turned on between the
    imports and the work, it would scan them all once more at the first allocation (~12 ms).
    A caller's own process (a test) gets the collector back."""
    was_on, frozen = gc.isenabled(), gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            if not frozen:  # (objects a caller froze on purpose stay frozen)
                # What was made meanwhile counts as old (freeze, then unfreeze: into the oldest
                # generation, still collectable), or the first collection would scan it all.
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _take_lang(args: list[str]) -> list[str]:
    """`--lang CODE` (or `--lang=CODE`), given to any command, taken out of `args` into
    RL_ADVISOR_LANG: the report and the rulebook's texts in that language (advisor.i18n);
    `--rules-config FILE` likewise into RL_ADVISOR_RULES_CONFIG (advisor.userconf)."""
    out: list[str] = []
    it = iter(args)
    for a in it:
        if a == "--":
            out.append(a)
            out.extend(it)
            break
        if a == "--rules-config" or a.startswith("--rules-config="):
            path = a.partition("=")[2] if "=" in a else next(it, "")
            if not path:
                raise ValueError("--rules-config: expected a file")
            os.environ["RL_ADVISOR_RULES_CONFIG"] = path
            continue
        if a == "--lang" or a.startswith("--lang="):
            code = a.partition("=")[2] if "=" in a else next(it, "")
            from advisor.i18n import LANGS, normalise

            if normalise(code) is None or not code:
                raise ValueError(f"--lang: expected one of {', '.join(LANGS)}, got {code!r}")
            os.environ["RL_ADVISOR_LANG"] = normalise(code) or "en"
            continue
        out.append(a)
    return out


def _guarded(call: Any) -> int:
    """`call()`'s exit code; what it raises becomes the CLI's one line on stderr (as below)."""
    # advisor.types and diagnose_core: imported after main turned the collector off
    from advisor.cli.diagnose_core import echo
    from advisor.types import InputError

    try:
        return int(call())
    except InputError as err:
        echo(error_line(str(err)) + "\n", err=True)
        return Exit.UNUSABLE
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # last-resort guard
        echo(f"rl-advisor: internal error: {type(err).__name__}: {err}\n", err=True)
        return Exit.UNUSABLE


def _framework(args: list[str]) -> int:
    typer = lazy.typer
    from advisor.types import InputError  # as in _guarded

    _register(args)
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        rv = _app()(args=args, standalone_mode=False)
    except InputError as err:
        typer.echo(error_line(str(err)), err=True)
        return Exit.UNUSABLE
    except typer.Exit as ex:
        return int(ex.exit_code or 0)
    except SystemExit as ex:  # click usage errors in non-standalone mode
        return int(ex.code or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # usage errors from click, and last-resort guard
        usage, abort = _click_errors()
        if isinstance(err, usage):
            # click's ClickException (one of two copies, so typed by what it offers)
            format_message = getattr(err, "format_message", None)
            message = str(format_message()) if callable(format_message) else str(err)
            if message:  # no_args_is_help has printed the help already
                # click's own words stay English (its messages are not in the catalogue)
                typer.echo(error_line(message), err=True)
            return Exit.UNUSABLE
        if isinstance(err, abort):
            return 130
        typer.echo(f"rl-advisor: internal error: {type(err).__name__}: {err}", err=True)
        return Exit.UNUSABLE
    return rv if isinstance(rv, int) else Exit.OK


def run() -> NoReturn:
    """The `rl-advisor` command: main(), then exit at once.

    Tearing the interpreter down (freeing polars, numpy and pydantic objects one by one) takes
    ~0.1 s, longer than judging a run; every file this tool writes is closed by then and it
    registers no exit handler of its own, so the process ends as soon as its output is out.
    The methods dataclasses generates and the programs of regular expressions come from the
    user's cache (advisor.codecache), written back once the output is out when this run
    compiled new ones.
    """
    kept = kept_code(next((a for a in sys.argv[1:] if a in _COMMANDS), ""))
    try:
        code = main(fresh=True)
    except KeyboardInterrupt:  # while the command's modules were imported: said as in _guarded
        code = 130
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe (`rl-advisor ... | head`): nothing to add
        pass
    for compiled in kept:
        compiled.save()
    os._exit(code)


if __name__ == "__main__":
    run()
