"""Dataset importers: one module per source format, each turning files into a `DatasetBundle`.

Parsers read and validate everything before the database is touched; `catalog.services.imports`
then stores a bundle in one transaction. Nothing here imports Django.
"""
