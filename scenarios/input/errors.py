"""One error for every input file, and one translator from msgspec's validation errors.

:class:`ScenarioError` is what the scenario loaders raise (``"<file>: <key path>: <problem>"``).
:func:`translate_validation_error` turns msgspec's ``"<problem> - at `$.a[1].b`"`` into a key
path and a readable problem; the TOML loaders (Connect and Streams scenarios, sweeps) and the
JSON inputs of ``groupsim assign`` (:mod:`scenarios.input.assign_schema`) all use it, so a
wrong type, an unknown key or a value out of range reads the same everywhere. Two spellings:

- TOML (the default): paths quote keys that contain dots (``coordinator."group.max.size"``),
  an object is "a table", a range problem reads ``expected an integer >= 0, got -1``;
- JSON (``json=True``): paths join keys with dots as written (``config.max.warmup.replicas``),
  an object is "an object", a range problem reads ``must be >= 0, got -1``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from protocol.errors import InputError
from scenarios.input import schema
from scenarios.input.limits import LimitExceeded, check_nesting
from scenarios.input.schema import Scenario

__all__ = [
    "ScenarioError",
    "convert_scenario",
    "Segment",
    "describe",
    "parse_toml",
    "read_text_file",
    "render_path",
    "translate_validation_error",
    "walk_msgspec_path",
]

Segment = str | int


class ScenarioError(InputError):
    """A scenario that cannot be loaded. ``str(err)`` is one line:
    ``"<file>: <key path>: <problem>"`` (or ``"<file>: <problem>"`` when no key is involved).

    Attributes:
        file: the file name as shown (the base name of the path).
        key_path: the TOML key path (``timeline[3].member``), or ``None``.
        problem: what is wrong, one line.
    """

    def __init__(self, file: str, key_path: str | None, problem: str) -> None:
        self.file = file
        self.key_path = key_path
        self.problem = " ".join(str(problem).split())
        text = f"{file}: {key_path}: {self.problem}" if key_path else f"{file}: {self.problem}"
        super().__init__(text)


def read_text_file(path: str | Path) -> str:
    """The UTF-8 text of an input file.

    Raises:
        ScenarioError: ``"<file>: cannot read: ..."`` or ``"<file>: not UTF-8 text: ..."``.
    """
    source = Path(path)
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ScenarioError(source.name, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text: {exc.reason} at byte {exc.start}"
        raise ScenarioError(source.name, None, problem) from None


def parse_toml(text: str, file: str) -> dict[str, Any]:
    """TOML text as a dict.

    Raises:
        ScenarioError: ``"<file>: invalid TOML: ..."`` (keeps tomllib's line and column), or
            ``"<file>: line L column C: ... exceeds the limit of N nesting levels ..."``
            (arrays or inline tables nested too deep, docs/limits.md).
    """
    try:
        check_nesting(text, toml=True)
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(file, None, f"invalid TOML: {exc}") from None
    except LimitExceeded as exc:
        raise ScenarioError(file, exc.key, exc.problem) from None
    except RecursionError:  # a nesting limit raised past what the parser can recurse into
        raise ScenarioError(file, None, "nested too deeply to parse") from None


# --------------------------------------------------------------------------- key paths

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def render_path(segments: list[Segment], *, json: bool = False) -> str:
    """``["a", 1, "b.c"]`` → ``a[1]."b.c"`` (TOML) or ``a[1].b.c`` (``json``)."""
    out: list[str] = []
    for seg in segments:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        else:
            key = seg if json or _BARE_KEY.match(seg) else '"' + seg.replace('"', '\\"') + '"'
            out.append(("." if out else "") + key)
    return "".join(out)


def walk_msgspec_path(path: str, raw: Any) -> tuple[list[Segment], Any]:
    """Split msgspec's ``$.a.b[3].c`` into segments, using the raw data to keep dotted keys
    (``$.coordinator.group.initial.rebalance.delay.ms``) whole. Returns (segments, value)."""
    rest = path[1:] if path.startswith("$") else path
    segments: list[Segment] = []
    cur: Any = raw
    while rest:
        if rest.startswith("["):
            end = rest.index("]")
            if not rest[1:end].isdigit():  # "[...]": a dict value msgspec does not name
                segments.append(rest[: end + 1])
                cur = None
                rest = rest[end + 1 :]
                continue
            index = int(rest[1:end])
            segments.append(index)
            cur = cur[index] if isinstance(cur, list) and index < len(cur) else None
            rest = rest[end + 1 :]
            continue
        if rest.startswith("."):
            rest = rest[1:]
        key = None
        if isinstance(cur, dict):
            for candidate in sorted(cur, key=len, reverse=True):
                if rest == candidate or rest.startswith((candidate + ".", candidate + "[")):
                    key = candidate
                    break
        if key is None:
            match = re.match(r"[^.\[]+", rest)
            key = match.group(0) if match else rest
        segments.append(key)
        cur = cur.get(key) if isinstance(cur, dict) else None
        rest = rest[len(key) :]
    return segments, cur


def _name_dict_keys(text: str, where: str, raw: Any, root: Any) -> str:
    """Replace each ``[...]`` of msgspec's path (a value inside a dict, whose key msgspec does
    not report) by ``.<key>``: the first key whose value alone, in place of the whole dict,
    makes the conversion fail with the same error."""
    message = f"{text} - at `{where}`"
    trial = raw
    while "[...]" in where:
        prefix, _, rest = where.partition("[...]")
        segments, container = walk_msgspec_path(prefix, trial)
        if not isinstance(container, dict):
            break
        for key, value in container.items():
            candidate = _replace_at(trial, segments, {key: value})
            try:
                msgspec.convert(candidate, root)
            except msgspec.ValidationError as exc:
                if str(exc) == message:
                    trial = candidate
                    where = f"{prefix}.{key}{rest}"
                    break
        else:
            break
    return where


def _replace_at(data: Any, segments: list[Segment], value: Any) -> Any:
    """A copy of ``data`` with the item at ``segments`` replaced by ``value``."""
    if not segments:
        return value
    head, tail = segments[0], segments[1:]
    if isinstance(data, dict) and isinstance(head, str):
        return {**data, head: _replace_at(data[head], tail, value)}
    if isinstance(data, list) and isinstance(head, int):
        out = list(data)
        out[head] = _replace_at(data[head], tail, value)
        return out
    return data


def _type_at(root: Any, segments: list[Segment], raw: Any) -> Any:
    """The msgspec.inspect type of the value at ``segments`` (a Struct for a table)."""
    info: Any = msgspec.inspect.type_info(root)
    cur: Any = raw
    for seg in segments:
        info = _pick_struct(info, cur)
        if isinstance(seg, int):
            info = info.item_type if hasattr(info, "item_type") else None
            cur = cur[seg] if isinstance(cur, list) and seg < len(cur) else None
        elif isinstance(info, msgspec.inspect.StructType):
            found = [f for f in info.fields if f.encode_name == seg]
            info = found[0].type if found else None
            cur = cur.get(seg) if isinstance(cur, dict) else None
        elif isinstance(info, msgspec.inspect.DictType):
            info = info.value_type
            cur = cur.get(seg) if isinstance(cur, dict) else None
        else:
            return None
    return _pick_struct(info, cur)


def _union_tags(segments: list[Segment], root: Any) -> list[str]:
    """The tags of the tagged union at ``segments`` (the actions a timeline step may have)."""
    info: Any = msgspec.inspect.type_info(root)
    for seg in segments:
        if isinstance(seg, int):
            info = getattr(info, "item_type", None)
        elif isinstance(info, msgspec.inspect.StructType):
            found = [f for f in info.fields if f.encode_name == seg]
            info = found[0].type if found else None
    if isinstance(info, msgspec.inspect.UnionType):
        return [str(t.tag) for t in info.types if isinstance(t, msgspec.inspect.StructType)]
    return []


def _pick_struct(info: Any, value: Any) -> Any:
    """Resolve an Optional/tagged union to the member that applies to ``value``."""
    if isinstance(info, msgspec.inspect.UnionType):
        options = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
        if isinstance(value, dict):
            for option in options:
                if isinstance(option, msgspec.inspect.StructType) and (
                    option.tag is None or option.tag == value.get(option.tag_field)
                ):
                    return option
        if len(options) == 1:
            return options[0]
        for option in options:
            if not isinstance(option, msgspec.inspect.StructType):
                return option
    return info


_TYPE_WORDS = {
    "int": "an integer",
    "str": "a string",
    "bool": "a boolean",
    "float": "a float",
    "object": "a table",
    "array": "an array",
    "null": "nothing",
    "datetime": "a datetime",
    "date": "a date",
    "time": "a time",
}
_JSON_TYPE_WORDS = {**_TYPE_WORDS, "object": "an object", "null": "null", "float": "a number"}


def describe(value: Any) -> str:
    """A value as an error message shows it: ``true``, ``3``, ``'w1'``, ``a table``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def translate_validation_error(
    message: str, raw: Any, root: Any = Scenario, *, json: bool = False
) -> tuple[str | None, str]:
    """msgspec's ``"<problem> - at `$.a[1].b`"`` → (``"a[1].b"``, readable problem).

    Args:
        message: ``str(msgspec.ValidationError)``.
        raw: the data that was converted (to keep dotted keys whole and show bad values).
        root: the type it was converted to (to name a table's keys); default a Connect
            :class:`scenarios.input.schema.Scenario`.
        json: JSON spelling (see the module docstring) instead of TOML's.

    Returns:
        (the key path, or ``None`` for the top level; the problem, one line).
    """
    words = _JSON_TYPE_WORDS if json else _TYPE_WORDS
    text, sep, where = message.rpartition(" - at `")
    if not sep:
        text, where = message, "$`"
    where = _name_dict_keys(text, where.rstrip("`"), raw, root)
    segments, value = walk_msgspec_path(where, raw)

    def render(segs: list[Segment]) -> str:
        return render_path(segs, json=json)

    if m := re.fullmatch(r"Object missing required field `(.+)`", text):
        key = m.group(1)
        parent = _type_at(root, segments, raw)
        if json:
            return render([*segments, key]), "missing"
        if key == "action" and segments[:1] == ["timeline"]:
            actions = ", ".join(_union_tags(segments, root))
            return render([*segments, key]), f"missing required key (actions: {actions})"
        what = "missing required key"
        if isinstance(parent, msgspec.inspect.StructType) and parent.tag is not None:
            what += f" for action {parent.tag!r}"
        return render([*segments, key]), what

    if m := re.fullmatch(r"Object contains unknown field `(.+)`", text):
        key = m.group(1)
        parent = _type_at(root, segments, raw)
        if isinstance(parent, msgspec.inspect.StructType):
            known = ", ".join(f.encode_name for f in parent.fields)
            if json:
                known = ", ".join(sorted(f.encode_name for f in parent.fields))
                problem = f"unknown key (expected one of {known})"
            elif parent.tag is not None:
                problem = f"not a key of action {parent.tag!r} (its keys: action, {known})"
            else:
                problem = f"unknown key (known: {known})"
        else:
            problem = "unknown key"
        return render([*segments, key]), problem

    path = render(segments) or None
    if m := re.fullmatch(r"Invalid value '(.*)'", text):
        if segments and segments[-1] == "action" and segments[:1] == ["timeline"]:
            actions = ", ".join(_union_tags(segments[:-1], root))
            return path, f"unknown action {m.group(1)!r} (actions: {actions})"
        return path, f"invalid value {m.group(1)!r}"
    if m := re.fullmatch(r"Invalid enum value '(.*)'", text):
        info = _type_at(root, segments, raw)
        if isinstance(info, msgspec.inspect.LiteralType):
            allowed = ", ".join(str(v) for v in info.values)
            return path, f"invalid value {m.group(1)!r} (expected one of: {allowed})"
        return path, f"invalid value {m.group(1)!r}"
    if m := re.fullmatch(r"Expected `(\w+(?: \| \w+)*)`, got `(\w+)`", text):
        want = " or ".join(words.get(w, w) for w in m.group(1).split(" | "))
        got = m.group(2)
        got_text = words.get(got, got)
        if got in ("int", "float", "str", "bool") and not json:
            got_text = f"{got_text} ({describe(value)})"
        return path, f"expected {want}, got {got_text}"
    if m := re.fullmatch(r"Expected `int` ([<>]=) (-?\d+)", text):
        op, bound = m.group(1), int(m.group(2))
        if json:
            return path, f"must be {op} {bound}, got {describe(value)}"
        extra = " (a Java int)" if op == "<=" and bound == schema.INT_MAX else ""
        if op == "<=" and bound == schema.INT64_MAX:
            extra = " (2^63 - 1, the largest TOML integer)"
        return path, f"expected an integer {op} {bound}{extra}, got {describe(value)}"
    if m := re.fullmatch(r"Expected `float` ([<>]=?) (\S+)", text):
        info = _type_at(root, segments, raw)
        low = getattr(info, "gt", None)
        high = getattr(info, "le", None)
        if low is not None and high is not None:
            return path, f"expected a number > {low:g} and <= {high:g}, got {describe(value)}"
        return path, f"expected a number {m.group(1)} {m.group(2)}, got {describe(value)}"
    if re.fullmatch(r"Expected `str` matching regex '.*'", text):
        return path, (
            f"invalid name {describe(value)} (use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit)"
        )
    if re.fullmatch(r"Expected `str` of length >= 1", text) or (
        json and re.fullmatch(r"Expected `(array|object)` of length >= 1", text)
    ):
        return path, "must not be empty"
    return path, text[:1].lower() + text[1:]


_T = TypeVar("_T")


def convert_scenario(raw: dict[str, Any], root: type[_T], file: str) -> _T:
    """A parsed scenario table (:func:`parse_toml`) as ``root`` (a Connect, Streams or consumer
    scenario struct), shared by every kind's loader.

    Raises:
        ScenarioError: a key or value ``root`` does not accept (the message names ``file`` and
            the key path, :func:`translate_validation_error`).
    """
    try:
        return msgspec.convert(raw, type=root)
    except msgspec.ValidationError as exc:
        key_path, problem = translate_validation_error(str(exc), raw, root)
        raise ScenarioError(file, key_path, problem) from None
