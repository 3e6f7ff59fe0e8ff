"""The tape: scripted conversations the model server plays back, and its loader."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = [
    "ABSTRACT_TOOLS",
    "Conversation",
    "Tape",
    "TapeError",
    "ToolCall",
    "Turn",
    "load_tape",
    "parse_tape",
]

ABSTRACT_TOOLS = ("shell", "read_file", "write_file")
"""Tool names the server maps to the tool the requesting agent offers."""

_ABSTRACT_ARGS: dict[str, tuple[str, ...]] = {
    "shell": ("command",),
    "read_file": ("path",),
    "write_file": ("path", "content"),
}


class _TapeModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCall(_TapeModel):
    """One tool call the scripted model makes."""

    tool: str = Field(min_length=1)
    """The tool to call. An abstract tool (`shell`, `read_file`, `write_file`) is mapped to
    the tool the requesting agent offers (`Bash`, `exec_command`, `run_shell_command`,
    `Read`, `Write` ...). Any other name is an exact tool name (`Bash`,
    `mcp__fake__echo`); a suffix such as `echo` also matches `mcp__fake__echo`."""

    args: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments. Abstract tools take `command` (shell), `path` (read_file,
    write_file) and `content` (write_file); these are renamed to the offered tool's own
    properties (`cmd`, `file_path`, `filePath` ...) and other keys are kept verbatim.
    Arguments of exact tool names are sent verbatim; a freeform tool such as Codex's
    `apply_patch` takes its text as `input`."""

    @model_validator(mode="after")
    def _check_abstract_args(self) -> ToolCall:
        for key in _ABSTRACT_ARGS.get(self.tool, ()):
            value = self.args.get(key)
            if not isinstance(value, str) or (key != "content" and not value):
                kind = "a string" if key == "content" else "a non-empty string"
                raise ValueError(f"the abstract tool `{self.tool}` needs `args.{key}`: {kind}")
        return self


class Turn(_TapeModel):
    """One answer of the model: optional text, then optional tool calls."""

    text: str | None = None
    """Assistant text sent before the tool calls (or as the final answer)."""

    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls to make in this turn. A turn without tool calls is a final answer."""

    @model_validator(mode="after")
    def _not_empty(self) -> Turn:
        if not self.text and not self.tool_calls:
            raise ValueError("a turn needs `text`, `tool_calls` or both")
        return self


class Conversation(_TapeModel):
    """A scripted conversation: the turns the model plays, one per request."""

    name: str = Field(min_length=1)
    """A name for logs and assertions."""

    match: str | None = None
    """Which prompts this conversation answers: a substring of the prompt (the user
    messages before the model's first tool call), or a regular expression written
    `/like this/`. Omitted: the default conversation, used when no other matches."""

    turns: list[Turn] = Field(min_length=1)
    """The model's answers in order. The answer to a request is the turn whose index is
    the number of tool-calling assistant turns already in the request's history; past the
    last turn the model repeats the last turn's text."""

    @field_validator("match")
    @classmethod
    def _check_match(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value:
            raise ValueError("`match` must not be empty (omit it for the default conversation)")
        if _is_regex(value):
            try:
                re.compile(value[1:-1])
            except re.error as error:
                raise ValueError(f"`match` is not a valid regular expression: {error}") from None
        return value

    @property
    def is_default(self) -> bool:
        """True for the conversation without `match`."""
        return self.match is None

    def matches(self, text: str) -> bool:
        """Whether ``text`` (one user message) selects this conversation."""
        if self.match is None:
            return False
        if _is_regex(self.match):
            return re.search(self.match[1:-1], text) is not None
        return self.match in text


class Tape(_TapeModel):
    """A tape for `axis model-server`: scripted model answers, chosen per conversation."""

    version: Literal[1]
    """The tape format version: 1."""

    conversations: list[Conversation] = Field(min_length=1)
    """The scripted conversations. The first whose `match` fits the prompt answers; the
    one without `match` (at most one) answers every other prompt."""

    @model_validator(mode="after")
    def _check_conversations(self) -> Tape:
        names = [c.name for c in self.conversations]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"conversation names must be unique: {', '.join(dupes)}")
        defaults = [c.name for c in self.conversations if c.is_default]
        if len(defaults) > 1:
            raise ValueError(
                f"only one conversation may omit `match` (the default): {', '.join(defaults)}"
            )
        return self

    @property
    def default(self) -> Conversation | None:
        """The conversation without `match`, if any."""
        return next((c for c in self.conversations if c.is_default), None)


def _is_regex(match: str) -> bool:
    return len(match) >= 2 and match.startswith("/") and match.endswith("/")


class TapeError(Exception):
    """A tape that cannot be read or is invalid; says which file and which field.

    Attributes:
        source: the file (or ``<tape>`` for data given directly).
        problems: one line per problem, each starting with the field path when known.
        exit_code: 2, the exit code of a command that stops on this error.
    """

    exit_code = 2

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        """The text shown to a user."""
        if len(self.problems) == 1:
            return f"invalid tape {self.source}: {self.problems[0]}"
        lines = "\n".join(f"  - {p}" for p in self.problems)
        return f"invalid tape {self.source}:\n{lines}"


def _field_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _problems(error: ValidationError) -> list[str]:
    problems = []
    for err in error.errors():
        path = _field_path(tuple(err["loc"]))
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        elif err["type"] == "missing":
            message = "required field is missing"
        problems.append(f"{path}: {message}" if path else message)
    return problems


def parse_tape(data: Any, source: str = "<tape>") -> Tape:
    """Validate already-parsed tape data (a mapping); raise :class:`TapeError`."""
    if isinstance(data, Tape):
        return data
    if not isinstance(data, Mapping):
        found = "nothing" if data is None else type(data).__name__
        raise TapeError(
            source, [f"expected a mapping with `version` and `conversations`, found {found}"]
        )
    try:
        return Tape.model_validate(dict(data))
    except ValidationError as error:
        raise TapeError(source, _problems(error)) from None


def load_tape(path: str | Path) -> Tape:
    """Read a tape from a YAML or JSON file; raise :class:`TapeError` naming file and field."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise TapeError(str(file), [f"cannot read the file: {error.strerror or error}"]) from None
    except UnicodeDecodeError:
        raise TapeError(str(file), ["the file is not UTF-8 text"]) from None
    try:
        data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as error:
        raise TapeError(str(file), [f"not valid JSON: line {error.lineno}: {error.msg}"]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise TapeError(str(file), [f"not valid YAML: {where}{problem}"]) from None
    return parse_tape(data, str(file))
