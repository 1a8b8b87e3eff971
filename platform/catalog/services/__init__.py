"""Business logic of the catalog: writes (`*_import`, `*_attach`) and exports."""
