"""The ``velyrix`` command line: thin Typer commands that call the library and render with rich."""
