"""``python -m axis_eval`` runs the ``axis`` command."""

from axis_eval.cli.main import main

main()
