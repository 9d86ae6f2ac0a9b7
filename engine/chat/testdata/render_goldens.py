#!/usr/bin/env python3
"""Renders tool_cases.json with a Gemma 4 chat template into tool_goldens.json.

The goldens hold engine/chat's Format to the template itself, run by Jinja
with the settings transformers' apply_chat_template uses (trim_blocks,
lstrip_blocks, loopcontrols, a sandbox). The template is not kept here; the
goldens were made from the updated official Gemma 4 template as llama.cpp
keeps it (models/templates/google-gemma-4-31B-it.jinja, llama.cpp commit
3fc65063d, "better align to the updated official gemma4 template"):

    python3 render_goldens.py google-gemma-4-31B-it.jinja

Each case's tool-call arguments are dicts, as vLLM hands them to the template
(it json.loads the OpenAI API's argument strings first).
"""
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(sys.argv[1]) as f:
        source = f.read()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    template = env.from_string(source)
    with open(os.path.join(here, "tool_cases.json")) as f:
        cases = json.load(f)
    out = {}
    for case in cases:
        kwargs = dict(messages=case["messages"], bos_token="<bos>",
                      add_generation_prompt=case.get("add_generation_prompt", True))
        if case.get("tools"):
            kwargs["tools"] = case["tools"]
        if case.get("enable_thinking"):
            kwargs["enable_thinking"] = True
        out[case["name"]] = template.render(**kwargs)
    with open(os.path.join(here, "tool_goldens.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
