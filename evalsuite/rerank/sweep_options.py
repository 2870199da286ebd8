"""Placeholder removed below."""
