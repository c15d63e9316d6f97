// Package web is wspec in a web page: the engine compiled to WebAssembly behind a small
// JavaScript API (static/wspec.js), the page that uses it (static/index.html), and, in the
// native build, the server `wspec web` runs to give the page its files on loopback. The
// browser's WebGPU binding is runtime/webgpu's syscall/js half; nothing here is in the native
// engine's path. The guide is docs/browser.md.
//
// # wspec web
//
//	wspec web [--host 127.0.0.1] [--port 8090] [--model DIR|FILE.gguf] [--wasm FILE] [--source DIR]
//
// builds the engine for the browser (GOOS=js GOARCH=wasm go build ./cmd/wspec-wasm, from the
// wspec source it is run in, or --source; --wasm takes a prebuilt one with its Go release's
// wasm_exec.js beside it) and serves a page where the default model (or --model) generates
// text on the visitor's GPU, with every speculative mode: the same Go engine, scheduler,
// drafters, rejection sampler and WGSL kernels as the native binary. The page streams the text
// with tokens per second and the drafts accepted per position; a model folder or GGUF file
// dropped on it is loaded from the visitor's disk; weights are kept in the browser's Cache
// Storage, so a second visit downloads nothing.
//
// # The JavaScript API
//
// static/wspec.js is an ES module beside wspec.wasm, wasm_exec.js and fs.js:
//
//	import {load, selftest} from './wspec.js';
//	const engine = await load('/models/stories15M', {          // a folder URL, a .gguf URL, or dropped Files
//	  speculative: {method: 'eagle3', num_speculative_tokens: 4}, // vLLM's speculative_config; null: none
//	  onProgress: ({file, loaded, total, cached}) => {},          // downloads (cached: from Cache Storage)
//	});
//	console.log(engine.info.adapter, engine.info.features);
//	for await (const text of engine.generate('Once upon a time', {max_tokens: 64, temperature: 0.8, seed: 1}))
//	  document.body.append(text);
//	console.log(engine.result.mean_acceptance_length);         // and tokens, timings, accepted per position
//	await engine.close();                                       // frees the GPU memory
//
// generate's options are vLLM's names: max_tokens 256, the sampling parameters of
// engine.SamplingParams at `wspec generate`'s defaults (temperature 0), seed, stop,
// ignore_eos, speculative: {num_speculative_tokens (0:
// none), fixed} as wspec serve takes it, structured_outputs: {json | regex | choice | grammar | json_object} as vLLM
// spells it; GenerateRequest), signal (an AbortSignal) and onStep (each step's rows,
// drafts and accepted drafts); an unknown name or a value out of range rejects with the
// engine's message. load's engine option takes engine arguments by vLLM's names (dtype,
// kv_cache_dtype, max_model_len, num_gpu_blocks_override, enable_prefix_caching);
// drafter takes a drafter folder's URL (default: <model>/drafters/<method>, where wspec web
// serves the default model's shipped drafters). selftest({per_variant: 2}) runs the
// portability suite's kernels on the page's adapter against their pure-Go references and
// returns the report `wspec selftest --json` writes. engine.close() stops a generation still
// running.
//
// # How it works
//
// Each wait (a readback's mapAsync, pipeline creation, onSubmittedWorkDone) is a promise
// awaited on a channel, so the page's event loop runs while the GPU works; submits and bind
// groups check their error scopes at the next wait, so a step costs no extra round trip. A
// model's files are fetched into an in-memory file system (fs.js, the Node file API Go's js
// port reads through), so the loaders read them as files. Features are negotiated as
// natively: subgroups where offered, f16 weights only with shader-f16 (SwiftShader has none).
// The wasm embeds no drafters (the page fetches them): about 8 MB, 2 MB gzipped.
//
// # Tests
//
// go test -tags browser ./spec/web/ (CI's long tier; Debian's chromium driven by chromedp, see
// webtest) runs two cases of every kernel variant of the portability suite in the page
// (WSPEC_BROWSER_SELFTEST=quick or full for a whole tier), checks greedy and seeded tokens
// against the native engine's with and without speculation, and drives the page as a visitor.
package web
