"""How the command line spells the exporter's options, in refusals and for leftover words."""

from __future__ import annotations

import shlex

from .._generated.vocab import BUFFER_POLICY, COLOUR_SCHEME, GRANULARITY
from ..errors import Opt


FLAGS = {
    "path": "-o",
    "granularity": "--granularity",
    "depth": "--depth",
    "show_buffers": "--show-buffers",
    "attachment": "--attachment",
    "baseline": "--baseline",
    "serve": "--serve",
    "activation_stats": "--activation-stats",
    "colour_by": "--colour-by",
}
"""The flag of each keyword of ``tlnetron.export`` (but the trace and the progress hook)."""

METAVARS = {
    "path": "PATH",
    "granularity": "|".join(GRANULARITY),
    "depth": "N",
    "show_buffers": "|".join(BUFFER_POLICY),
    "attachment": "auto|on|off",
    "baseline": "ref.tlspec",
    "colour_by": "|".join(COLOUR_SCHEME),
}

ATTACHMENT = {"auto": None, "on": True, "off": False}
"""``--attachment``'s values, as ``tlnetron.export``'s ``attachment=``."""


def cli_spelling(opt: Opt) -> str:
    """How the command line spells an option a refusal names: ``--granularity module``,
    ``--depth N`` (the option alone), ``--attachment off``, ``--serve``, ``no -o``, ...

    A keyword with no flag keeps its Python spelling (tests hold every keyword to a flag).
    """
    flag = FLAGS.get(opt.keyword)
    if flag is None:
        return str(opt)
    value = opt.value
    if opt.keyword == "serve":
        return flag if value is True or value is ... else f"no {flag}"
    if opt.keyword == "activation_stats":
        return "--no-activation-stats" if value is False else flag
    if value is ...:
        return f"{flag} {METAVARS[opt.keyword]}"
    if opt.keyword == "attachment":
        spelt = next((word for word, v in ATTACHMENT.items() if v is value), None)
        return f"{flag} {spelt if spelt is not None else shlex.quote(str(value))}"
    if value is None:
        return f"no {flag}"
    if opt.keyword == "baseline":
        return f"--baseline-id {shlex.quote(value)}" if isinstance(value, str) else f"{flag} {METAVARS['baseline']}"
    return f"{flag} {shlex.quote(str(value))}"


PATH_ARGS = {
    "trace": "TRACE",
    "output": "--output",
    "artifact": "ARTIFACT",
    "attachment": "--attachment",
    "copy_to": "--copy-to",
    "output_dir": "--output-dir",
    "baseline": "--baseline",
}


def unrecognized(extra: list[str]) -> str:
    """argparse's complaint about leftover words, naming the flag for a Python-style keyword=value."""
    import ast

    for word in extra:
        key, eq, text = word.partition("=")
        key = key.lstrip("-").replace("-", "_")
        if eq and key in FLAGS:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            return f"unrecognized argument {word!r}: the command line spells it {cli_spelling(Opt(key, value))}"
    return f"unrecognized arguments: {' '.join(extra)}"
