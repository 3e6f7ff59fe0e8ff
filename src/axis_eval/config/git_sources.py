"""Git URLs in a config: remote scenario sources, GitHub skills, ``copy`` from a repository.

A URL is ``https://``, ``http://``, ``git://`` or ``ssh://`` followed by a host and at least
two path segments (``owner/repo``; the owner may have more, as nested groups do); a
trailing ``.git`` or ``/`` is dropped, as AXIS does. What follows ``#`` is ours:

- in ``scenarios``: ``URL#REF``, a branch, tag or full commit id to pin (also the object
  form ``{"url": URL, "ref": REF}``);
- in a ``copy`` action's ``match``: ``URL#REF:SUB/PATH`` (both parts optional:
  ``URL#REF``, ``URL#:SUB/PATH``); ``SUB/PATH`` is a file, folder or glob inside the
  repository (``:`` cannot occur in a git ref, so the split is unambiguous).

Caches, under the config's ``.axis/``: remote scenarios in
``remotes/<reversed host>/<owner>/<repo>``, skills in ``skills-cache/<owner>/<repo>``,
copied repositories in ``repos/<host>/<owner>/<repo>/<ref>`` (``HEAD`` for the default
branch).
"""

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

__all__ = [
    "GITHUB_SHORTHAND",
    "GITHUB_SKILL_URL",
    "GitSource",
    "ResolvedRemote",
    "copy_cache_dir",
    "parse_copy_match",
    "parse_git_url",
    "remote_cache_dir",
    "skill_cache_dir",
]

_URL = re.compile(r"^(?P<scheme>https?|git|ssh)://(?P<host>[^/]+)/(?P<path>.+?)(?:\.git)?/?$")
GITHUB_SKILL_URL = re.compile(
    r"^https?://github\.com/(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+?)(?:\.git)?/?$"
)
GITHUB_SHORTHAND = re.compile(r"^(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)$")
_HOST = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\])$")
"""A host name, IPv4 or bracketed IPv6 address: never ``..``, never an option (``-o…``)."""


@dataclass(frozen=True)
class GitSource:
    """A repository (and where in it) that a config names."""

    url: str
    """What git clones: the URL without ``#…``."""
    host: str
    """The host without user or port (``github.com``)."""
    port: str | None
    owner: str
    """Everything between host and repository (``group/subgroup`` for nested groups)."""
    repo: str
    ref: str | None = None
    sub: str = ""
    """A path or glob inside the repository (``copy`` only)."""

    @property
    def key(self) -> str:
        """The repository's identity, the same however its URL was spelled."""
        return f"{self.host.lower()}:{self.port or ''}/{self.owner.lower()}/{self.repo.lower()}"


def _bad(why: str) -> ValueError:
    """What a config field expected (``problems_from`` words it as ``expected …``, and
    shows the value as what was found)."""
    return ValueError(f"a git URL {why}")


def parse_git_url(text: str) -> GitSource | None:
    """``text`` as a git source (``URL`` or ``URL#REF``); None when it is no such URL.

    Raises:
        ValueError: a git URL that cannot be used (one path segment, an empty ref, ``..``).
    """
    base, hashed, fragment = text.strip().partition("#")
    match = _URL.match(base)
    if match is None:
        return None
    netloc = match["host"].rpartition("@")[2]
    host, _, port = netloc.partition(":")
    if netloc.startswith("["):  # an IPv6 literal
        host, _, port = netloc.partition("]")
        host, port = host + "]", port.removeprefix(":")
    segments = match["path"].split("/")
    if len(segments) < 2:
        raise _bad("of <scheme>://<host>/<owner>/<repo>")
    if any(s in ("", ".", "..") for s in segments) or not host:
        raise _bad("without empty, '.' or '..' path segments")
    user = match["host"].rpartition("@")[0]
    if not _HOST.match(host) or ".." in host or (port and not port.isdigit()) or user[:1] == "-":
        raise _bad("whose host is a host name or address (letters, digits, '.', '-')")
    ref = fragment.strip() if hashed else None
    if hashed and not ref:
        raise _bad("with a branch, tag or commit after '#'")
    return GitSource(
        url=base,
        host=host,
        port=port or None,
        owner="/".join(segments[:-1]),
        repo=segments[-1],
        ref=ref,
    )


def parse_copy_match(text: str) -> GitSource | None:
    """A ``copy`` action's ``match`` as a repository and a path in it (``URL#REF:SUB``);
    None when ``match`` is a local path or glob.

    Raises:
        ValueError: a git URL that cannot be used, or a sub-path leaving the repository.
    """
    base, hashed, fragment = text.strip().partition("#")
    ref_text, _, sub = fragment.partition(":")
    source = parse_git_url(base)
    if source is None:
        return None
    ref = ref_text.strip() or None
    if hashed and ":" not in fragment and ref is None:
        raise _bad("with REF, REF:PATH or :PATH after '#'")
    sub = sub.strip().strip("/")
    if any(part == ".." for part in sub.split("/")) or sub.startswith("/"):
        raise _bad("whose path after ':' stays inside the repository")
    return GitSource(
        url=source.url,
        host=source.host,
        port=source.port,
        owner=source.owner,
        repo=source.repo,
        ref=ref,
        sub=sub,
    )


def _safe(name: str) -> str:
    """A path segment for a cache folder: ``/``, ``:`` and ``%`` escaped, and ``.`` or
    ``..`` (never a folder above)."""
    safe = name.replace("%", "%25").replace("/", "%2F").replace(":", "%3A") or "_"
    return safe.replace(".", "%2E") if safe in (".", "..") else safe


def _host_part(source: GitSource, *, reverse: bool) -> str:
    host = source.host.lower()
    if reverse and not host.startswith("["):
        host = ".".join(reversed(host.split(".")))
    return _safe(host + (f"_{source.port}" if source.port else ""))


def remote_cache_dir(root: Path, source: GitSource) -> Path:
    """``root/<reversed host>/<owner>/<repo>`` (``root``: ``.axis/remotes``)."""
    return root / _host_part(source, reverse=True) / source.owner / source.repo


def copy_cache_dir(config_dir: Path, source: GitSource) -> Path:
    """``.axis/repos/<host>/<owner>/<repo>/<ref>`` (``HEAD``: the default branch)."""
    base = config_dir / ".axis" / "repos" / _host_part(source, reverse=False)
    return base / source.owner / source.repo / _safe(source.ref or "HEAD")


def skill_cache_dir(config_dir: Path, owner: str, repo: str) -> Path:
    """``.axis/skills-cache/<owner>/<repo>``."""
    return config_dir / ".axis" / "skills-cache" / owner / repo


class ResolvedRemote(BaseModel):
    """A remote scenario source as this run used it."""

    model_config = ConfigDict(frozen=True)

    url: str
    ref: str | None = None
    """The pinned ref (None: the default branch)."""
    commit: str
    """The commit the checkout was at."""
    path: str
    """The checkout."""
    listed_by: str | None = None
    """The remote whose config listed this one (None: the config itself)."""
