"""Scoring a ranking: ranx metrics, and the uncertainty of every delta (bootstrap, sign-flip, MDE, corrections)."""
