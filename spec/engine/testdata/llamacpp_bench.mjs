// llamacpp_bench.mjs: llama.cpp's load time, prefill and decode speed on a GGUF file, through
// node-llama-cpp, for BENCHMARKS.md (beside `wspec generate` on the same weights).
// Usage: node llamacpp_bench.mjs FILE.gguf cpu|vulkan PROMPT N
// Prints one JSON line: load_s, prompt_tokens, prefill_tok_s, decode_tokens, decode_ms_per_token
// (N 0: load_s alone).
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [file, backend, prompt, n] = process.argv.slice(2);
const llama = await getLlama({gpu: backend === "vulkan" ? "vulkan" : false, build: "never", logLevel: LlamaLogLevel.error});
let t0 = performance.now();
const model = await llama.loadModel({modelPath: file, gpuLayers: backend === "vulkan" ? "max" : 0});
const load = (performance.now() - t0) / 1000;
if (Number(n) === 0) {
  console.log(JSON.stringify({backend, load_s: load}));
  process.exit(0);
}
const context = await model.createContext({contextSize: 1024, batchSize: 512, threads: 1, flashAttention: false,
  experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
const seq = context.getSequence();
let tokens = model.tokenize(prompt, false);
if (model.tokens.shouldPrependBosToken && model.tokens.bos != null) tokens = [model.tokens.bos, ...tokens];
const gen = seq.evaluate(tokens, {temperature: 0});
t0 = performance.now();
let r = await gen.next(); // the prompt's pass and the first token
const prefill = (performance.now() - t0) / 1000;
let count = 0;
t0 = performance.now();
while (!r.done && count < Number(n)) {
  r = await gen.next();
  count++;
}
const decode = (performance.now() - t0) / 1000;
await gen.return();
console.log(JSON.stringify({backend, load_s: load, prompt_tokens: tokens.length, prefill_tok_s: tokens.length / prefill,
  decode_tokens: count, decode_ms_per_token: 1000 * decode / count}));
await context.dispose();
await model.dispose();
await llama.dispose();
