"""The ``scenegen`` command line: a click group whose commands load lazily.

Each command lives beside the code it drives (``scenegen/design/cli.py``,
``scenegen/assets/cli.py``, ``rl/cli.py``...) and is imported only when invoked, so
``scenegen generate`` never imports torch. Library errors print one line and exit 2.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from scenegen import __version__
from scenegen.errors import ScenegenError

# command name -> "module:attribute"; a module missing from this checkout is hidden.
# Policy training commands (train, eval, ablate) join here from rl/cli.py when they exist.
COMMANDS: dict[str, str] = {
    "design": "scenegen.design.cli:design",
    "catalog": "scenegen.design.cli:catalog",
    "asset": "scenegen.assets.cli:asset",
    "assets": "scenegen.assets.cli:assets",
    "generate": "qa.cli:generate",
    "show": "scenegen.pack.cli:show",
    "info": "scenegen.pack.cli:info",
    "qa": "qa.cli:qa",
    "export": "scenegen.export.cli:export",
    "demos": "rl.cli:demos",
    "train": "rl.cli:train",
    "eval": "rl.cli:evaluate_cmd",
    "evalset": "rl.eval_cli:evalset",
    "compare": "rl.eval_cli:compare",
    "diagnose": "rl.eval_cli:diagnose",
    "dr": "rl.eval_cli:dr",
    "correlate": "rl.eval_cli:correlate",
    "ablate": "rl.ablate_cli:ablate",
}

EPILOG = """\b
Examples:
  scenegen design "put the banana in the bowl" -n 20 --json
  scenegen catalog
  scenegen generate "put the banana in the bowl" -n 8 -o out/demo
"""


def _available(name: str) -> bool:
    module = COMMANDS[name].split(":")[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    """A group that imports a command's module only when the command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in COMMANDS if _available(n))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not _available(cmd_name):
            return None
        module, attr = COMMANDS[cmd_name].split(":")
        return getattr(importlib.import_module(module), attr, None)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="scenegen")
def cli() -> None:
    """Language-driven scene synthesis for robot learning."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; library errors print one line and exit with code 2."""
    try:
        cli.main(args=argv, prog_name="scenegen", standalone_mode=False)
    except ScenegenError as exc:
        click.echo(f"error: {exc.one_line()}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
