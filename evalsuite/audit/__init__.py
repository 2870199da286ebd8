"""The index audit: what an ingest job wrote into a vector index, checked against the reference model.

``source.py`` is the one protocol every store implements (:class:`~evalsuite.audit.source.IndexSource`);
``stores/`` holds one declaration file per store; the checks are one family of the check engine
(``evalsuite/checks/``), listed in ``checks.py``.
"""
