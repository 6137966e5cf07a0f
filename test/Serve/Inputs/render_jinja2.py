#!/usr/bin/env python3
"""render_jinja2.py [CONFIG] CASES.json

Renders the cases of CASES.json (tfmc-chat-template's --cases format) with
Python's Jinja2 the way transformers' apply_chat_template does
(transformers/utils/chat_template_utils.py, _compile_jinja_template): an
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
loopcontrols extension and the {% generation %} tag, raise_exception,
strftime_now and transformers' own tojson. Prints what tfmc-chat-template
prints, one JSON line per case: {"name": N, "output": TEXT},
{"name": N, "raised": MESSAGE} (raise_exception) or {"name": N, "error":
"TYPE: MESSAGE"}. CONFIG is a tokenizer_config.json: its chat_template,
bos_token and eos_token (a string or an AddedToken object; null or absent:
not passed, as transformers passes only the tokens a tokenizer has).
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Raised(TemplateError):
    """What raise_exception raises (transformers raises TemplateError)."""


class AssistantTracker(Extension):
    # transformers' {% generation %}: renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def raise_exception(message):
    raise Raised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def token(value):
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def main():
    args = sys.argv[1:]
    if len(args) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    config = {}
    if len(args) == 2:
        with open(args[0], encoding="utf-8") as f:
            config = json.load(f)
    with open(args[-1], encoding="utf-8") as f:
        cases = json.load(f)
    env = environment()
    for case in cases:
        kwargs = {"messages": case.get("messages", []),
                  "add_generation_prompt": case.get("add_generation_prompt", False)}
        for name in ("bos_token", "eos_token"):
            value = token(case[name] if name in case else config.get(name))
            if value is not None:
                kwargs[name] = value
        kwargs.update(case.get("variables", {}))
        line = {"name": case["name"]}
        try:
            template = env.from_string(case.get("template", config.get("chat_template")))
            line["output"] = template.render(**kwargs)
        except Raised as e:
            line["raised"] = str(e)
        except Exception as e:  # every other failure: an error, whatever its kind
            line["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(line, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
