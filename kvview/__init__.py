"""The presentation layer: figures, formatting, words, CSV, the HTML reports and the URL codec.

Pure Python on top of ``kvmodel`` (plotly for figures, no Streamlit): the Streamlit pages in
``ui`` and the CLI (``kvmodel.cli``) both draw with it.
"""
