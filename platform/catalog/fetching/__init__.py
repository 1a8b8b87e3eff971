"""Fetching the standard datasets: a catalogue of their official files (URL, size, sha256, licence),
downloads that resume and verify, safe archive extraction, then the ordinary import
(docs/datasets.md §7). `catalog.services.fetch` runs the whole of it for one catalogue entry."""
