"""What tests and benchmarks build models with (a tiny random-weight BERT); no module of evalsuite imports it."""
