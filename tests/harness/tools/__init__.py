"""Programs for people, run with ``python -m``: the demo (``make demo``) and the model accuracy report."""
