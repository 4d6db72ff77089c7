"""The API's routers (one module per resource) and the pages' routers."""

__all__: list[str] = []
