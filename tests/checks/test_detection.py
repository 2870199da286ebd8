"""The detection statistics the families share (evalsuite/checks/detection.py): how many random draws catch a fault
that hits a share of them, with the stated confidence."""

from __future__ import annotations

from evalsuite.checks.detection import DETECT_CONFIDENCE, detectable_share, detection_probability, requests_needed


def test_requests_needed_reach_the_stated_confidence_and_no_fewer_do():
    for share in (0.5, 0.2, 0.1, 0.05, 0.01):
        n = requests_needed(share)
        assert detection_probability(share, n) >= DETECT_CONFIDENCE > detection_probability(share, n - 1)
        assert detectable_share(n) <= share < detectable_share(n - 1) if n > 1 else True
    assert requests_needed(0.1) == 44 and requests_needed(0.05) == 90 and requests_needed(1.0) == 1
