"""A small command-line notebook."""
