// sdk.mjs BASE_URL API_KEY MODEL PROMPT_IDS_JSON: the official OpenAI JavaScript SDK against
// wspec serve. Prints one JSON object of what it saw.
import OpenAI, { NotFoundError } from 'openai';

const [baseURL, apiKey, model, ids] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const out = {};
const kind = (e) => (e instanceof NotFoundError ? 'NotFoundError' : e?.constructor?.name ?? String(e));
try {
  await client.completions.create({ model: 'gpt-4', prompt: 'a', max_tokens: 2 });
  out.completionUnknown = 'no error';
} catch (e) {
  out.completionUnknown = kind(e);
}
try {
  await client.chat.completions.create({ model: 'gpt-4', messages: [{ role: 'user', content: 'hi' }] });
  out.chatUnknown = 'no error';
} catch (e) {
  out.chatUnknown = kind(e);
}
// vLLM's extra fields and a token-id prompt, as a vLLM client sends them.
const r = await client.completions.create({
  model, prompt: JSON.parse(ids), max_tokens: 8, temperature: 0,
  ignore_eos: true, min_tokens: 8, stop_token_ids: [], include_stop_str_in_output: false,
});
out.text = r.choices[0].text;
out.finish = r.choices[0].finish_reason;
out.promptTokens = r.usage.prompt_tokens;
out.completionTokens = r.usage.completion_tokens;
console.log(JSON.stringify(out));
