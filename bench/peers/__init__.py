"""Helpers of bench.peers_bench: the shared workload, the servers, the measuring client."""
