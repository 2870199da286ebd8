"""One evaluation run: the spec and its options, checked inputs, prepare -> encode -> search -> score, its record and result."""
