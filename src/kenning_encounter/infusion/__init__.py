"""Governed infusion: select → expand → rank → format, with a per-session ledger."""
