// The page: pick or drop a model, type a prompt, watch the text stream with the speculation's
// statistics. Everything goes through the JavaScript API in wspec.js.
import {load} from './wspec.js';

const $ = (id) => document.getElementById(id);
const state = {engine: null, key: '', dropped: null, models: [], running: null};
window.wspecPage = state; // for tests and the console: state.done resolves after each generation

function status(text) { $('status').textContent = text; }

function showStats(s) {
  $('tokens').textContent = s.tokens ?? '-';
  $('tps').textContent = s.tps ? s.tps.toFixed(1) : '-';
  $('rate').textContent = s.draftTokens ? (100 * s.accepted / s.draftTokens).toFixed(0) + '%' : '-';
  $('mal').textContent = s.draftingSteps ? (1 + s.accepted / s.draftingSteps).toFixed(2) : '-';
  const chart = $('chart');
  chart.replaceChildren();
  const per = s.perPosition || [];
  for (let i = 0; i < per.length; i++) {
    const bar = document.createElement('div');
    const share = s.draftingSteps ? per[i] / s.draftingSteps : 0;
    bar.style.height = Math.max(1, 100 * share) + '%';
    bar.title = `position ${i + 1}: accepted in ${per[i]} of ${s.draftingSteps} drafting steps`;
    const label = document.createElement('span');
    label.textContent = String(i + 1);
    bar.append(label);
    chart.append(bar);
  }
}

async function engineFor(source, name, mode, k) {
  const key = JSON.stringify([name, mode, k]);
  if (state.engine && state.key === key) return state.engine;
  if (state.engine) { await state.engine.close(); state.engine = null; }
  status(`loading ${name}${mode ? ' with ' + mode : ''} ...`);
  const speculative = mode ? {method: mode, num_speculative_tokens: k} : null;
  state.engine = await load(source, {speculative, onProgress: ({file, loaded, total, cached}) => {
    status(`${cached ? 'from the cache' : 'downloading'}: ${file} ${(loaded / 1e6).toFixed(1)}${total ? ' of ' + (total / 1e6).toFixed(1) : ''} MB`);
  }});
  state.key = key;
  const i = state.engine.info;
  $('adapter').textContent = `${i.adapter} · ${i.features.length ? i.features.join(', ') : 'no optional features'} · ${i.dtype} weights · ${i.dispatches} dispatches per decode step`;
  return state.engine;
}

async function generate() {
  $('go').disabled = true;
  $('stop').disabled = false;
  const out = $('out');
  const abort = new AbortController();
  state.running = abort;
  let finish;
  state.done = new Promise((resolve) => { finish = resolve; });
  try {
    const choice = $('model').value;
    const m = state.models.find((x) => x.name === choice);
    const source = choice === 'dropped' ? state.dropped : m.url;
    const mode = $('mode').value, k = Number($('k').value);
    const engine = await engineFor(source, choice, mode, k);
    const prompt = $('prompt').value;
    out.replaceChildren(Object.assign(document.createElement('span'), {className: 'prompt', textContent: prompt}));
    const text = document.createTextNode('');
    out.append(text);
    const s = {tokens: 0, accepted: 0, draftTokens: 0, draftingSteps: 0, perPosition: []};
    let first = 0;
    status('generating ...');
    const opts = {max_tokens: Number($('max_tokens').value), temperature: Number($('temperature').value),
      top_p: Number($('top_p').value), seed: Number($('seed').value), signal: abort.signal,
      onStep: (st) => {
        if (!first) first = performance.now();
        s.tokens += st.decode_rows > 0 ? st.accepted + 1 : (s.tokens === 0 ? 1 : 0); // exact at the end (engine.result)
        if (st.drafts > 0) { s.draftingSteps++; s.draftTokens += st.drafts; s.accepted += st.accepted; }
        (st.accepted_at || []).forEach((n, i) => { s.perPosition[i] = (s.perPosition[i] || 0) + n; });
        const secs = (performance.now() - first) / 1000;
        s.tps = secs > 0 ? (s.tokens - 1) / secs : 0;
        showStats(s);
      }};
    for await (const piece of engine.generate(prompt, opts)) text.appendData(piece);
    const r = engine.result;
    Object.assign(s, {tokens: r.tokens.length, accepted: r.accepted_tokens, draftTokens: r.draft_tokens,
      draftingSteps: r.drafting_steps, perPosition: r.accepted_per_position || [],
      tps: r.decode_ms > 0 ? (r.tokens.length - 1) / (r.decode_ms / 1000) : 0});
    showStats(s);
    status(`done (${r.finish_reason}): ${r.prompt_tokens} prompt tokens in ${r.prefill_ms.toFixed(0)} ms, ${r.tokens.length} tokens`);
    finish({text: text.data, result: r});
  } catch (e) {
    status('error: ' + e.message);
    finish({error: e.message});
  } finally {
    $('go').disabled = false;
    $('stop').disabled = true;
    state.running = null;
  }
}

// The files of a dropped folder, with their paths inside it.
async function droppedFiles(items) {
  const out = [];
  const walk = async (entry, path) => {
    if (entry.isFile) {
      const file = await new Promise((res, rej) => entry.file(res, rej));
      out.push({path, file});
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const e of batch) await walk(e, path + '/' + e.name);
      }
    }
  };
  for (const item of items) {
    const entry = item.webkitGetAsEntry && item.webkitGetAsEntry();
    if (entry) await walk(entry, entry.name);
  }
  return out;
}

async function init() {
  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    state.dropped = await droppedFiles([...e.dataTransfer.items]);
    const opt = document.createElement('option');
    opt.value = 'dropped';
    opt.textContent = `dropped: ${state.dropped[0]?.path.split('/')[0] || 'folder'}`;
    $('model').append(opt);
    $('model').value = 'dropped';
  });
  $('go').addEventListener('click', generate);
  $('stop').addEventListener('click', () => state.running?.abort());
  const index = await (await fetch('models/index.json')).json();
  state.models = index.models;
  for (const m of index.models) $('model').append(new Option(m.name, m.name));
  const modes = new Set(['ngram', 'suffix', ...index.models.flatMap((m) => m.drafters)]);
  for (const mode of modes) $('mode').append(new Option(mode, mode));
  $('go').disabled = false;
  status('ready');
  $('adapter').textContent = navigator.gpu ? 'WebGPU available' : 'this browser has no WebGPU';
}

init().catch((e) => status('error: ' + e.message));
