"""actgrad reports: plots, comparisons, history and dashboard for benchmark runs.

Run as ``./scripts/report <subcommand>`` (or ``python -m reports``); see
docs/reports.md.
"""

__version__ = "0.1.0"
