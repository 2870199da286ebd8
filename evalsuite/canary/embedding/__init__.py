"""The embedding family of the canary: its settings, options, per-session context and checks."""
