"""Java ``String`` semantics Kafka's observable behaviour depends on besides hashing.

``String.compareTo`` order (UTF-16 code units, which equals comparing the UTF-16-BE bytes) as
``Collections.sort`` / ``TreeSet`` use it, and ``new String(bytes, UTF_8)`` decoding as Kafka's
generated message readers use it (OpenJDK 17).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["java_string_key", "java_sorted_strings", "java_utf8"]


def java_string_key(text: str) -> bytes:
    """Sort key giving Java ``String.compareTo`` order (UTF-16 code units)."""
    return text.encode("utf-16-be")


def java_sorted_strings(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted as Java's ``Collections.sort`` / ``TreeSet`` would sort them."""
    items = list(strings)
    if all(map(str.isascii, items)):
        return sorted(items)
    return sorted(items, key=java_string_key)


_REPLACEMENT = "\ufffd"


def _continuation(b: int) -> bool:
    return b & 0xC0 == 0x80


def _bad_second_of_four(b1: int, b2: int) -> bool:
    """The second byte of a 4-byte sequence cannot follow ``b1`` (overlong, beyond U+10FFFF or
    not a continuation byte)."""
    return (
        (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
        or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
        or not _continuation(b2)
    )


def java_utf8(raw: bytes) -> str:
    """``new String(raw, StandardCharsets.UTF_8)`` as OpenJDK 17 decodes it (what Kafka's
    generated message readers do with a STRING's bytes).

    Well-formed UTF-8 decodes as in Python. Malformed input gets U+FFFD per malformed unit as
    Java's decoder cuts them, which is not always Python's ``errors="replace"`` cut: a
    3-byte lead followed by a continuation byte that is not allowed after it (``ED A9``, a
    surrogate range) is one unit in Java, two in Python; an encoded surrogate (``ED A0 80``)
    is one unit in Java, three in Python; a truncated sequence at the end is one unit, and
    Java stops there.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    sp, sl = 0, len(raw)
    while sp < sl:
        b1 = raw[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:  # two bytes
            if sp < sl:
                b2 = raw[sp]
                if _continuation(b2):
                    sp += 1
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                else:
                    out.append(_REPLACEMENT)
                continue
            out.append(_REPLACEMENT)
            break
        elif 0xE0 <= b1 <= 0xEF:  # three bytes
            if sp + 1 < sl:
                b2, b3 = raw[sp], raw[sp + 1]
                bad_second = (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _continuation(b2)
                if bad_second or not _continuation(b3):
                    out.append(_REPLACEMENT)
                    sp += 0 if bad_second else 1
                    continue
                sp += 2
                c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                out.append(_REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))
                continue
            if sp < sl and ((b1 == 0xE0 and raw[sp] & 0xE0 == 0x80) or not _continuation(raw[sp])):
                out.append(_REPLACEMENT)
                continue
            out.append(_REPLACEMENT)
            break
        elif 0xF0 <= b1 <= 0xF7:  # four bytes
            if sp + 2 < sl:
                b2, b3, b4 = raw[sp], raw[sp + 1], raw[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if (
                    _continuation(b2)
                    and _continuation(b3)
                    and _continuation(b4)
                    and 0x10000 <= uc <= 0x10FFFF
                ):
                    sp += 3
                    out.append(chr(uc))
                    continue
                out.append(_REPLACEMENT)
                if b1 > 0xF4 or _bad_second_of_four(b1, b2):
                    continue  # a unit of one byte
                sp += 1 if not _continuation(b3) else 2
                continue
            if b1 > 0xF4 or (sp < sl and _bad_second_of_four(b1, raw[sp])):
                out.append(_REPLACEMENT)
                continue
            sp += 1
            out.append(_REPLACEMENT)
            if sp < sl and not _continuation(raw[sp]):
                continue
            break
        else:
            out.append(_REPLACEMENT)
    return "".join(out)
