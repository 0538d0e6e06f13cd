"""legacy."""
