"""``python -m axis_model_server --tape TAPE [--port N] [--log FILE]``."""

from axis_model_server.cli import main

raise SystemExit(main())
