"""``axis export --otel`` end to end: a real report exported through the CLI to an OTLP/JSON
file and to a local OTLP/HTTP receiver, secrets masked, and bad input exiting 2 with a
message (never a traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from export import (
    PLANTED,
    SECRET_VAR,
    Receiver,
    closed_port,
    make_report,
    parse_otlp,
    run_axis,
)

pytestmark = pytest.mark.slow  # runs `axis run` once per module


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("export-cli") / "project"
    return root, make_report(root)


def _spans(message: Any) -> list[Any]:
    return [s for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans]


def test_export_latest_to_a_file(made: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, report = made
    out = tmp_path / "deep" / "traces.json"
    done = run_axis("export", "--otel", str(out), cwd=root)
    assert done.exit_code == 0, done.stderr
    spans = _spans(parse_otlp(out.read_bytes()))
    runs = sum(len(p["runs"]) for p in report["results"])
    assert f"otel: {runs} run(s) as {runs} trace(s), {len(spans)} span(s)" in done.stdout
    assert str(out) in done.stdout


def test_export_an_id_to_an_endpoint_with_the_secret_masked(
    made: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, report = made
    monkeypatch.setenv(SECRET_VAR, PLANTED)
    with Receiver() as receiver:
        args = ("export", report["reportId"], "-c", str(root), "--otel", receiver.url)
        done = run_axis(*args, cwd=tmp_path)  # elsewhere: -c finds the project
    assert done.exit_code == 0, done.stderr
    assert "in 1 request(s)" in done.stdout and f"{receiver.url}/v1/traces" in done.stdout
    ((path, _, body),) = receiver.posts
    assert path == "/v1/traces" and PLANTED.encode() not in body
    spans = _spans(parse_otlp(body))
    names = {s.name for s in spans}
    assert names == {
        "invoke_agent tooler",
        "execute_tool Bash",
        "execute_tool Write",
        "execute_tool Read",
    }


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "nothing to export"),
        (("--otel", f"http://127.0.0.1:{closed_port()}"), "cannot reach the endpoint"),
        (("--otel", "ftp://127.0.0.1/x"), "not an http(s) URL or a file path"),
        (("--otel", "/proc/no/such/place.json"), "cannot write the file"),
    ],
)
def test_bad_input_exits_2_without_a_traceback(
    made: tuple[Path, dict[str, Any]], args: tuple[str, ...], needle: str
) -> None:
    root, _ = made
    done = run_axis("export", *args, cwd=root)
    assert done.exit_code == 2, (done.stdout, done.stderr)
    assert needle in done.stderr and "Traceback" not in done.stderr + done.stdout


def test_an_unknown_report_is_an_error(made: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, _ = made
    done = run_axis("export", "1999-01-01-000000", "--otel", str(tmp_path / "t.json"), cwd=root)
    assert done.exit_code != 0 and "not found" in done.stderr
    assert not (tmp_path / "t.json").exists()
