"""Release gates: gate kinds (one declaration each), baselines, the session plan and policy, the
session state and ledger, the pytest items and the session report.

Importing this package loads nothing heavy; the pytest plugin (`evalsuite.pytest_plugin`) is a
thin shell over :class:`evalsuite.gating.session.GateSession`.
"""
