"""The site's own rules for Sphinx (an extension, loaded by docs/conf.py):

- heading anchors spelled as Python-Markdown's ``toc`` extension spells them (the earlier
  MkDocs site's), so that links into the pages from elsewhere keep working (:func:`slug`);
- a docstring's reference to a real object that no page documents (a kernel, a private
  helper, numpy) is shown as code, as before: a dotted path must exist as written, a
  short name (``InputError``, ``Metric.state_dict``) in some module of mpieval; a
  reference to a name that is nowhere (misspelt, renamed, moved) still fails the build;
- a property's docstring is prose: napoleon reads a first line ``X: Y`` as the type X and
  the text Y (:func:`_prose_property` puts X back);
- a class attribute that holds another package's class (``label_dtype = np.float64``) is
  not a member of the API.
"""

from __future__ import annotations

import importlib
import re
import sys
import unicodedata
from typing import Any


def slug(text: str) -> str:
    """``"Same bits on any number of ranks"`` → ``same-bits-on-any-number-of-ranks``."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def exists(dotted: str) -> bool:
    """Whether ``dotted`` names an importable module or an attribute of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def _undocumented(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """A Python reference no page resolves: its text, when the name exists (as Python
    would look it up from the docstring's module and class); else None (a warning)."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if module:
        candidates += [f"{module}.{cls}.{target}"] if cls else []
        candidates.append(f"{module}.{target}")
    if not target.startswith(("mpieval.", "numpy.")):  # a short name: in any of mpieval
        candidates += [f"{name}.{target}" for name in list(sys.modules)
                       if name == "mpieval" or name.startswith("mpieval.")]
    return contnode if any(exists(name) for name in candidates) else None


def _prose_property(app: Any, what: str, name: str, obj: Any, options: Any,
                    lines: list[str]) -> None:
    """After napoleon: a property's ``[text, "", ":type: X"]`` back to ``X: text``."""
    if what == "property" and len(lines) >= 3 and lines[-1].startswith(":type: ") \
            and lines[-2] == "":
        head = lines.pop()[len(":type: "):]
        lines.pop()
        lines[0] = f"{head}: {lines[0]}"


def _skip_alias(app: Any, what: str, name: str, obj: Any, skip: bool,
                options: Any) -> bool | None:
    if isinstance(obj, type) and not obj.__module__.startswith("mpieval"):
        return True
    return None


def setup(app: Any) -> dict[str, Any]:
    app.connect("missing-reference", _undocumented)
    app.connect("autodoc-process-docstring", _prose_property, priority=600)  # after napoleon
    app.connect("autodoc-skip-member", _skip_alias)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
