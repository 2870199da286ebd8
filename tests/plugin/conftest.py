import pytest


@pytest.fixture(scope="session", autouse=True)
def _model_stack(model_stack_loaded):
    """Every plugin test runs pytester in-process: load torch and ranx once, before the first run."""
