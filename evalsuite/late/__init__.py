"""Late interaction (ColBERT-style): per-token vectors from the model's hidden states, MaxSim re-ranking of the first
stage's top N, and the memory per document that the quality costs. Heavy libraries are imported inside functions."""
