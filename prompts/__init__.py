"""Prompt templates, one file per role and task, versioned with the code.

Templates use ``$name`` placeholders (``string.Template``) so JSON examples need no escaping.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def _template(name: str) -> Template:
    return Template(resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8"))


def render(name: str, **values: object) -> str:
    """Fill the template ``prompts/<name>.md``; a missing value raises ``KeyError``."""
    return _template(name).substitute({key: str(value) for key, value in values.items()})
