"""Wire formats: how each protocol carries a :class:`~axis_model_server.script.Reply`."""
