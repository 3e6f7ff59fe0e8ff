"""A Python-file adapter for the fake ACP agent, as a user would write one."""

import sys
from pathlib import Path

from axis_eval.adapters.acp import create_acp_adapter

AGENT = Path(__file__).with_name("fake_acp_agent.py")

adapter = create_acp_adapter(
    name="fake-acp",
    command=[sys.executable, str(AGENT)],
    optional_env=["FAKE_ACP_DIR"],
    isolation_env=lambda workspace, home: {"FAKE_ACP_ISOLATED": home},
)
