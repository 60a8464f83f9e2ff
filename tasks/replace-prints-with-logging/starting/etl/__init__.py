"""A tiny CSV extract/transform/load pipeline."""
