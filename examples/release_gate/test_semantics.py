"""A user's own checks next to the gates, using the plugin's session fixtures."""


def test_similarity_canary(evalsuite_encoder):
    sim = evalsuite_encoder.similarity
    assert sim("database transactions", "commit and rollback") > sim("database transactions", "basketball rules")


def test_every_query_is_judged(evalsuite_dataset, evalsuite_result):
    assert set(evalsuite_result.per_query["ndcg@10"]) == set(evalsuite_dataset.queries)
