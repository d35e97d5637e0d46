"""``halbench trace``: one hallucination of one model, attributed and checked for reproducibility."""
