"""``axis view``: a local, read-only web app over many reports (list, history, compare,
side-by-side transcripts, search), served on 127.0.0.1 or exported as static pages."""
