"""Recipes: how to produce the files the Measured page reads (the code shown is the tested code).

The body lives in ui/views/recipes.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import recipes

router.page(recipes.render)
