"""ReportStore: unique ids, atomic redacted writes, reading reports back."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from axis_eval import files as util_files
from axis_eval.errors import EXIT_FAILED, ReportNotFound, UsageError
from axis_eval.redact import MASK, Redactor
from axis_eval.report.models import ReportManifest
from axis_eval.runs import store as store_mod
from axis_eval.runs.store import (
    REPORTS_DIR,
    ReportStore,
    check_folders,
    list_reports,
    new_report_id,
    pair_dir,
    read_report,
    report_folder,
    reports_root,
    run_dir,
)
from helpers.factories import manifest

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def started(report_id: str, at: str) -> ReportManifest:
    return manifest(report_id=report_id, started_at=at, timestamp=at)


def test_report_ids_are_unique_within_a_second(tmp_path: Path) -> None:
    root = reports_root(tmp_path)
    ids = [new_report_id(root, NOW) for _ in range(3)]
    assert ids == ["2026-03-04-050607", "2026-03-04-050607-2", "2026-03-04-050607-3"]
    assert all((root / i).is_dir() for i in ids)


def test_report_id_uses_the_current_time(tmp_path: Path) -> None:
    rid = new_report_id(tmp_path)
    stamp = datetime.strptime(rid, "%Y-%m-%d-%H%M%S").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - stamp).total_seconds()) < 120


def test_layout_helpers(tmp_path: Path) -> None:
    assert reports_root(tmp_path) == tmp_path / ".axis" / "reports"
    assert report_folder(tmp_path, "x") == tmp_path / ".axis" / "reports" / "x"
    assert pair_dir("cms/post@v", "codex|gpt-5") == "scenarios/cms/post@v/codex--gpt-5"
    assert run_dir("a", "codex", 1, 1) == "scenarios/a/codex"
    assert run_dir("a", "codex", 2, 3) == "scenarios/a/codex/run-2"


def test_store_writes_inside_its_folder_only(tmp_path: Path) -> None:
    store = ReportStore(tmp_path / "r")
    assert store.report_id == "r"
    with pytest.raises(ValueError, match="escapes the report folder"):
        store.write_text("../outside.txt", "x")
    assert not (tmp_path / "outside.txt").exists()


def test_writes_are_atomic_renames(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ReportStore(tmp_path / "r")
    renames: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        assert not Path(dst).exists() or Path(dst).read_text() == "old\n"
        assert Path(src).read_text() == "new\n", "the temp file is complete before the rename"
        renames.append((src, str(dst)))
        real_replace(src, dst)

    store.write_text("a/file.txt", "old\n")
    monkeypatch.setattr(util_files.os, "replace", spy)
    store.write_text("a/file.txt", "new\n")
    target = store.path("a/file.txt")
    [(src, dst)] = renames
    assert Path(src).parent == target.parent and Path(src).name.endswith(".tmp")
    assert dst == str(target)
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]


def test_failed_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ReportStore(tmp_path / "r")
    store.write_json("report.json", {"v": 1})

    def broken(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(util_files.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        store.write_json("report.json", {"v": 2, "big": "x" * 100_000})
    assert json.loads((store.folder / "report.json").read_text()) == {"v": 1}
    assert [p.name for p in store.folder.iterdir()] == ["report.json"]


def test_failed_first_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ReportStore(tmp_path / "r")

    def broken(src: str, dst: str) -> None:
        raise OSError("nope")

    monkeypatch.setattr(util_files.os, "replace", broken)
    with pytest.raises(OSError):
        store.write_lines("x/raw.ndjson", ["{}"] * 100)
    assert list((store.folder / "x").iterdir()) == []


def test_redactor_applies_to_text_json_and_lines(tmp_path: Path) -> None:
    store = ReportStore(tmp_path / "r", Redactor(["hunter2-secret"]))
    store.write_text("t.txt", "pw=hunter2-secret")
    store.write_json("j.json", {"nested": ["hunter2-secret", {"k": "a hunter2-secret b"}]})
    store.write_lines("l.ndjson", ['{"x": "hunter2-secret"}'])
    for name in ("t.txt", "j.json", "l.ndjson"):
        text = (store.folder / name).read_text()
        assert "hunter2-secret" not in text and MASK in text
    store.write_bytes("artifact.bin", b"hunter2-secret")
    assert (store.folder / "artifact.bin").read_bytes() == b"hunter2-secret", "artifacts are raw"


def test_list_and_read_reports(tmp_path: Path) -> None:
    root = reports_root(tmp_path)
    older = ReportStore(root / new_report_id(root, NOW))
    newer = ReportStore(root / new_report_id(root, NOW))
    older.write_manifest(started(older.report_id, "2026-03-04T05:06:07.000Z"))
    newer.write_manifest(started(newer.report_id, "2026-03-04T05:06:07.500Z"))
    (root / "empty").mkdir()
    (root / "junk").mkdir()
    (root / "junk" / "report.json").write_text("{not json")
    listed = list_reports(tmp_path)
    assert [m.report_id for m in listed] == [newer.report_id, older.report_id]
    assert read_report(tmp_path, "latest").report_id == newer.report_id
    assert read_report(tmp_path, older.report_id).report_id == older.report_id


def test_no_reports(tmp_path: Path) -> None:
    assert list_reports(tmp_path) == []
    with pytest.raises(ReportNotFound) as info:
        read_report(tmp_path, "latest")
    assert info.value.exit_code == EXIT_FAILED


@pytest.mark.parametrize("report_id", ["nope", "../..", "../../etc"])
def test_unknown_report_id(tmp_path: Path, report_id: str) -> None:
    reports_root(tmp_path).mkdir(parents=True)
    with pytest.raises(ReportNotFound, match="not found"):
        read_report(tmp_path, report_id)


def test_unreadable_manifest_is_not_found(tmp_path: Path) -> None:
    folder = reports_root(tmp_path) / "bad"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text('{"reportId": "bad"}')
    with pytest.raises(ReportNotFound, match=r"unreadable report\.json"):
        read_report(tmp_path, "bad")


# -- where the reports go: checked before a run, nothing created --------------------------


@pytest.mark.parametrize(
    ("rel", "message"),
    [
        (".axis", "is a file: expected a folder (to hold {root}/.axis/reports)"),
        (".axis/reports", "is a file: expected a folder"),
    ],
)
def test_a_dot_axis_path_that_is_a_file_is_named(tmp_path: Path, rel: str, message: str) -> None:
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text("not a folder")
    with pytest.raises(UsageError) as raised:
        check_folders(tmp_path, REPORTS_DIR)
    assert raised.value.message == f"{tmp_path / rel} {message.format(root=tmp_path)}"
    assert raised.value.exit_code == 2


def test_a_broken_link_is_named(tmp_path: Path) -> None:
    (tmp_path / ".axis").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match=r"/\.axis is a broken symbolic link: expected a folder"):
        check_folders(tmp_path, REPORTS_DIR)


@pytest.mark.parametrize("existing", ["", ".axis", ".axis/reports"])
def test_a_folder_it_cannot_write_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: str
) -> None:
    (tmp_path / existing).mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # root may write anywhere
    deepest = tmp_path / existing if existing else tmp_path
    with pytest.raises(UsageError, match=f"^{deepest} is not writable: expected a folder"):
        check_folders(tmp_path, REPORTS_DIR)


def test_checking_the_folders_creates_nothing(tmp_path: Path) -> None:
    check_folders(tmp_path, REPORTS_DIR)
    assert not (tmp_path / ".axis").exists()
    (tmp_path / REPORTS_DIR).mkdir(parents=True)
    check_folders(tmp_path, REPORTS_DIR)  # folders that exist are fine


def test_patch_manifest_sets_fields_of_the_file_on_disk(tmp_path: Path) -> None:
    store = ReportStore(tmp_path / "r", Redactor(["hunter2-secret"]))
    store.write_manifest(manifest(report_id="r"))
    store.patch_manifest({"state": "crashed", "error": "boom hunter2-secret"})
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["state"] == "crashed"
    assert data["error"] == f"boom {MASK}"  # through the redactor, like every write
    assert data["reportId"] == "r"


def test_the_store_remembers_only_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the report page asks the store instead of the disk must be what is on the disk.
    store = ReportStore(tmp_path / "r")
    store.write_json("run/transcript.json", {"a": 1}, keep=True)
    store.write_text("run/raw.txt", "out")
    assert store.recall("run/transcript.json") == (tmp_path / "r/run/transcript.json").read_bytes()
    assert store.written_in("run") == {"transcript.json", "raw.txt"}
    # a write that fails is not listed; a later write without keep drops the kept bytes
    monkeypatch.setattr(store_mod, "atomic_write_text", _disk_full)
    with pytest.raises(OSError):
        store.write_text("run/stderr.log", "x")
    assert store.written_in("run") == {"transcript.json", "raw.txt"}
    monkeypatch.undo()
    store.write_json("run/transcript.json", {"a": 2})
    assert store.recall("run/transcript.json") is None
    # a folder it found is the disk's to list
    (tmp_path / "r/theirs").mkdir()
    store.write_text("theirs/raw.txt", "x")
    assert store.written_in("theirs") is None
    # past its bound of names, or once told to forget, it knows nothing
    monkeypatch.setattr(store_mod, "MAX_NAMES", 3)
    store.write_text("run2/a", "1")
    assert store.written_in("run2") == {"a"}
    store.write_text("run2/b", "2")
    assert store.written_in("run2") is None and store.written_in("run") is None
    store.write_json("run3/t.json", {}, keep=True)
    store.forget()
    assert store.recall("run3/t.json") is None and store.written_in("run3") is None


def _disk_full(*_: object, **__: object) -> None:
    raise OSError(28, "No space left on device")
