"""The tape format: loading, validation errors (file + field), schema, the shipped examples."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

from axis_model_server import Tape, TapeError, load_tape, parse_tape

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "tapes").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_tapes_load(path: Path) -> None:
    tape = load_tape(path)
    assert tape.version == 1 and tape.conversations


def test_the_docs_example_is_the_shipped_example() -> None:
    text = (ROOT / "docs" / "model-server.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    full = next(b for b in blocks if b.startswith("version: 1"))
    assert parse_tape(yaml.safe_load(full)) == load_tape(ROOT / "examples" / "tapes" / "hello.yaml")


def test_json_tapes(tmp_path: Path) -> None:
    data = {"version": 1, "conversations": [{"name": "a", "turns": [{"text": "hi"}]}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    tape = load_tape(path)
    assert tape.default is not None and tape.default.name == "a"


BAD = [
    ("conversations: []", "version: required field is missing"),
    ("version: 2\nconversations: [{name: a, turns: [{text: x}]}]", "version: Input should be 1"),
    ("version: 1\nconversations: []", "conversations: List should have at least 1 item"),
    (
        "version: 1\nconversations: [{name: a, turn: [{text: x}]}]",
        "conversations[0].turn: unknown field",
    ),
    (
        "version: 1\nconversations: [{name: a, turns: [{tool_calls: [{tool: shell}]}]}]",
        "conversations[0].turns[0].tool_calls[0]: the abstract tool `shell` needs `args.command`",
    ),
    (
        "version: 1\nconversations: [{name: a, turns: [{tool_calls: [{tool: write_file, "
        "args: {path: a}}]}]}]",
        "the abstract tool `write_file` needs `args.content`",
    ),
    (
        "version: 1\nconversations: [{name: a, turns: [{}]}]",
        "conversations[0].turns[0]: a turn needs",
    ),
    (
        "version: 1\nconversations: [{name: a, match: '/(unclosed/', turns: [{text: x}]}]",
        "conversations[0].match: `match` is not a valid regular expression",
    ),
    (
        "version: 1\nconversations: [{name: a, turns: [{text: x}]}, {name: b, turns: [{text: y}]}]",
        "only one conversation may omit `match` (the default): a, b",
    ),
    (
        "version: 1\nconversations: [{name: a, match: x, turns: [{text: x}]}, "
        "{name: a, match: y, turns: [{text: y}]}]",
        "conversation names must be unique: a",
    ),
    ("version: 1\nconversations: [{name: a, turns: [{text: x}]", "not valid YAML: line"),
    ("- just a list", "expected a mapping with `version` and `conversations`, found list"),
    ("", "found nothing"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_malformed_tapes_name_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TapeError) as caught:
        load_tape(path)
    rendered = caught.value.render()
    assert str(path) in rendered
    assert message in rendered
    assert caught.value.exit_code == 2


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TapeError, match="cannot read the file"):
        load_tape(tmp_path / "nope.yaml")


def test_bad_json_tape(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text("{")
    with pytest.raises(TapeError, match="not valid JSON: line 1"):
        load_tape(path)


def test_matching_rules() -> None:
    tape = parse_tape(
        {
            "version": 1,
            "conversations": [
                {"name": "sub", "match": "Hello", "turns": [{"text": "a"}]},
                {"name": "re", "match": "/(?i)^fix\\b/", "turns": [{"text": "b"}]},
            ],
        }
    )
    sub, regex = tape.conversations
    assert sub.matches("say Hello") and not sub.matches("say hello")
    assert regex.matches("FIX it") and not regex.matches("prefix it")
    assert tape.default is None


def test_tape_schema_documents_every_field() -> None:
    from axis_eval.schemas import schema_for

    schema = schema_for("tape")
    assert schema["title"] == "A tape for axis model-server"
    assert set(schema["properties"]) == {"version", "conversations"}
    for model in ("Conversation", "Turn", "ToolCall"):
        for name, prop in schema["$defs"][model]["properties"].items():
            assert prop.get("description"), f"{model}.{name} has no description"
    assert schema == Tape.model_json_schema() | {
        "$schema": schema["$schema"],
        "title": schema["title"],
    }


def test_the_package_does_not_import_axis_eval() -> None:
    package = ROOT / "src" / "axis_model_server"
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "axis_eval" for n in names), path
