"""Click options built from config dataclasses, and click values back into a validated config.

Every config is a frozen dataclass with a string literal under each field; that string is
the field's documentation and becomes the option's help text, so a field exposed to the
CLI needs one edit, not two::

    PIPELINE = ConfigOptions("scenegen.pipeline:PipelineConfig", [
        "workers", opt("scene.robot"), opt("time_budget_s", flag="--time-budget")])

    @click.command(cls=ConfigCommand)
    @PIPELINE
    def generate(**config_kw):
        cfg = PIPELINE.to_config(config_kw)   # nested replace, validated by __post_init__

A field's type picks the option: ``bool`` -> ``--x/--no-x``, ``int``/``float``/``str`` ->
a typed option, ``Literal[...]`` (or ``choices=``) -> :class:`click.Choice`, ``X | None``
-> optional, ``tuple[...]`` -> comma-separated. A dotted path reaches a nested config
(``scene.robot`` -> ``--robot``). Defaults come from the dataclass and are shown in the help.
A class given as ``"module:Class"`` is imported only when the command's options are first
needed (``scenegen --help`` stays fast); that needs ``cls=ConfigCommand``.

:func:`render_cli_docs` writes the option reference of docs/cli.md from a click group.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import click

from scenegen.errors import ConfigError

__all__ = ["CommaSeparated", "ConfigCommand", "ConfigOptions", "Opt", "cli_option_names", "field_docs",
           "help_text", "opt", "option_default", "render_cli_docs", "splice_cli_docs"]

_UNSET: Any = object()


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (inherited fields included), cleaned with ``cleandoc``.

    Fields without a string literal under them are left out.

    Raises:
        ConfigError: ``cls`` is not a dataclass.

    """
    if not dataclasses.is_dataclass(cls):
        raise ConfigError(f"{cls!r} is not a dataclass; config options need a dataclass")
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's docstring wins over its base's
        if not dataclasses.is_dataclass(klass) or klass is object:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
        for stmt, nxt in zip(node.body, node.body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
                docs[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return docs


_ROLE = re.compile(r":(?:func|class|meth|data|mod|attr|obj|exc):`(~?)([\w.]+)(?:\(\))?`")
_LITERAL = re.compile(r"``([^`]+)``")
_ASSIGN = re.compile(r"^(\w+)\s*=\s*[\"']?([^\"']*)[\"']?$")


def help_text(doc: str, flags: Mapping[str, str] | None = None) -> str:
    """A docstring as one line of CLI help: reST roles and literals unwrapped, field names as their flags.

    Args:
        doc: the field docstring.
        flags: field name -> flag; ````workers```` becomes ``--workers`` and ````assets="shap-e"````
            becomes ``--assets shap-e`` for the names found here.

    """
    flags = flags or {}
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), doc)

    def literal(m: re.Match) -> str:
        inner = m.group(1)
        assign = _ASSIGN.match(inner)
        if assign and assign.group(1) in flags:
            return f"{flags[assign.group(1)]} {assign.group(2)}"
        return flags.get(inner, inner)

    return " ".join(_LITERAL.sub(literal, text).split())


class CommaSeparated(click.ParamType):
    """A tuple given as ``a,b,c`` (spaces around items ignored; an empty string is the empty tuple)."""

    name = "list"

    def __init__(self, item: click.ParamType, length: int | None = None) -> None:
        self.item = item
        self.length = length

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """``TEXT,...`` (or ``FLOAT,FLOAT,FLOAT`` for a fixed length)."""
        item = self.item.name.upper()
        return ",".join([item] * self.length) if self.length else f"{item},..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple:
        """Split a string on commas and convert each item (a tuple or list is converted item by item)."""
        items = [s.strip() for s in value.split(",") if s.strip()] if isinstance(value, str) else list(value)
        if self.length is not None and len(items) != self.length:
            self.fail(f"{value!r} must have {self.length} comma-separated values, not {len(items)}", param, ctx)
        return tuple(self.item.convert(v, param, ctx) for v in items)


_SCALARS = {bool: click.BOOL, int: click.INT, float: click.FLOAT, str: click.STRING}


@dataclasses.dataclass(frozen=True)
class Opt:
    """How one config field becomes an option; anything left unset comes from the dataclass."""

    path: str
    """Field name, or a dotted path into nested configs (``scene.robot``)."""
    flag: str | None = None
    """Option name; default ``--`` + the last path component with ``-`` for ``_`` (a bool adds ``--no-...``)."""
    help: str | None = None
    """Help text instead of the field's docstring (the docstring is still required)."""
    default: Any = _UNSET
    """Default instead of the base config's value (the command then differs from the config)."""
    choices: Sequence[str] | str | None = None
    """Allowed values, for a ``str`` field validated in ``__post_init__`` rather than typed ``Literal``; a
    string names a constant of the config's module (``"BACKENDS"``), read when the options are built."""
    negatable: bool = True
    """A bool field gets ``--x/--no-x``; False makes a plain ``--x`` flag (the default must be False)."""
    name: str | None = None
    """Python name of the click parameter; default the path with ``__`` for ``.``."""

    @property
    def param_name(self) -> str:
        """The click parameter's name (the key in the command's kwargs)."""
        return self.name or self.path.replace(".", "__")

    @property
    def flag_name(self) -> str:
        """The main flag (``--time-budget``)."""
        return self.flag or "--" + self.path.rsplit(".", 1)[-1].replace("_", "-")


def opt(path: str, **overrides: Any) -> Opt:
    """One field exposed as an option, with overrides (see :class:`Opt`)."""
    return Opt(path, **overrides)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that cannot be evaluated here: fall back to the default's type
        return {}


def _leaf(cls: type, path: str) -> tuple[type, str, Any]:
    """(dataclass owning the last component, field name, resolved annotation) of a dotted path."""
    owner = cls
    parts = path.split(".")
    for i, part in enumerate(parts):
        names = {f.name: f for f in dataclasses.fields(owner)}
        if part not in names:
            raise ConfigError(f"{owner.__name__} has no field {part!r} (option path {path!r}); "
                              f"use one of {', '.join(names)}")
        hint = _hints(owner).get(part, _UNSET)
        if i == len(parts) - 1:
            return owner, part, hint
        if not (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
            raise ConfigError(f"{owner.__name__}.{part} is not a nested config; option path {path!r} cannot go into it")
        owner = hint


def _get(config: object, path: str) -> Any:
    for part in path.split("."):
        config = getattr(config, part)
    return config


def _unwrap_optional(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _click_type(hint: Any, default: Any, where: str) -> click.ParamType:
    hint = _unwrap_optional(hint)
    if hint is _UNSET:
        hint = type(default)
    if typing.get_origin(hint) is typing.Literal:
        return click.Choice([str(v) for v in typing.get_args(hint)])
    if hint in _SCALARS:
        return _SCALARS[hint]
    if typing.get_origin(hint) is tuple or hint is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return CommaSeparated(_click_type(args[0], None, where))
        if args and Ellipsis not in args and len(set(args)) == 1:
            return CommaSeparated(_click_type(args[0], None, where), length=len(args))
        return CommaSeparated(click.STRING)
    raise ConfigError(f"{where}: type {hint!r} has no CLI form; expose its fields by dotted path or give "
                      "the option by hand")


def _has_cli_form(cls: type, name: str) -> bool:
    spec = next(f for f in dataclasses.fields(cls) if f.name == name)
    try:
        _click_type(_hints(cls).get(name, _UNSET), None if spec.default is dataclasses.MISSING else spec.default, name)
    except ConfigError:
        return False
    return True


class ConfigOptions:
    """Click options for chosen fields of a config dataclass, and the inverse (kwargs -> config).

    Use it as a decorator (``@PIPELINE`` adds every option, ``@PIPELINE.only("a", "b")`` some, in
    order), then :meth:`to_config` on the command's kwargs.

    Args:
        config: the dataclass, or ``"module:Class"`` to import it when the options are first needed.
        fields: field names / dotted paths, or :func:`opt` specs with overrides; None: every top-level
            field of a type with a CLI form (the class is then imported at once).
        base: a zero-argument callable giving the config whose values are the defaults (default: ``Class()``).

    """

    def __init__(self, config: type | str, fields: Iterable[str | Opt] | None = None,
                 base: Callable[[], object] | None = None) -> None:
        self._config = config
        self._base = base
        if fields is None:  # every top-level field with a CLI form (nested configs need dotted paths)
            fields = [f.name for f in dataclasses.fields(self.cls) if _has_cli_form(self.cls, f.name)]
        self.specs = tuple(f if isinstance(f, Opt) else Opt(f) for f in fields)
        names = [s.param_name for s in self.specs]
        flags = [s.flag_name for s in self.specs]
        for label, seq in (("parameter", names), ("flag", flags)):
            dup = sorted({x for x in seq if seq.count(x) > 1})
            if dup:
                raise ConfigError(f"config options: duplicate {label} {', '.join(dup)}; give one of them flag=/name=")
        self._options: dict[str, click.Option] | None = None

    @property
    def cls(self) -> type:
        """The config dataclass (imported on first use when given as ``"module:Class"``)."""
        if isinstance(self._config, str):
            module, _, attr = self._config.partition(":")
            self._config = getattr(importlib.import_module(module), attr)
        return self._config

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the click parameters this builder adds."""
        return tuple(s.param_name for s in self.specs)

    def base(self) -> object:
        """The config whose values are the defaults."""
        return self._base() if self._base is not None else self.cls()

    def options(self, paths: Sequence[str] | None = None) -> list[click.Option]:
        """The click options, in field order (all, or those of ``paths``).

        Raises:
            ConfigError: an unknown path, a field without a docstring or a type with no CLI form.

        """
        if self._options is None:
            base = self.base()
            flags = {s.path.rsplit(".", 1)[-1]: s.flag_name for s in self.specs}
            self._options = {s.path: self._make(s, base, flags) for s in self.specs}
        if paths is None:
            return list(self._options.values())
        unknown = [p for p in paths if p not in self._options]
        if unknown:
            raise ConfigError(f"config options: {unknown} not among {list(self._options)}")
        return [self._options[p] for p in paths]

    def _make(self, spec: Opt, base: object, flags: Mapping[str, str]) -> click.Option:
        owner, name, hint = _leaf(self.cls, spec.path)
        where = f"{owner.__name__}.{name}"
        doc = field_docs(owner).get(name)
        if not doc:
            raise ConfigError(f"{where} has no docstring; add a string literal under the field "
                              f"(it is the help text of {spec.flag_name})")
        default = _get(base, spec.path) if spec.default is _UNSET else spec.default
        help_ = spec.help or help_text(doc, flags)
        if _unwrap_optional(hint) is bool or (hint is _UNSET and isinstance(default, bool)):
            if spec.negatable:
                decl = spec.flag if spec.flag and "/" in spec.flag else f"{spec.flag_name}/--no-{spec.flag_name[2:]}"
                return click.Option([decl, spec.param_name], default=default, show_default=True, help=help_)
            if default:
                raise ConfigError(f"{where}: a plain flag ({spec.flag_name}) needs a False default; keep negatable")
            return click.Option([spec.flag_name, spec.param_name], is_flag=True, default=False, help=help_)
        choices = spec.choices
        if isinstance(choices, str):
            choices = getattr(sys.modules[owner.__module__], choices)
        ptype = click.Choice(list(choices)) if choices else _click_type(hint, default, where)
        if isinstance(ptype, CommaSeparated) and isinstance(default, (tuple, list)):
            default = ",".join(str(v) for v in default)  # shown as typed on the command line
        return click.Option([spec.flag_name, spec.param_name], type=ptype, default=default,
                            show_default=default is not None, help=help_)

    def only(self, *paths: str) -> Callable:
        """A decorator adding the options of some fields, in the order given."""
        return functools.partial(self._decorate, paths)

    def __call__(self, f: Callable) -> Callable:
        """Decorator adding every option."""
        return self._decorate(None, f)

    def _decorate(self, paths: Sequence[str] | None, f: Callable) -> Callable:
        if paths is not None:
            missing = [p for p in paths if p not in {s.path for s in self.specs}]
            if missing:
                raise ConfigError(f"config options: {missing} not among {[s.path for s in self.specs]}")
        if isinstance(self._config, str):  # resolved by ConfigCommand on first use
            items: list = [_Deferred(self, paths)]
        else:
            items = self.options(paths)
        if isinstance(f, click.Command):
            if items and isinstance(items[0], _Deferred) and not isinstance(f, ConfigCommand):
                raise ConfigError(f"command {f.name!r}: options of {self._config} are built lazily; "
                                  "declare it with @click.command(cls=ConfigCommand)")
            f.params.extend(items)
        else:
            if not hasattr(f, "__click_params__"):
                f.__click_params__ = []  # type: ignore[attr-defined]
            f.__click_params__.extend(reversed(items))  # type: ignore[attr-defined]
        return f

    def to_config(self, values: Mapping[str, Any], base: object | None = None) -> Any:
        """A config from click values (keys of other parameters ignored), validated by ``__post_init__``.

        Args:
            values: the command's kwargs.
            base: the config to change (default: :meth:`base`).

        Raises:
            ConfigError: a value the dataclass rejects (one line, naming the flag when it can).

        """
        base = self.base() if base is None else base
        changes = {s.path: values[s.param_name] for s in self.specs if s.param_name in values}
        try:
            return _replace(base, {tuple(p.split(".")): v for p, v in changes.items()})
        except ConfigError as exc:
            msg = exc.one_line()
            named = [s.flag_name for s in self.specs if s.path in changes and changes[s.path] != _get(base, s.path)
                     and re.search(rf"\b{re.escape(s.path.rsplit('.', 1)[-1])}\b", msg)]
            raise ConfigError(msg + (f" (set by {named[0]})" if len(named) == 1 else "")) from None

    def to_values(self, config: object) -> dict[str, Any]:
        """Click values that :meth:`to_config` turns back into ``config`` (for the exposed fields)."""
        return {s.param_name: _get(config, s.path) for s in self.specs}


def _replace(obj: Any, changes: Mapping[tuple[str, ...], Any]) -> Any:
    direct: dict[str, Any] = {}
    nested: dict[str, dict[tuple[str, ...], Any]] = {}
    for path, value in changes.items():
        if len(path) == 1:
            direct[path[0]] = value
        else:
            nested.setdefault(path[0], {})[path[1:]] = value
    for name, sub in nested.items():
        direct[name] = _replace(getattr(obj, name), sub)
    if all(getattr(obj, k) == v for k, v in direct.items()):
        return obj
    return dataclasses.replace(obj, **direct)


class _Deferred:
    """Stands in a command's params for options whose config class is not imported yet."""

    def __init__(self, builder: ConfigOptions, paths: Sequence[str] | None) -> None:
        self.builder = builder
        self.paths = paths


class ConfigCommand(click.Command):
    """A click command whose :class:`ConfigOptions` given as ``"module:Class"`` are built on first use."""

    @property
    def params(self) -> list[click.Parameter]:  # type: ignore[override]
        """The parameters, with deferred config options expanded in place."""
        if any(isinstance(p, _Deferred) for p in self._params):
            expanded: list = []
            for p in self._params:
                expanded.extend(p.builder.options(p.paths) if isinstance(p, _Deferred) else [p])
            self._params[:] = expanded
        return self._params

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._params = value


def _commands(group: click.Group, ctx: click.Context, prefix: str) -> list[tuple[str, click.Command]]:
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        full = f"{prefix} {name}"
        out.append((full, cmd))
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, click.Context(cmd, parent=ctx, info_name=name), full))
    return out


def cli_option_names(group: click.Group, prog: str = "scenegen") -> dict[str, list[str]]:
    """Command (``"scenegen generate"``) -> its option flags (``-o``, ``--out``, ``--qa``, ``--no-qa``...)."""
    ctx = click.Context(group, info_name=prog)
    return {name: [o for p in cmd.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)]
            for name, cmd in _commands(group, ctx, prog)}


def option_default(param: click.Parameter, ctx: click.Context) -> Any:
    """The default a parameter shows (None when it has none, e.g. a required option)."""
    value = param.get_default(ctx, call=False)
    return None if value is getattr(click.core, "UNSET", None) else value


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_cli_docs(group: click.Group, prog: str = "scenegen") -> str:
    """The option reference of every command of ``group`` as Markdown (one table per command).

    docs/cli.md carries it between ``<!-- options:begin -->`` and ``<!-- options:end -->``; a test
    checks that it matches the commands.
    """
    ctx = click.Context(group, info_name=prog)
    parts = []
    for name, cmd in _commands(group, ctx, prog):
        sub = click.Context(cmd, info_name=name)
        usage = " ".join(cmd.collect_usage_pieces(sub))
        summary = cmd.get_short_help_str(limit=200)
        parts.append(f"### `{name}`\n\n{summary}\n\n`{name} {usage}`\n")
        rows = []
        for p in cmd.params:
            if not isinstance(p, click.Option):
                continue
            names = [*p.opts, *p.secondary_opts]
            if not p.is_flag:
                names[len(p.opts) - 1] += f" {p.make_metavar(sub)}"
            flags = ", ".join(f"`{o}`" for o in names)
            default = ""
            if p.required:
                default = "required"
            else:
                value = option_default(p, sub)
                if isinstance(value, bool) and p.secondary_opts:
                    value = (p.opts if value else p.secondary_opts)[0]
                if not (value is None or value is False or value == "" or callable(value)):
                    default = f"`{value}`"
            rows.append(f"| {_cell(flags)} | {_cell(default)} | {_cell(p.help or '')} |")
        if rows:
            parts.append("| option | default | meaning |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


DOCS_BEGIN = "<!-- options:begin -->"
DOCS_END = "<!-- options:end -->"


def splice_cli_docs(text: str, reference: str) -> str:
    """``text`` (docs/cli.md) with the part between :data:`DOCS_BEGIN` and :data:`DOCS_END` set to ``reference``.

    Raises:
        ConfigError: the markers are missing.

    """
    head, sep, rest = text.partition(DOCS_BEGIN)
    _, sep2, tail = rest.partition(DOCS_END)
    if not (sep and sep2):
        raise ConfigError(f"docs text has no {DOCS_BEGIN} ... {DOCS_END} block; add the two markers where the "
                          "option reference goes")
    return f"{head}{DOCS_BEGIN}\n<!-- generated from the commands by scenegen.options.render_cli_docs -->\n\n" \
           f"{reference.strip()}\n\n{DOCS_END}{tail}"
