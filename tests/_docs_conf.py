"""The settings of ``docs/conf.py``, read as Sphinx reads them, for the documentation tests."""
from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def docs_conf() -> dict:
    """The namespace of docs/conf.py (executed as Sphinx does; ``sys.path`` and ``TEXINPUTS`` restored)."""
    namespace = {"__file__": str(DOCS / "conf.py")}
    saved_path, saved_texinputs = list(sys.path), os.environ.get("TEXINPUTS")
    try:
        exec(compile((DOCS / "conf.py").read_text(), str(DOCS / "conf.py"), "exec"), namespace)
        namespace["_texinputs"] = os.environ.get("TEXINPUTS")       # what the build runs TeX with
    finally:
        sys.path[:] = saved_path
        if saved_texinputs is None:
            os.environ.pop("TEXINPUTS", None)
        else:
            os.environ["TEXINPUTS"] = saved_texinputs
    return namespace
