"""The Python adapter example in docs/adapters.md loads and runs as documented."""

from __future__ import annotations

import re
from pathlib import Path

from axis_eval.adapters.loader import load_adapter
from axis_eval.adapters.registry import CustomAdapterRef
from axis_eval.execute.supervise import RunControl, run_agent
from helpers.agent_runs import MakeInput, agent_argv

DOCS = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"


async def test_the_documented_adapter_works(
    tmp_path: Path, make_input: MakeInput, control: RunControl
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.DOTALL)
    path = tmp_path / "my_agent.py"
    path.write_text(blocks[0])
    adapter = load_adapter(CustomAdapterRef(name="my-agent", python_file=str(path)))
    assert adapter.prompt_via == "stdin" and adapter.required_env == ("MY_CLI_API_KEY",)
    assert adapter.isolation_env is not None
    assert adapter.isolation_env("/w", "/h") == {"MY_CLI_CONFIG_DIR": "/h/.my-cli"}

    inp = make_input("list files", command=agent_argv("adapter_mycli.py"), model="m-1")
    out = await run_agent(adapter, inp, control)
    assert not out.failed, out.error
    assert out.result == "a.txt"
    assert (
        out.transcript.entries[1].text
        == "Reading 'list files' with ['--json', '--yes', '--model', 'm-1']"
    )
    (call,) = out.transcript.tool_calls
    assert (call.name, call.input, call.output) == ("shell", {"cmd": "ls"}, "a.txt")
    assert (out.transcript.usage.input, out.transcript.usage.output) == (40, 7)
