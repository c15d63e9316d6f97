// llamacpp-lookup.mjs MODEL.gguf PROMPTS.txt TOKENS [ROUNDS]: llama.cpp's own prompt lookup
// (node-llama-cpp's InputLookupTokenPredictor, up to 4 tokens a step) against plain decoding
// on its CPU backend (1 thread), greedy, on a `wspec bench --prompts` file (JSON-string lines
// are decoded; the text is tokenized with its special tokens, as wspec does), alternated
// prompt by prompt. Copy it into the folder node-llama-cpp is installed in (.wspec/oracle,
// which the oracle tier fills) and run it there. Prints one JSON line per run and a summary.
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel, LlamaCompletion, InputLookupTokenPredictor} from "node-llama-cpp";

const [modelPath, promptsPath, tokensArg, roundsArg] = process.argv.slice(2);
const tokens = Number(tokensArg), rounds = Number(roundsArg ?? 1);
const prompts = readFileSync(promptsPath, "utf8").split("\n").map((l) => l.trim()).filter(Boolean)
  .map((l) => (l.startsWith('"') ? JSON.parse(l) : l));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const sum = {plain: 0, lookup: 0, n: 0};
for (let r = 0; r < rounds; r++) {
  for (const [i, prompt] of prompts.entries()) {
    for (const arm of ["plain", "lookup"]) {
      const context = await model.createContext({contextSize: 2048, batchSize: 512, threads: 1});
      const predictor = arm === "lookup" ? new InputLookupTokenPredictor({predictionLength: {max: 4}}) : undefined;
      const sequence = context.getSequence({tokenPredictor: predictor});
      const completion = new LlamaCompletion({contextSequence: sequence});
      const input = model.tokenize(prompt, true);
      // the prompt first, untimed: decode speed alone, as wspec bench reports it
      await completion.generateCompletion(input, {maxTokens: 1, temperature: 0});
      const t0 = performance.now();
      let n = 0;
      await completion.generateCompletion(input, {maxTokens: tokens, temperature: 0, onToken: (t) => { n += t.length; }});
      const s = (performance.now() - t0) / 1000;
      const row = {round: r, prompt: i, arm, tokens: n, seconds: +s.toFixed(2), tokPerSec: +(n / s).toFixed(1), predictions: sequence.tokenPredictions};
      console.log(JSON.stringify(row));
      sum[arm] += n / s;
      await context.dispose();
    }
    sum.n++;
  }
}
console.log(JSON.stringify({meanPlainTokPerSec: +(sum.plain / sum.n).toFixed(1), meanLookupTokPerSec: +(sum.lookup / sum.n).toFixed(1),
  speedUp: +(sum.lookup / sum.plain).toFixed(2)}));
await model.dispose();
await llama.dispose();
