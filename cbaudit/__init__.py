"""cbaudit: evidence and audit toolkit for LLM-serving scheduler claims."""

__version__ = "0.1.0"
