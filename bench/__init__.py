"""Benchmarks and the retrieval evaluation; results feed release-notes/."""
