// sdk.mjs BASE_URL API_KEY MODEL PROMPT_IDS_JSON: the official OpenAI JavaScript SDK against
// wspec serve. Prints one JSON object of what it saw.
import OpenAI, { NotFoundError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

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
// Structured outputs as the SDK's parse() helper asks for them, from a zod schema: 20 seeds at
// temperature 1. parse() throws when a choice is cut by the length limit. The prompt shows an
// example, as one prompts a small model (the story model otherwise writes stories in the
// strings).
const Person = z.object({ name: z.string(), age: z.number().int(), ok: z.boolean(), tags: z.array(z.string()).max(3) });
out.parsed = 0;
out.parseErrors = [];
for (let seed = 1; seed <= 20; seed++) {
  try {
    const c = await client.chat.completions.parse({
      model, messages: [{ role: 'user', content: 'Describe a person as JSON, like {"name": "Tom", "age": 3, "ok": true, "tags": ["cat", "ball"]}.' }],
      response_format: zodResponseFormat(Person, 'person'), temperature: 1, seed,
    });
    if (Person.safeParse(c.choices[0].message.parsed).success) out.parsed++;
    else out.parseErrors.push(`seed ${seed}: ${c.choices[0].message.content}`);
  } catch (e) {
    out.parseErrors.push(`seed ${seed}: ${kind(e)}: ${e.message}`);
  }
}
const jo = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'JSON, please.' }], response_format: { type: 'json_object' }, temperature: 0,
});
out.jsonObject = jo.choices[0].message.content;
out.jsonObjectFinish = jo.choices[0].finish_reason;
const ch = await client.completions.create({ model, prompt: 'The cat was', max_tokens: 8, structured_outputs: { choice: ['happy', 'sad'] } });
out.choice = ch.choices[0].text;
const rx = await client.completions.create({ model, prompt: 'The cat was', max_tokens: 16, structured_outputs: { regex: '[a-z]{3,8} [0-9]{2}' } });
out.regex = rx.choices[0].text;
console.log(JSON.stringify(out));
