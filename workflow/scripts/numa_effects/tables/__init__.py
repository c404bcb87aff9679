"""tables layer."""
