"""The errors `loads` raises: a `ValueError` whose message stays bounded whatever the document
holds (untrusted data is quoted cut short), and the checks of JSON types and keys that raise it.
"""

from __future__ import annotations

import reprlib

from tracegrad.ir.document import MAX_MESSAGE

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_REPR.maxstring = _REPR.maxother = 40
_REPR.maxlong = 40


def _show(x, limit: int = 100) -> str:
    """`repr(x)` cut short: a message quoting a 10^6-wide shape, a 4,000-digit int or JSON
    nested 900 deep must not grow with it (reprlib stops at 6 items and 3 levels)."""
    try:
        return _clip(_REPR.repr(x), limit)
    except Exception:  # noqa: BLE001 - an int too long to print, a repr that raises
        return f"<a {type(x).__name__}>"


def _clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, keeping its start and its end (where a message
    usually says what to do)."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]} ... {text[len(text) - half :]}"


def _label(name: str) -> str:
    """A primitive's name as a document gives it, for messages: cut to 40 characters, and
    quoted when it holds control characters (a message must not carry terminal escapes)."""
    return name[:40] if name.isprintable() else _show(name, 40)


def _error(msg: str) -> ValueError:
    # every piece of untrusted data is already cut short; the cap is the last line of defense
    return ValueError(_clip(f"loads: {msg}", MAX_MESSAGE))


def _fail(msg: str):
    raise _error(msg)


def _expect(obj, typ, what: str):
    if not isinstance(obj, typ) or (typ is int and isinstance(obj, bool)):
        names = {
            dict: "an object",
            list: "a list",
            str: "a string",
            int: "an integer",
            bool: "true or false",
        }
        _fail(f"{what} must be {names.get(typ, typ.__name__)}, got {_json_type(obj)}")
    return obj


def _json_type(obj) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(obj), "a value")


def _keys(obj: dict, required: frozenset, what: str, optional: frozenset = frozenset()):
    missing = sorted(required - obj.keys())
    if missing:
        _fail(f"{what} is missing {missing}")
    extra = sorted(obj.keys() - required - optional)
    if extra:
        _fail(f"{what} has unknown keys {_show(extra)}")
