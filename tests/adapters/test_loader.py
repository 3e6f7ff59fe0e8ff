"""Loading custom adapters: Python files, module:attribute, declarative entries, errors."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from axis_eval.adapters.base import AgentAdapter
from axis_eval.adapters.builtins import BUILTINS
from axis_eval.adapters.loader import AdapterLoadError, load_adapter
from axis_eval.adapters.registry import CustomAdapterRef
from axis_eval.config.models import DeclarativeAdapter
from axis_eval.errors import EXIT_USAGE
from axis_eval.execute.supervise import RunControl, run_agent
from helpers.agent_runs import MakeInput

FIXTURES = Path(__file__).resolve().parent / "fixtures"

HEADER = """\
from axis_eval.adapters import AdapterResult, AggregateMode, create_agent_adapter

def make(name, word):
    return create_agent_adapter(
        name=name,
        resolve_command=lambda inp: ["echo", word],
        build_args=lambda inp: [inp.prompt],
        initial_state=list,
        stream=AggregateMode(on_chunk=lambda chunk, ctx: ctx.state.append(chunk)),
        get_result=lambda ctx: AdapterResult("".join(ctx.state).strip() or None),
    )
"""


def write(tmp_path: Path, body: str, name: str = "my_agent.py") -> str:
    path = tmp_path / "adapters" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(HEADER + textwrap.dedent(body))
    return str(path)


def file_ref(path: str, attribute: str | None = None) -> CustomAdapterRef:
    return CustomAdapterRef(name="my-agent", python_file=path, attribute=attribute)


async def test_default_attribute_adapter_runs(
    tmp_path: Path, make_input: MakeInput, control: RunControl
) -> None:
    path = write(tmp_path, "adapter = make('file-agent', 'from-file')\nother = make('x', 'y')\n")
    adapter = load_adapter(file_ref(path))
    assert isinstance(adapter, AgentAdapter) and adapter.name == "my-agent"
    out = await run_agent(adapter, make_input("hi"), control)
    assert out.result == "from-file hi" and out.transcript.agent == "my-agent"


def test_explicit_attribute(tmp_path: Path) -> None:
    path = write(tmp_path, "adapter = make('a', 'a')\nsecond = make('b', 'b')\n")
    picked = load_adapter(file_ref(path, "second"))
    assert picked.resolve_command is not None
    assert picked.resolve_command.__closure__ is not None
    assert "b" in [c.cell_contents for c in picked.resolve_command.__closure__]


def test_the_single_adapter_is_found(tmp_path: Path) -> None:
    path = write(tmp_path, "only_one = make('solo', 'solo')\nalias = only_one\n")
    assert load_adapter(file_ref(path)).name == "my-agent"


def test_several_adapters_need_a_choice(tmp_path: Path) -> None:
    path = write(tmp_path, "first = make('a', 'a')\nsecond = make('b', 'b')\n")
    with pytest.raises(AdapterLoadError, match=r"several AgentAdapters \(first, second\)") as info:
        load_adapter(file_ref(path))
    assert path in info.value.message and info.value.exit_code == EXIT_USAGE
    assert info.value.hint is not None and ":<name>" in info.value.hint


def test_no_adapter_at_all(tmp_path: Path) -> None:
    path = write(tmp_path, "value = 1\n")
    with pytest.raises(AdapterLoadError, match="defines no AgentAdapter"):
        load_adapter(file_ref(path))


def test_missing_attribute_lists_what_exists(tmp_path: Path) -> None:
    path = write(tmp_path, "mine = make('a', 'a')\n")
    with pytest.raises(AdapterLoadError, match="has no attribute 'nope'; it defines mine"):
        load_adapter(file_ref(path, "nope"))


def test_adapter_attribute_of_the_wrong_type(tmp_path: Path) -> None:
    path = write(tmp_path, "def adapter():\n    return None\n")
    with pytest.raises(AdapterLoadError, match="is a function, not an AgentAdapter"):
        load_adapter(file_ref(path))


def test_import_error_shows_its_first_line(tmp_path: Path) -> None:
    path = write(tmp_path, "raise RuntimeError('boom\\nsecond line')\n")
    before = set(sys.modules)
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(file_ref(path))
    assert info.value.message.endswith("failed: RuntimeError: boom")
    assert set(sys.modules) == before


def test_syntax_error(tmp_path: Path) -> None:
    path = write(tmp_path, "def broken(:\n")
    with pytest.raises(AdapterLoadError, match="SyntaxError"):
        load_adapter(file_ref(path))


def test_invalid_factory_arguments_are_load_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "adapter = make('', 'x')\n")
    with pytest.raises(AdapterLoadError, match="name must be a non-empty string"):
        load_adapter(file_ref(path))


def test_sibling_modules_are_importable(tmp_path: Path) -> None:
    write(tmp_path, "WORD = 'helper-word'\n", name="agent_helpers.py")
    path = write(tmp_path, "from agent_helpers import WORD\nadapter = make('x', WORD)\n")
    assert load_adapter(file_ref(path)).name == "my-agent"
    assert str(tmp_path / "adapters") not in sys.path
    sys.modules.pop("agent_helpers", None)


def test_module_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    ref = CustomAdapterRef(name="sample", module="axis_sample_adapters", attribute="echo")
    assert load_adapter(ref).name == "sample"
    bad = CustomAdapterRef(name="sample", module="axis_sample_adapters", attribute="not_an_adapter")
    with pytest.raises(AdapterLoadError, match="is a int, not an AgentAdapter"):
        load_adapter(bad)


def test_missing_module() -> None:
    ref = CustomAdapterRef(name="ghost", module="no_such_module_axis", attribute="adapter")
    with pytest.raises(AdapterLoadError, match="No module named 'no_such_module_axis'") as info:
        load_adapter(ref)
    assert info.value.hint is not None and "PYTHONPATH" in info.value.hint


def test_declarative_reference() -> None:
    spec = DeclarativeAdapter.model_validate({"command": "cli", "output": "ndjson"})
    assert load_adapter(CustomAdapterRef(name="decl", declarative=spec)).name == "decl"


def test_builtin_without_its_cli_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no `codex` on PATH either
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(BUILTINS["codex"])
    assert "'codex' agent's CLI" in info.value.message
    assert "axis agents install codex" in info.value.render()


def test_builtin_with_a_command_override_needs_no_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    adapter = load_adapter(BUILTINS["codex"], require_binary=False)
    assert adapter.name == "codex"


def test_one_rule_reads_python_adapter_names(tmp_path: Path) -> None:
    # The config's `adapters` and the task runner's goal agent both read names here.
    from axis_eval.adapters.registry import python_ref

    found = python_ref("a", "sub/my.py:make", str(tmp_path))
    assert found == CustomAdapterRef("a", python_file=str(tmp_path / "sub/my.py"), attribute="make")
    assert python_ref("b", "my.py", str(tmp_path)) == CustomAdapterRef(
        "b", python_file=str(tmp_path / "my.py")
    )
    assert python_ref("c", "pkg.mod:adapter", ".") == CustomAdapterRef(
        "c", module="pkg.mod", attribute="adapter"
    )
    for text in ("claude-code", "pkg.mod", "pkg:1bad", ":x", "my.ts"):
        assert python_ref("d", text, ".") is None, text
