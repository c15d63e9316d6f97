// llamacpp_score.mjs: llama.cpp (node-llama-cpp, CPU, f32 KV cache) scoring text, as an oracle
// for wspec's prompt scoring. Usage: node llamacpp_score.mjs REQUEST.json, where the request is
//   {"model": "file.gguf", "text": "...", "window": 512}
// It tokenizes the text (BOS added when the model adds it), cuts the tokens into windows of
// `window` tokens, and feeds each window to a fresh context one token at a time (teacher
// forcing), printing for each window its tokens and the log-probability of each token after
// the ones before it (the full softmax at temperature 1; none for a window's first token).
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const req = JSON.parse(readFileSync(process.argv[2], "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: req.model, gpuLayers: 0});
let all = model.tokenize(req.text, false);
const bos = model.tokens.shouldPrependBosToken && model.tokens.bos != null ? [model.tokens.bos] : [];
const out = {windows: []};
for (let start = 0; start < all.length; start += req.window - bos.length) {
  const tokens = [...bos, ...all.slice(start, start + req.window - bos.length)];
  if (tokens.length < 2) break;
  const context = await model.createContext({
    contextSize: req.window, batchSize: req.window, threads: 1, flashAttention: false,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
  });
  const seq = context.getSequence();
  const logprobs = [];
  const gen = seq.evaluateWithMetadata(tokens.slice(0, 1), {probabilities: true}, {temperature: 1, topK: 0, topP: 1, minP: 0});
  let r = await gen.next();
  for (let i = 1; i < tokens.length && !r.done; i++) {
    logprobs.push(Math.log(r.value.probabilities.get(tokens[i]) ?? 0));
    if (i + 1 < tokens.length) r = await gen.next(tokens[i]);
  }
  await gen.return();
  out.windows.push({tokens: Array.from(tokens), logprobs});
  await context.dispose();
}
process.stdout.write(JSON.stringify(out));
await model.dispose();
await llama.dispose();
