"""Serving capacity beside quality: load profiles of an endpoint (or the local reference) and the
old-vs-new cutover comparison with capacity gates.

Modules, in the order data flows: ``workload`` (texts, token lengths, buckets, request draws) ->
``targets`` (what a request is sent to) -> ``runner`` (concurrency levels, interleaving, samples) ->
``summary`` (percentiles and per-level / per-bucket figures) -> ``gates`` (capacity gates) ->
``cutover`` (quality and capacity of two deployments, the verdict) -> ``report`` -> ``cli``.
"""
