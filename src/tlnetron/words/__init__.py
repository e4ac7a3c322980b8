"""Stage 2, words: every sentence, row name and formatted value a person reads (node
descriptions, sidebar rows, the model description, diff rows), from the generated tables."""
