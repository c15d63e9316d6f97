"""render.py: the oracle for TestTemplatesAgainstJinja2. It renders each case of a JSON list
read on stdin with Python's Jinja2, set up as transformers' apply_chat_template sets it up
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its tojson,
raise_exception and strftime_now), and writes the renderings (or "ERROR: message") as a JSON
list. strftime_now reads a fixed clock: 2026-12-03 05:00:00."""
import datetime
import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = datetime.datetime(2026, 12, 3, 5, 0, 0)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return NOW.strftime(fmt)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now


def message(m):
    """The message as wspec's chat.Message.value builds it (vLLM's form)."""
    out = {"role": m["role"], "content": m.get("content", "")}
    if m.get("name"):
        out["name"] = m["name"]
    if m.get("tool_calls"):
        calls = []
        for c in m["tool_calls"]:
            try:
                args = json.loads(c["arguments"])
            except ValueError:
                args = c["arguments"]
            calls.append({"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": args}})
        out["tool_calls"] = calls
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    if m.get("reasoning_content"):
        out["reasoning_content"] = m["reasoning_content"]
    return out


def render(case):
    tpl = env.from_string(case["template"])
    msgs = [message(m) for m in case["messages"]]
    kw = dict(case.get("vars") or {})
    out = tpl.render(messages=msgs, tools=case.get("tools"), documents=case.get("documents"),
                     add_generation_prompt=case.get("add_generation_prompt", False),
                     bos_token=case["bos"], eos_token=case["eos"], **kw)
    if case.get("continue_final_message"):
        final = msgs[-1]["content"]
        loc = out.rindex(final.strip())
        if out[loc:loc + len(final.lstrip())] == final:
            out = out[:loc + len(final.lstrip())]
        else:
            out = out[:loc + len(final.strip())]
    return out


results = []
for case in json.load(sys.stdin):
    try:
        results.append(render(case))
    except Exception as e:  # noqa: BLE001 - the error's text is the expected result
        results.append("ERROR: " + str(e))
json.dump(results, sys.stdout, ensure_ascii=False)
