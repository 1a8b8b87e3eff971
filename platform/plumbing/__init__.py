"""The platform's plumbing, under every app: rate limits, the file store, worker heartbeats, Valkey,
logs, spreadsheets, BibTeX, request guards, static files and the backup archive. It knows none of the
apps above it (`capbench`, the project, sits on top: settings, routes, the Celery app, the runner)."""
