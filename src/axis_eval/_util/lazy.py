"""Public names that load on first use (PEP 562), for package roots that must stay cheap.

A package root that imported its modules up front would make ``import axis_eval`` (and
``axis --version``) pay for the whole engine, and would turn every sibling import inside the
package into an import cycle through its ``__init__``. Each such root lists where its names
live and takes its ``__getattr__``/``__dir__`` from :func:`lazy_exports`. The task runner's
root keeps its own copy of these few lines: it must start without importing axis_eval.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str], *, also: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``.

    Args:
        package: the package's ``__name__``.
        homes: public name → the module that defines it (absolute, or ``.name`` relative to
            ``package``).
        also: names the package defines itself (listed in ``__all__`` and ``dir()``).
    """
    public = sorted({*homes, *also})

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(f"{package}{home}" if home.startswith(".") else home)
        value = getattr(module, name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return list(public)

    return __getattr__, __dir__, public
