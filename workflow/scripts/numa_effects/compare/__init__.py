"""Comparing result folders (config key ``compare``, docs/comparing.md): one module per layer."""
