// wspec in a web page: the engine compiled to WebAssembly, its WGSL kernels on the visitor's
// GPU through WebGPU, with exact speculative decoding.
//
//   import {load} from './wspec.js';
//   const engine = await load('/models/stories15M', {speculative: {method: 'eagle', num_speculative_tokens: 4}});
//   for await (const text of engine.generate('Once upon a time', {max_tokens: 64})) out.textContent += text;
//   await engine.close();
//
// A model is a Hugging Face folder (config.json, tokenizer.json, model.safetensors or its
// shards) or a GGUF file, by URL or as the File objects of a folder a visitor dropped. Its
// files are kept in the browser's Cache Storage, so a second visit downloads nothing. A
// drafter is a folder too: by default <model>/drafters/<method>, as `wspec web` serves the
// drafters shipped for the default model.

import {MemFS} from './fs.js';

const CACHE = 'wspec-files-v1';
const ROOT = '/wspec';
const DRAFTER_METHODS = ['draft_model', 'eagle', 'eagle3', 'medusa'];
const FOLDER_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json',
  'chat_template.jinja', 'model.safetensors', 'model.safetensors.index.json'];

let started = null;
let mounts = 0;

// start runs the Go program once per page and resolves to its API (globalThis.wspecGo).
function start(wasmURL) {
  if (started) return started;
  started = (async () => {
    if (!(globalThis.fs instanceof MemFS)) globalThis.fs = new MemFS();
    await import(new URL('./wasm_exec.js', import.meta.url));
    const go = new globalThis.Go();
    go.env = {WSPEC_HOME: ROOT, HOME: '/home'};
    const ready = new Promise((resolve) => { globalThis.wspecReady = resolve; });
    const {instance} = await WebAssembly.instantiateStreaming(fetch(wasmURL), go.importObject);
    go.run(instance).then(() => { started = null; });
    await ready;
    return globalThis.wspecGo;
  })();
  started.catch(() => { started = null; });
  return started;
}

// fetchFile returns a file's bytes, from Cache Storage when it is there under key; null for a
// 404. onProgress(loaded, total) follows the download.
async function fetchFile(url, key, onProgress) {
  const cache = globalThis.caches ? await caches.open(CACHE).catch(() => null) : null;
  let resp = cache ? await cache.match(key) : undefined;
  const cached = !!resp;
  if (!resp) {
    resp = await fetch(url);
    if (resp.status === 404) return null;
    if (!resp.ok) throw new Error(`wspec: ${url}: HTTP ${resp.status}`);
  }
  const total = Number(resp.headers.get('Content-Length')) || 0;
  const reader = resp.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    onProgress(loaded, total, cached);
  }
  const data = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { data.set(c, at); at += c.length; }
  if (!cached && cache) await cache.put(key, new Response(data, {headers: {'Content-Length': String(loaded)}})).catch(() => {});
  return data;
}

// mountURL fetches a model or drafter (a folder URL, or a .gguf file) into the page's file
// system under dir and returns the path the engine opens. A folder's files are named by its
// files.json ([{name, size, version}], as `wspec web` serves it) or, without one, are the
// usual names of a Hugging Face folder.
async function mountURL(url, dir, onProgress) {
  url = String(url).replace(/\/+$/, '');
  const progress = (name) => (loaded, total, cached) => onProgress({file: name, loaded, total, cached});
  if (/\.gguf$/i.test(url)) {
    const name = url.split('/').pop();
    const data = await fetchFile(url, url, progress(name));
    if (!data) throw new Error(`wspec: ${url} not found`);
    globalThis.fs.mount(`${dir}/${name}`, data);
    return `${dir}/${name}`;
  }
  let list = null;
  const m = await fetch(`${url}/files.json`, {cache: 'no-store'}).catch(() => null);
  if (m && m.ok) list = await m.json();
  const names = list ? list.map((f) => f.name) : [...FOLDER_FILES];
  const version = Object.fromEntries((list || []).map((f) => [f.name, f.version || f.size]));
  for (let i = 0; i < names.length; i++) {
    const name = names[i], src = `${url}/${name}`;
    const data = await fetchFile(src, version[name] ? `${src}?v=${version[name]}` : src, progress(name));
    if (!data) {
      if (list) throw new Error(`wspec: ${src} is in files.json but not served`);
      continue;
    }
    globalThis.fs.mount(`${dir}/${name}`, data);
    if (!list && name === 'model.safetensors.index.json') {
      const index = JSON.parse(new TextDecoder().decode(data));
      for (const shard of new Set(Object.values(index.weight_map || {}))) if (!names.includes(shard)) names.push(shard);
    }
  }
  return dir;
}

// mountFiles puts the File objects of a folder (webkitRelativePath, or the path of a
// {path, file} entry, keeps their subfolders) under dir.
async function mountFiles(files, dir) {
  let gguf = null;
  for (const f of files) { // a File, or {path, file} for a dropped entry
    const file = f.file || f;
    const rel = (f.path || file.webkitRelativePath || file.name).split('/');
    if (rel.length > 1) rel.shift(); // the dropped folder's own name
    globalThis.fs.mount(`${dir}/${rel.join('/')}`, new Uint8Array(await file.arrayBuffer()));
    if (rel.length === 1 && /\.gguf$/i.test(file.name)) gguf = `${dir}/${file.name}`;
  }
  return gguf || dir;
}

// load loads a model (URL or Files) onto the page's GPU. Options:
//   speculative: {method, num_speculative_tokens} as vLLM's speculative_config (method: ngram,
//     suffix, draft_model, eagle, eagle3, medusa), or null for none;
//   drafter: the drafter's folder URL (or Files), for the methods that have one;
//   engine: more engine arguments by vLLM's names (dtype, max_model_len, kv_cache_dtype,
//     num_gpu_blocks_override, enable_prefix_caching);
//   onProgress({file, loaded, total, cached}): the downloads; wasm: the URL of wspec.wasm.
export async function load(model, options = {}) {
  const api = await start(options.wasm || new URL('./wspec.wasm', import.meta.url));
  const onProgress = options.onProgress || (() => {});
  const n = ++mounts;
  const modelDir = typeof model === 'string' ? await mountURL(model, `${ROOT}/mount${n}/model`, onProgress)
    : await mountFiles(model, `${ROOT}/mount${n}/model`);
  const cfg = {...(options.engine || {})};
  const sc = options.speculative ? {...options.speculative} : null;
  if (sc && DRAFTER_METHODS.includes(sc.method) && !sc.model) {
    const dir = `${ROOT}/mount${n}/drafter`;
    const drafter = options.drafter || (typeof model === 'string' ? `${String(model).replace(/\/+$/, '')}/drafters/${sc.method}` : null);
    if (drafter) sc.model = typeof drafter === 'string' ? await mountURL(drafter, dir, onProgress) : await mountFiles(drafter, dir);
    else sc.model = `${modelDir}/drafters/${sc.method}`;
  }
  if (sc) cfg.speculative_config = sc;
  try {
    const {id, info} = JSON.parse(await api.load(modelDir, JSON.stringify(cfg)));
    return new Engine(api, id, info, n);
  } catch (e) {
    globalThis.fs.unmount(`${ROOT}/mount${n}`);
    throw e;
  }
}

let requests = 0;

// Engine is a loaded model.
export class Engine {
  constructor(api, id, info, mount) {
    this.api = api; this.id = id; this.info = info; this.mount = mount;
    this.result = null; // the last generation's result: tokens, timings, speculation statistics
  }

  // generate yields the text after prompt as it is generated. Options by vLLM's names
  // (max_tokens 256, the sampling parameters `wspec generate --help` lists, greedy by default,
  // seed, stop, ignore_eos, speculative: {num_speculative_tokens (0: none), fixed: draft k tokens every
  // step rather than as far as drafts pay}, as the server takes it); onStep(step) is told each step's
  // rows, drafts and accepted drafts; signal (an AbortSignal) stops it.
  async *generate(prompt, options = {}) {
    const {onStep, signal, ...opts} = options;
    const rid = ++requests;
    const queue = [];
    let wake = null, done = false, error = null;
    const push = () => { if (wake) { wake(); wake = null; } };
    const onAbort = () => this.api.cancel(rid);
    signal?.addEventListener('abort', onAbort);
    this.api.generate(this.id, rid, prompt, JSON.stringify(opts),
      (text) => { queue.push(text); push(); },
      (step) => { if (onStep) onStep(JSON.parse(step)); })
      .then((r) => { this.result = JSON.parse(r); }, (e) => { error = e; })
      .finally(() => { done = true; push(); });
    try {
      for (;;) {
        while (queue.length) yield queue.shift();
        if (done) break;
        await new Promise((resolve) => { wake = resolve; });
      }
      if (error) throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (!done) this.api.cancel(rid);
    }
  }

  // close stops a generation still running and frees the engine's GPU memory and its files.
  async close() {
    await this.api.close(this.id);
    globalThis.fs.unmount(`${ROOT}/mount${this.mount}`);
  }
}

// selftest runs the portability suite's kernels on the page's adapter against their pure-Go
// references: {filter: 'kernel names, comma-separated', full: false, per_variant: 0 (all, or
// that many cases of each kernel variant)}. It returns the adapter's report, as
// `wspec selftest --json` writes.
export async function selftest(options = {}, wasm) {
  const api = await start(wasm || new URL('./wspec.wasm', import.meta.url));
  return JSON.parse(await api.selftest(JSON.stringify(options)));
}
