"""A job's spec on a worker: the paths under ``axis run``'s config folder move to the
worker's copy of the bundle, and nothing else changes."""

from __future__ import annotations

from axis_eval.distributed.worker import reroot


def test_paths_under_the_config_folder_move_and_other_strings_stay() -> None:
    spec = {
        "config_dir": "/proj",
        "skills": ["/proj/skills/a", "/projects/other", "/proj"],
        "sandbox": {"readable": ["/proj/data", "/opt/tool"], "writable": []},
        "scenario": {"prompt": "look in /proj/x", "setup": [{"command": "cat /proj/f"}]},
        "n": 3,
        "flag": True,
        "none": None,
    }
    moved = reroot(spec, "/proj", "/w/axis-bundles/abc")
    assert moved["config_dir"] == "/w/axis-bundles/abc"
    assert moved["skills"] == [
        "/w/axis-bundles/abc/skills/a",
        "/projects/other",
        moved["config_dir"],
    ]
    assert moved["sandbox"]["readable"] == ["/w/axis-bundles/abc/data", "/opt/tool"]
    # Text that merely mentions a path is not a path (docs/distributed.md: use $AXIS_CONFIG_DIR).
    assert moved["scenario"] == spec["scenario"]
    assert (moved["n"], moved["flag"], moved["none"]) == (3, True, None)


def test_a_trailing_slash_on_the_folder_changes_nothing() -> None:
    assert reroot(["/proj/a", "/proj"], "/proj/", "/b") == ["/b/a", "/b"]
