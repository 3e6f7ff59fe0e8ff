"""Jobs on a Dask cluster: the ``dask`` executor (docs/distributed.md).

``axis run`` keeps the plan, the order, the limits, the scoring and the report; the
workers run jobs. :class:`DaskExecutor` is the executor (:mod:`.executor`); :mod:`.worker`
is what runs on the workers; :mod:`.bundle` carries the config folder to them once per run;
:mod:`.cluster` reaches (or starts) the cluster; :mod:`.names` names what both sides share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval.distributed.executor import DaskExecutor as DaskExecutor

__getattr__, __dir__, __all__ = lazy_exports(__name__, {"DaskExecutor": ".executor"})
