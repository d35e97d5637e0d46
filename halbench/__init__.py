"""halbench: a benchmark for hallucination-cause attribution with planted, verified causes."""

__version__ = "0.1.0"
