"""The REST API's views, one module per resource (thin: services, selectors and the pages' own
models do the work); api.urls routes them."""
