"""The loss budget: where the quality goes from the reference (float32, full dimension, exact search) to
production, stage by stage (:mod:`.stages`), each charged its paired difference with a 95% CI (:mod:`.attribution`),
in pipeline order or averaged over every order (Shapley); ``evalsuite budget`` and ``pytest --budget``."""
