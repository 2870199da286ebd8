"""The release history: one record per dataset per gated release (`record.py`), kept in a directory with locked,
atomic writes (`store.py`); which earlier releases a new one is compared with (`anchors.py`) and the trend over
the last ones (`trend.py`); the Markdown verdict summary (`summary.py`); the table and plots of
`evalsuite history` (`table.py`, `plot.py`, `cli.py`). The history gates themselves are kinds in
`gating/kinds.py`, judged by `gating/releases.py`."""
