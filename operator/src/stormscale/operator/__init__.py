"""Stormscale operator (Kopf). Filled in by the operator issue."""
