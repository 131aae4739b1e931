"""The settings of ``docs/conf.py``, read as Sphinx reads them, for the documentation tests."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def docs_conf() -> dict:
    """The namespace of docs/conf.py (executed as Sphinx does; ``sys.path`` restored)."""
    namespace = {"__file__": str(DOCS / "conf.py")}
    saved_path = list(sys.path)
    try:
        exec(compile((DOCS / "conf.py").read_text(), str(DOCS / "conf.py"), "exec"), namespace)
    finally:
        sys.path[:] = saved_path
    return namespace


def module_available(name: str) -> bool:
    """Whether ``name`` can be imported (an optional extra may be missing)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def cli_parser(conf: dict, key: str):
    """The argparse parser of the command ``key`` of conf.py's ``qkov_cli_parsers``."""
    module, func = conf["qkov_cli_parsers"][key]
    return getattr(importlib.import_module(module), func)()
