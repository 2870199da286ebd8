import pytest


@pytest.fixture(scope="session", autouse=True)
def _heavy_modules_loaded_once():
    """Import the model stack and compile ranx's kernels in this process before pytester runs.

    In-process pytester runs restore ``sys.modules`` afterwards; modules first imported inside a run
    would be imported (and numba kernels loaded) again for every run.
    """
    import faiss  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401

    from evalsuite.metrics import evaluate

    evaluate({"q": {"d": 1}}, {"q": {"d": 1.0, "e": 0.5}}, ["ndcg@10", "recall@10", "recall@100", "mrr@10"])
