"""Report writers. Every file is written atomically."""

from .run_reports import write_run_reports

__all__ = ["write_run_reports"]
