"""The API key: a :class:`Secret` that never shows itself, checked before any request, and
redaction of it, in every form a server may echo it, from every message this package builds.

Every Secret made in the process is registered; :func:`redact` removes all of them from a text,
raw or escaped (JSON ``\\uXXXX`` and ``\\/``, URL ``%XX``) or inside base64 (of the key, of
``Bearer key``, of anything that contains the key, at any alignment). Endpoint and response
errors redact their message when they are built (see :class:`RedactedError`).
"""

from __future__ import annotations

import base64
import os
import re
import threading

from ..base.errors import EndpointError, SpecError

MASK = "***"
TEXT_LIMIT = 200  # the most characters of any one piece of server text quoted in a message
MESSAGE_LIMIT = 4000  # backstop for a whole message

_lock = threading.Lock()
_patterns: dict[str, re.Pattern[str]] = {}


class Secret:
    """A credential that never shows itself in ``repr``, ``str``, f-strings or logs.

    ``source`` names where it came from (an environment variable) for error messages.
    """

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str | None = None) -> None:
        self._value = value
        self.source = source
        if value:
            _register(value)

    @classmethod
    def validated(cls, value: str, env_name: str) -> Secret:
        """The key read from ``$env_name``, surrounding whitespace stripped; SpecError (naming the
        variable, never the value) unless it is non-empty printable ASCII without whitespace."""
        key = value.strip()
        problem = key_problem(key)
        if problem:
            raise SpecError(
                f"the API key in ${env_name} {problem}; an HTTP header can carry only printable ASCII "
                f"without spaces: re-export ${env_name} with the key alone"
            )
        return cls(key, source=env_name)

    @classmethod
    def from_env(cls, env_name: str | None, what_to_do: str = "") -> Secret | None:
        """The key in ``$env_name`` (None when no variable is configured); SpecError naming the variable, never
        a value, when it is unset, empty or not sendable. ``what_to_do`` ends the message of an unset one."""
        if not env_name:
            return None
        value = os.environ.get(env_name, "")
        if not value.strip():
            raise SpecError(
                f"--api-key-env names ${env_name}, but that environment variable is not set or {what_to_do}"
            )
        return cls.validated(value, env_name)

    def check(self) -> None:
        """SpecError when the key cannot be sent in a header (called before any request)."""
        problem = key_problem(self._value)
        if problem:
            where = f"the API key in ${self.source}" if self.source else "the API key"
            raise SpecError(f"{where} {problem}; an HTTP header can carry only printable ASCII without spaces")

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        return _pattern(self._value).sub(MASK, text) if self._value else text

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


def key_problem(key: str) -> str | None:
    """What makes ``key`` unusable in an ``Authorization`` header (never quoting it), or None."""
    if not key:
        return "is empty"
    for pos, ch in enumerate(key, 1):
        code = ord(ch)
        if ch in "\r\n":
            kind = "a line break"
        elif ch.isspace():
            kind = "whitespace"
        elif code < 0x20 or code == 0x7F:
            kind = "a control character"
        elif code > 0x7E:
            kind = "a non-ASCII character"
        else:
            continue
        return f"holds {kind} at character {pos} of {len(key)}"
    return None


# -- redaction ------------------------------------------------------------------------------------
def _register(value: str) -> None:
    with _lock:
        if value not in _patterns:
            _patterns[value] = _compile(value)


def _pattern(value: str) -> re.Pattern[str]:
    with _lock:
        pat = _patterns.get(value)
    return pat if pat is not None else _compile(value)


def _char(ch: str) -> str:
    """A regex for one character of the key, raw or escaped as JSON (``\\u00xx``, ``\\/``) or in a URL."""
    code = ord(ch)
    alts = [re.escape(ch)]
    if code < 0x10000:
        alts.append(rf"(?i:\\+u{code:04x})")
    if code < 0x100:
        alts.append(f"(?i:%{code:02x})")
    if ch in '/"\\':
        alts.append(r"\\+" + re.escape(ch))
    return "(?:" + "|".join(alts) + ")"


def _base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that encode ``raw`` wherever it sits in a longer encoded text.

    Bytes at offset ``o`` (mod 3) of the encoded text map to fixed characters once the characters
    shared with neighbouring bytes are dropped; one core per offset and alphabet.
    """
    cores = []
    for o in range(3):
        enc = base64.b64encode(b"\0" * o + raw).decode()
        first = -(-8 * o // 6)  # first character whose 6 bits all lie inside raw
        last = (8 * (o + len(raw))) // 6  # characters before this one lie inside raw
        core = enc[first:last]
        if len(core) >= 8:
            cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def _compile(value: str) -> re.Pattern[str]:
    escaped = "".join(_char(ch) for ch in value)
    raw = value.encode("utf-8", "surrogatepass")
    b64 = sorted({re.escape(c) for c in _base64_cores(raw)}, key=len, reverse=True)
    return re.compile("|".join([escaped, *b64]))


def redact(text: str) -> str:
    """``text`` without any registered secret, in any of the forms above."""
    with _lock:
        pats = list(_patterns.values())
    for pat in pats:
        text = pat.sub(MASK, text)
    return text


def cut(text: str, limit: int = TEXT_LIMIT) -> str:
    """At most ``limit`` characters of server text, on one line, control characters escaped (no terminal
    escape sequence gets through), with ``…(N more)`` when cut.

    Secrets are removed first, so a cut never leaves the start of a key behind."""
    flat = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in " ".join(redact(str(text)).split()))
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}…({len(flat) - limit} more)"


class RedactedError(EndpointError):
    """An endpoint error whose message has every secret removed and a bounded length, from the start
    (so ``args``, ``repr`` and tracebacks hold no key either)."""

    def __init__(self, message: str) -> None:
        clean = redact(message)
        if len(clean) > MESSAGE_LIMIT:
            clean = f"{clean[:MESSAGE_LIMIT]}…({len(clean) - MESSAGE_LIMIT} more)"
        super().__init__(clean)
