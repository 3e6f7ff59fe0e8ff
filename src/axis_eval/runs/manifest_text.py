"""``report.json``'s text during a run, re-serializing only the pairs that changed.

A run rewrites its manifest every half second or so while jobs finish. Serializing every
pair each time made the writes grow with the report: a 300-pair manifest took ~2.5 ms a
write, and a run of N jobs writes it ~N/25 times, so its cost per job grew with N (a
quadratic run). Here each pair's JSON is kept between writes and only the pairs a job
touched since are serialized again; the header (summary, state, times) always is.

The text is byte for byte what ``model_dump_json(by_alias=True, indent=2)`` of the whole
manifest gives (tested), so readers cannot tell the two apart.
"""

from __future__ import annotations

from axis_eval.report.models import PairEntry, ReportManifest

_RESULTS = '\n  "results": []'
"""How an empty ``results`` list reads in a manifest written with ``indent=2``."""


def _full(manifest: ReportManifest) -> str:
    return manifest.model_dump_json(by_alias=True, indent=2)


class ManifestText:
    """The manifest's text, with each pair's part kept until :meth:`changed` drops it."""

    def __init__(self) -> None:
        self._parts: dict[int, tuple[PairEntry, str]] = {}
        """id(pair) -> (the pair, kept alive so its id is not reused; its JSON, indented
        as the manifest nests it)."""

    def changed(self, pair: PairEntry) -> None:
        """``pair`` (or one of its runs) changed: serialize it again at the next write."""
        self._parts.pop(id(pair), None)

    def clear(self) -> None:
        """Forget every pair's text (anything may have changed)."""
        self._parts.clear()

    def render(self, manifest: ReportManifest) -> str:
        """The manifest as JSON; pairs not marked :meth:`changed` since the last render
        reuse their text."""
        if not manifest.results:
            self._parts.clear()
            return _full(manifest)
        shell = _full(manifest.model_copy(update={"results": []}))
        head, found, tail = shell.partition(_RESULTS)
        if not found:  # the format changed: the plain way, nothing kept
            self._parts.clear()
            return _full(manifest)
        kept: dict[int, tuple[PairEntry, str]] = {}
        texts: list[str] = []
        for pair in manifest.results:
            part = self._parts.get(id(pair))
            if part is None or part[0] is not pair:
                part = (pair, pair.model_dump_json(by_alias=True, indent=2).replace("\n", "\n    "))
            kept[id(pair)] = part
            texts.append(part[1])
        self._parts = kept
        return head + '\n  "results": [\n    ' + ",\n    ".join(texts) + "\n  ]" + tail
