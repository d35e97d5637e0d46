"""Task definitions, the task factory (corpus, training, mining, verification) and artifacts."""
