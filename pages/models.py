"""Models: KV bytes per token across the catalog; import a Hugging Face config.json.

The body lives in ui/views/models.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import models

router.page(models.render)
