// llamacpp.mjs: llama.cpp (node-llama-cpp, CPU, f32 KV cache) as an oracle for wspec's tests.
// Usage: node llamacpp.mjs REQUEST.json, where the request is
//   {"model": "file.gguf", "prompts": ["..."], "tokens": 32, "topK": 20, "vulkan": false}
// With "vulkan", llama.cpp runs on its Vulkan backend instead (all layers offloaded).
// It prints one JSON object: for each prompt its tokens (BOS added when the model adds it) and,
// for each of `tokens` greedy steps, the chosen token and the topK log-probabilities
// [[id, logprob], ...] of the full softmax (temperature 1) it was chosen from.
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const req = JSON.parse(readFileSync(process.argv[2], "utf8"));
const llama = await getLlama({gpu: req.vulkan ? "vulkan" : false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: req.model, gpuLayers: req.vulkan ? "max" : 0});
const out = {prompts: []};
for (const prompt of req.prompts) {
  const context = await model.createContext({
    contextSize: 512, batchSize: 512, threads: 1, flashAttention: false,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
  });
  const seq = context.getSequence();
  let tokens = model.tokenize(prompt, false);
  if (model.tokens.shouldPrependBosToken && model.tokens.bos != null) tokens = [model.tokens.bos, ...tokens];
  const steps = [];
  const gen = seq.evaluateWithMetadata(tokens, {probabilities: true}, {temperature: 1, topK: 0, topP: 1, minP: 0});
  let r = await gen.next();
  while (!r.done && steps.length < req.tokens) {
    const top = [];
    for (const [id, p] of r.value.probabilities) {
      if (top.length === req.topK) break;
      top.push([id, Math.log(p)]);
    }
    const token = top[0][0];
    steps.push({token, top});
    if (steps.length === req.tokens) break;
    r = await gen.next(token);
  }
  await gen.return();
  out.prompts.push({prompt, tokens: Array.from(tokens), steps});
  await context.dispose();
}
process.stdout.write(JSON.stringify(out));
await model.dispose();
await llama.dispose();
