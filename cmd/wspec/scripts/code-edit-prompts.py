#!/usr/bin/env python3
"""code-edit-prompts.py > cmd/wspec/scripts/code-edit-prompts.txt (from the repository root):
the code-editing workload of `wspec bench --prompts`: a source file of this repository in the
prompt with an instruction to return it with one change, in Qwen2.5's chat template (ChatML,
its default system prompt), one JSON string a line. The answer repeats most of the prompt,
the case prompt lookup (ngram, suffix) was made for."""
import json

SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
EDITS = [
    ("spec/holdback/holdback.go", "Rename the function Partial to PartialSuffix everywhere."),
    ("spec/ngram.go", "Add a comment above each function that says what it returns."),
    ("spec/reasoning/reasoning.go", "Rename the type Parser to ReasoningParser everywhere."),
]

for path, change in EDITS:
    with open(path, encoding="utf-8") as f:
        source = f.read()
    user = f"Here is the file {path}:\n\n```go\n{source}```\n\n{change} Return the whole file, changed, in one Go code block."
    prompt = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
              "<|im_start|>assistant\n")
    print(json.dumps(prompt, ensure_ascii=False))
