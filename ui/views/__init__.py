"""Page bodies: one module per page with ``render()``; ``pages/*.py`` only call it.

Kept out of the page files so the code is compiled once on import: Streamlit compiles a page
file on every run that has no script cache (AppTest builds a new one on every ``run()``).
"""
