"""contextd: the context daemon for LLM coding sessions."""

__version__ = "0.1.0"
