"""Strict, located loading of JSON, YAML and JSONL, and the schema registry."""

from cbaudit.io.loader import (
    DEFAULT_MAX_BYTES,
    Document,
    iter_jsonl,
    load_document,
    load_text,
)

__all__ = ["DEFAULT_MAX_BYTES", "Document", "iter_jsonl", "load_document", "load_text"]
