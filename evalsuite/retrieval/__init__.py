"""Ranking vectors: the vector checks and Matryoshka cut, FAISS exact search with one tie order, approximate index kinds."""
