"""Safe, collision-free folder names for a report's pairs.

A pair's display names (its scenario key and agent name, e.g. ``codex|gpt-5.5``) stay in
``report.json``; its folder is ``scenarios/<scenario folder>/<agent folder>``, each part
made of ``[A-Za-z0-9._-]`` only (a scenario part may also keep ``@``, the variant
separator), so a report folder is easy in a shell, valid on Windows and survives CI
artifact uploads. The entries' ``dir`` fields record which folder holds which pair.

The rule, per name (one ``/``-separated part of a scenario key, or an agent name):

- **Kept readable** when the name is already safe apart from ``|``: each ``|`` becomes
  ``--`` (``codex|gpt-5.5`` → ``codex--gpt-5.5``). That is reversible only when the name has
  no ``--`` and no ``-`` next to a ``|``, so those names take the other branch, as do names
  that start with ``.``, ``-`` or ``|`` or end with ``.``, Windows device names (``CON``,
  ``nul.txt`` …), names whose folder would pass :data:`MAX_LENGTH`, and names already
  ending like a hash suffix.
- **Otherwise hashed**: every unsafe character becomes ``_`` (``|`` still ``--``), a
  leading ``.`` or ``-`` becomes ``_`` (a device name gets ``_`` in front), the result is
  cut to fit, and ``-`` plus the first :data:`HASH_LENGTH` hex digits of the name's sha256
  are appended (``my agent!`` → ``my_agent_-17cb6f79``).

So two different names never share a folder: kept names decode back to themselves, a kept
name never ends like a hash suffix, and two hashed names differ in their suffix unless
their sha256 prefixes collide. The rule is stateless (a folder depends on its name only),
and a report's readers never recompute it: they go by the entries' ``dir``.
"""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 64
"""The longest folder name a pair part gets (characters, all ASCII)."""
HASH_LENGTH = 8
"""Hex digits of the sha256 suffix a name that cannot be kept readable gets."""

_SAFE = "A-Za-z0-9._"
"""The safe characters but ``-`` (last in a character class, where it means itself)."""
_HASHED_END = re.compile(rf"[-|][0-9a-f]{{{HASH_LENGTH}}}$")
_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(1, 10)]
    + [f"lpt{i}" for i in range(1, 10)]
)
"""Windows device names: no file or folder may be called so, whatever its extension."""


def folder_name(name: str, *, keep: str = "") -> str:
    """The safe folder of one name (see the module's rule); ``keep``: further characters
    left as they are (``@`` in scenario keys)."""
    extra = re.escape(keep)
    readable = name.replace("|", "--")
    if _kept_readable(name, readable, extra):
        return readable
    unsafe = re.compile(f"[^{_SAFE}{extra}-]")
    cleaned = unsafe.sub("_", name.replace("|", "--"))
    if not cleaned or cleaned[0] in ".-":  # hidden, or read as an option by a shell tool
        cleaned = "_" + cleaned[1:]
    if cleaned.split(".", 1)[0].lower() in _RESERVED:  # nul.txt stays a device name
        cleaned = "_" + cleaned
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LENGTH]
    return f"{cleaned[: MAX_LENGTH - HASH_LENGTH - 1]}-{digest}"


def _kept_readable(name: str, readable: str, extra: str) -> bool:
    """Whether ``readable`` (``|`` → ``--``) is a safe folder that only ``name`` maps to."""
    return bool(
        readable
        and len(readable) <= MAX_LENGTH
        and re.fullmatch(f"[{_SAFE}{extra}|-]+", name)
        and "--" not in name
        and "-|" not in name
        and "|-" not in name
        and name[0] not in ".-|"
        and not name.endswith(".")  # Windows drops a trailing dot
        and name.split(".", 1)[0].lower() not in _RESERVED
        and not _HASHED_END.search(name)
    )


def scenario_folder(scenario_key: str) -> str:
    """A scenario key's folder path: each ``/``-separated part made safe, ``@`` kept."""
    return "/".join(folder_name(part, keep="@") for part in scenario_key.split("/"))


def agent_folder(agent_name: str) -> str:
    """An agent name's folder: ``codex|gpt-5.5`` → ``codex--gpt-5.5``."""
    return folder_name(agent_name)


def legacy_pair_dir(scenario_key: str, agent_name: str) -> str:
    """A pair's folder as reports written before safe folder names had it: the display
    names as they are (``scenarios/cms/post/codex|gpt-5``)."""
    return f"scenarios/{scenario_key}/{agent_name}"
