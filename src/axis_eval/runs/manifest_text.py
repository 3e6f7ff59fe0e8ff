"""``report.json``'s bytes during a run, re-serializing only the pairs that changed.

A run rewrites its manifest every half second or so while jobs finish. Serializing,
redacting and encoding every pair each time made the writes grow with the report: a
300-pair manifest took ~2.5 ms to serialize alone, and a run of N jobs writes it ~N/25
times, so the cost per job grew with N (a quadratic run). Here each pair's part (its JSON
as the manifest nests it, redacted, encoded) is kept between writes, and only the pairs a
job touched since are done again; the header (summary, state, times) always is. The parts
are written one after the other, never joined into one string.

The bytes are exactly the whole manifest's ``model_dump_json(by_alias=True, indent=2)``,
redacted, plus a newline (tested): readers cannot tell the two apart. Redacting part by
part is the same as redacting the whole, since a secret lies inside one JSON string and
every part boundary is between values.
"""

from __future__ import annotations

from axis_eval.redact import Redactor
from axis_eval.report.models import PairEntry, ReportManifest

_RESULTS = '\n  "results": []'
"""How an empty ``results`` list reads in a manifest written with ``indent=2``."""


def _full(manifest: ReportManifest) -> str:
    return manifest.model_dump_json(by_alias=True, indent=2)


class ManifestText:
    """The manifest's bytes, with each pair's part kept until :meth:`changed` drops it."""

    def __init__(self) -> None:
        self._parts: dict[int, tuple[PairEntry, bytes]] = {}
        """id(pair) -> (the pair, kept alive so its id is not reused; its part)."""
        self._secrets: tuple[int, int] | None = None
        """The redactor the parts were redacted with: (its id, its version)."""

    def changed(self, pair: PairEntry) -> None:
        """``pair`` (or one of its runs) changed: serialize it again at the next write."""
        self._parts.pop(id(pair), None)

    def clear(self) -> None:
        """Forget every pair's part (anything may have changed)."""
        self._parts.clear()

    def chunks(self, manifest: ReportManifest, redactor: Redactor) -> list[bytes]:
        """``report.json``'s content, in parts; pairs not marked :meth:`changed` since the
        last call (with the same redactor, knowing the same secrets) reuse theirs."""
        secrets = (id(redactor), redactor.version)
        if secrets != self._secrets:
            self._parts.clear()
            self._secrets = secrets

        def encode(text: str) -> bytes:
            return redactor.json_text(text).encode("utf-8")

        head, found, tail = "", "", ""
        if manifest.results:
            shell = _full(manifest.model_copy(update={"results": []}))
            head, found, tail = shell.partition(_RESULTS)
        if not found:  # no pairs (or the format changed): the plain way, nothing kept
            self._parts.clear()
            return [encode(_full(manifest) + "\n")]
        kept: dict[int, tuple[PairEntry, bytes]] = {}
        out = [encode(head + '\n  "results": [\n    ')]
        for i, pair in enumerate(manifest.results):
            part = self._parts.get(id(pair))  # (the pair is kept: no other can have its id)
            if part is None:
                text = pair.model_dump_json(by_alias=True, indent=2).replace("\n", "\n    ")
                part = (pair, encode(text))
            kept[id(pair)] = part
            if i:
                out.append(b",\n    ")
            out.append(part[1])
        out.append(encode("\n  ]" + tail + "\n"))
        self._parts = kept
        return out
