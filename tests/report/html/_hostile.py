"""A report whose every text field carries hostile markup, made from a real one.

:func:`hostile_report` copies a report folder written by a real ``axis run`` (and its
baseline comparison, from the real ``axis baseline compare``) and rewrites ``report.json``,
each ``transcript.json`` and ``baseline-comparison.json``: every string that the formats
accept any text in gets :data:`HOSTILE` and a numbered marker ``⟦n⟧`` appended, every
free-form object (configs, tool inputs) gets a hostile key, and the run folders are renamed
to hostile names. Which fields take text is found by trying: a field is made hostile, the
file is validated with its real model, and the change is undone where the model refuses it
(statuses, kinds, timestamps), so a field added to a format later is covered without
touching this file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axis_eval.report.models import ReportManifest
from axis_eval.runs.baseline_models import BaselineComparison
from axis_eval.transcript.models import Transcript

HOSTILE = (
    "<script>alert('script')</script>\"><img src=x onerror=alert('img')>"
    "'><svg onload=alert('svg')></svg></script><script>alert('close')</script>"
    "</style></textarea></title><!-- {{ 7*7 }} {% if 1 %}jinja{% endif %} ${7*7} --> "
    "<a href=\"javascript:alert('href')\">link</a> javascript:alert('url') "
    "\u2028\u2029]]><![CDATA[ &amp; &lt;b&gt;"
)
"""Closers for every raw-text element, a comment opener, attribute breakers, event
handlers, ``javascript:`` URLs, template syntax of several engines, JS line separators."""

HOSTILE_DIR = "-\"><img src=x onerror=alert('dir')>javascript:alert('dir')"
"""Appended to each run folder's name (a path segment: no slash)."""

JAVASCRIPT_URL = "javascript:alert('artifact')"
"""An artifact's file: it must not become a live link."""

Json = Any


@dataclass
class Hostile:
    """The hostile texts handed out: original → hostile, and the marker of each."""

    texts: dict[str, str] = field(default_factory=dict)
    fields: dict[str, int] = field(default_factory=dict)
    """The path of each field made hostile (it validated) → its marker."""

    def unshown(self, shown: set[int]) -> set[str]:
        """The fields whose marker is not among ``shown``."""
        return {path for path, marker in self.fields.items() if marker not in shown}

    def text(self, original: str) -> tuple[str, int]:
        if original not in self.texts:
            self.texts[original] = f"{original}{HOSTILE}⟦{len(self.texts) + 1}⟧"
        value = self.texts[original]
        return value, int(value.rsplit("⟦", 1)[1].rstrip("⟧"))


def _leaves(node: Json, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))
    else:
        yield path


def _objects(node: Json, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        yield path
        for key, value in list(node.items()):
            yield from _objects(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _objects(value, (*path, index))


def _at(node: Json, path: tuple[Any, ...]) -> Json:
    for part in path:
        node = node[part]
    return node


def hostilize(
    doc: Json,
    validate: Callable[[Json], object],
    hostile: Hostile,
    *,
    keep: frozenset[str] = frozenset({"dir"}),
    add_keys: bool = True,
) -> None:
    """Make every string of ``doc`` that ``validate`` accepts hostile, in place."""
    validate(doc)  # valid to begin with, or every trial below would be undone
    for path in list(_leaves(doc)):
        parent, key = _at(doc, path[:-1]), path[-1] if path else None
        original = parent[key] if path else None
        if not isinstance(original, str) or key in keep:
            continue
        parent[key], marker = hostile.text(original)
        try:
            validate(doc)
        except ValidationError:
            parent[key] = original
        else:
            hostile.fields[".".join(map(str, path))] = marker
    if not add_keys:
        return
    for path in list(_objects(doc)):
        target = _at(doc, path)
        name, marker = hostile.text("key@" + ".".join(map(str, path)))
        target[name] = name
        try:
            validate(doc)
        except ValidationError:
            del target[name]
        else:
            hostile.fields[".".join(map(str, path)) + ".<key>"] = marker


def _fill_the_empty_fields(manifest: Json) -> None:
    """Give the fields this report left empty some text, so they are rendered too."""
    manifest["warnings"] = ["a report warning"]
    manifest["skipped"] = ["skipped-scenario"]
    manifest["loadFailures"] = [{"path": "broken.json", "error": "does not parse"}]
    manifest["beforeAllOutput"] = "before all"
    manifest["afterAllOutput"] = "after all"
    for pair in manifest["results"]:
        pair["model"] = pair.get("model") or "a-model"
        for run in pair["runs"]:
            run["warnings"] = ["a run warning"]
            run["teardownOutput"] = "teardown notes"
            run["agentVersion"] = "1.0"
            run["error"] = run.get("error") or "a run error"
            run["result"] = run.get("result") or "an answer"
            for artifact in run["artifacts"][:1]:
                artifact["file"] = JAVASCRIPT_URL
    scored = next(p for p in manifest["results"] if p.get("score"))
    scored["score"].update(
        {name: None for name in ("axisScore", "goalAchievement", "environment", "service")}
    )
    scored["score"].update(agent=None, withheld=True, withheldReason="withheld on purpose")


def _rename_run_folders(folder: Path, manifest: Json) -> None:
    for pair in manifest["results"]:
        for run in pair["runs"]:
            old = run["dir"]
            new = old + HOSTILE_DIR
            (folder / old).rename(folder / new)
            run["dir"] = new
            for artifact in run["artifacts"]:
                if artifact["file"].startswith(old + "/"):
                    artifact["file"] = new + artifact["file"][len(old) :]
            if pair.get("file", "").startswith(old + "/"):
                pair["file"] = new + pair["file"][len(old) :]


def hostile_report(source: Path, comparison: Json, target: Path) -> tuple[Path, Hostile]:
    """``source`` copied to ``target`` and made hostile throughout (see the module doc)."""
    shutil.copytree(source, target)
    (target / "report.html").unlink(missing_ok=True)
    manifest = json.loads((target / "report.json").read_text())
    _fill_the_empty_fields(manifest)
    _rename_run_folders(target, manifest)
    hostile = Hostile()
    hostilize(manifest, ReportManifest.model_validate, hostile)
    for pair in manifest["results"]:
        for run in pair["runs"]:
            path = target / run["dir"] / "transcript.json"
            if not path.is_file():
                continue
            transcript = json.loads(path.read_text())
            transcript["model"] = transcript.get("model") or "a-model"
            transcript["agentVersion"] = "1.0"
            hostilize(transcript, Transcript.model_validate, hostile)
            path.write_text(json.dumps(transcript))
    comparison["vanished"] = [{"scenarioKey": "gone", "agentName": "gone-agent"}]
    hostilize(comparison, BaselineComparison.model_validate, hostile, add_keys=False)
    ReportManifest.model_validate(manifest)  # still a valid report
    (target / "report.json").write_text(json.dumps(manifest))
    (target / "baseline-comparison.json").write_text(json.dumps(comparison))
    return target, hostile
