"""Wire formats, one module per protocol: each reads its requests into a
:class:`~axis_model_server.normalize.ModelRequest` (``parse``) and writes a
:class:`~axis_model_server.script.Reply` back, as one JSON body or as streamed frames."""
