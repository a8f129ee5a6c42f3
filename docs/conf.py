"""The docs site: Sphinx, with MyST-Parser for the Markdown pages and the Furo theme.

scripts/test builds it strictly (any warning fails it: a broken link or anchor, a page in
no toctree, a docstring's reference to a name that does not exist):

    .venv/bin/sphinx-build -W --keep-going -n -q -b dirhtml docs site

``dirhtml`` gives each page a folder (``cli/``, ``kinds/auc/``): the site's URLs are those
of the earlier MkDocs site. The nav is the toctrees at the end of index.md; the per-kind
parts come from the kind registry (``_ext/kind_pages.py``), the site's own rules from
``_ext/site_rules.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS / "_ext"), str(DOCS.parent)]

project = "mpieval"
html_title = "mpieval"
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "kind_pages",
    "site_rules",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_ext"]
nitpicky = True

# MyST: a directive is a ::: fence (:::{toctree}, :::{note}), so that a ``` fence is code
# (tests/test_docs_examples.py runs python, console and sh fences); the one exception is
# ```{eval-rst}, which holds the API's autodoc directives. Heading anchors are spelled as
# the earlier site spelled them, so that links into the pages keep working.
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 6
myst_heading_slug_func = "site_rules.slug"

# The API sections: numpy-style docstrings; signatures without annotations (the
# docstrings' Parameters give the types); members in source order, private ones left out.
autodoc_typehints = "none"
autodoc_member_order = "bysource"
# (a directive's own :members: list is overridden by this default: list a class's members
# as `:no-members:` and an `.. automethod::` line each, as api.md does for Comm)
autodoc_default_options = {"members": True}
autoclass_content = "class"
autodoc_inherit_docstrings = False  # a member without a docstring of its own is left out
napoleon_google_docstring = False
# Parameters as one field list, with their types as written (free text: "mapping of str
# to Metric", "int, default 1"), not as cross-references.
napoleon_use_param = False
napoleon_use_rtype = False

html_theme = "furo"
html_copy_source = False
html_show_sourcelink = False
html_show_sphinx = False
