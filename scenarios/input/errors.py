"""One error type and one translator for every input groupsim reads.

Scenario files (Connect and Kafka Streams), sweep files and ``groupsim assign`` JSON are all
decoded into msgspec Structs with unknown keys forbidden. :func:`translate_validation_error`
turns msgspec's ``"<problem> - at `$.a[1].b`"`` into a key path in the input's own spelling
and a readable problem, and :class:`ScenarioError` carries them as one line
``"<file>: <key path>: <problem>"``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from protocol.config_values import JAVA_INT_MAX

#: The largest TOML integer (a signed 64-bit ``long``): the bound of every virtual time.
INT64_MAX = 2**63 - 1

__all__ = [
    "ScenarioError",
    "Segment",
    "parse_toml",
    "read_text_file",
    "render_path",
    "translate_validation_error",
]

#: One step of a key path: a table key or an array index.
Segment = str | int
_Segment = Segment


class ScenarioError(Exception):
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
        ScenarioError: ``"<file>: invalid TOML: ..."`` (keeps tomllib's line and column).
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(file, None, f"invalid TOML: {exc}") from None


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def render_path(segments: list[_Segment]) -> str:
    out: list[str] = []
    for seg in segments:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        else:
            key = seg if _BARE_KEY.match(seg) else '"' + seg.replace('"', '\\"') + '"'
            out.append(("." if out else "") + key)
    return "".join(out)


def _walk_msgspec_path(path: str, raw: Any) -> tuple[list[_Segment], Any]:
    """Split msgspec's ``$.a.b[3].c`` into segments, using the raw data to keep dotted keys
    (``$.coordinator.group.initial.rebalance.delay.ms``) whole. Returns (segments, value)."""
    rest = path[1:] if path.startswith("$") else path
    segments: list[_Segment] = []
    cur: Any = raw
    while rest:
        if rest.startswith("["):
            end = rest.index("]")
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


def _type_at(segments: list[_Segment], raw: Any, root: Any) -> Any:
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


def _union_tags(segments: list[_Segment], root: Any) -> list[str]:
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


def _describe(value: Any) -> str:
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


def translate_validation_error(message: str, raw: Any, root: Any) -> tuple[str | None, str]:
    """msgspec's ``"<problem> - at `$.a[1].b`"`` → (``"a[1].b"``, readable problem).

    Args:
        message: ``str(msgspec.ValidationError)``.
        raw: the decoded input (TOML or JSON) the error is about.
        root: the Struct type the input was converted to (names the keys a table knows and
            the actions a tagged union accepts).
    """
    text, sep, where = message.rpartition(" - at `")
    if not sep:
        text, where = message, "$`"
    segments, value = _walk_msgspec_path(where.rstrip("`"), raw)

    if m := re.fullmatch(r"Object missing required field `(.+)`", text):
        key = m.group(1)
        parent = _type_at(segments, raw, root)
        if key == "action" and segments[:1] == ["timeline"]:
            actions = ", ".join(_union_tags(segments, root))
            return render_path([*segments, key]), f"missing required key (actions: {actions})"
        what = "missing required key"
        if isinstance(parent, msgspec.inspect.StructType) and parent.tag is not None:
            what += f" for action {parent.tag!r}"
        return render_path([*segments, key]), what

    if m := re.fullmatch(r"Object contains unknown field `(.+)`", text):
        key = m.group(1)
        parent = _type_at(segments, raw, root)
        if isinstance(parent, msgspec.inspect.StructType):
            known = ", ".join(f.encode_name for f in parent.fields)
            if parent.tag is not None:
                problem = f"not a key of action {parent.tag!r} (its keys: action, {known})"
            else:
                problem = f"unknown key (known: {known})"
        else:
            problem = "unknown key"
        return render_path([*segments, key]), problem

    path = render_path(segments) or None
    if m := re.fullmatch(r"Invalid value '(.*)'", text):
        if segments and segments[-1] == "action":
            actions = ", ".join(_union_tags(segments[:-1], root))
            return path, f"unknown action {m.group(1)!r} (actions: {actions})"
        return path, f"invalid value {m.group(1)!r}"
    if m := re.fullmatch(r"Invalid enum value '(.*)'", text):
        info = _type_at(segments, raw, root)
        if isinstance(info, msgspec.inspect.LiteralType):
            allowed = ", ".join(str(v) for v in info.values)
            return path, f"invalid value {m.group(1)!r} (expected one of: {allowed})"
        return path, f"invalid value {m.group(1)!r}"
    if m := re.fullmatch(r"Expected `(\w+)`, got `(\w+)`", text):
        want, got = m.group(1), m.group(2)
        got_text = _TYPE_WORDS.get(got, got)
        if got in ("int", "float", "str", "bool"):
            got_text = f"{got_text} ({_describe(value)})"
        return path, f"expected {_TYPE_WORDS.get(want, want)}, got {got_text}"
    if m := re.fullmatch(r"Expected `int` ([<>]=) (-?\d+)", text):
        op, bound = m.group(1), int(m.group(2))
        extra = " (a Java int)" if op == "<=" and bound == JAVA_INT_MAX else ""
        if op == "<=" and bound == INT64_MAX:
            extra = " (2^63 - 1, the largest TOML integer)"
        return path, f"expected an integer {op} {bound}{extra}, got {_describe(value)}"
    if m := re.fullmatch(r"Expected `float` ([<>]=?) (\S+)", text):
        info = _type_at(segments, raw, root)
        low = getattr(info, "gt", None)
        high = getattr(info, "le", None)
        if low is not None and high is not None:
            return path, f"expected a number > {low:g} and <= {high:g}, got {_describe(value)}"
        return path, f"expected a number {m.group(1)} {m.group(2)}, got {_describe(value)}"
    if re.fullmatch(r"Expected `str` matching regex '.*'", text):
        return path, (
            f"invalid name {_describe(value)} (use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit)"
        )
    if re.fullmatch(r"Expected `str` of length >= 1", text):
        return path, "must not be empty"
    return path, text[:1].lower() + text[1:]
