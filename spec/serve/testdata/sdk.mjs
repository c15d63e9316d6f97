// sdk.mjs BASE_URL API_KEY MODEL PROMPT_IDS_JSON: the official OpenAI JavaScript SDK against
// wspec serve. Prints one JSON object of what it saw.
import OpenAI, { NotFoundError } from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
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
// Structured outputs as the SDK's parse() helper asks for them, from zod schemas: 20 seeds at
// temperature 1 each. parse() throws when a choice is cut by the length limit. The prompt shows
// an example, as one prompts a small model. Person bounds its strings' lengths (zod's max()),
// as an application whose fields are names and tags does; FreePerson leaves them free, and the
// story model, writing stories in them, can run past its 256-token context (counted, not
// failed).
const Person = z.object({ name: z.string().max(24), age: z.number().int(), ok: z.boolean(), tags: z.array(z.string().max(16)).max(3) });
const FreePerson = z.object({ name: z.string(), age: z.number().int(), ok: z.boolean(), tags: z.array(z.string()).max(3) });
const parseRuns = async (schema) => {
  const r = { parsed: 0, errors: [] };
  for (let seed = 1; seed <= 20; seed++) {
    try {
      const c = await client.chat.completions.parse({
        model, messages: [{ role: 'user', content: 'Describe a person as JSON, like {"name": "Tom", "age": 3, "ok": true, "tags": ["cat", "ball"]}.' }],
        response_format: zodResponseFormat(schema, 'person'), temperature: 1, seed,
      });
      if (schema.safeParse(c.choices[0].message.parsed).success) r.parsed++;
      else r.errors.push(`seed ${seed}: ${c.choices[0].message.content}`);
    } catch (e) {
      r.errors.push(`seed ${seed}: ${kind(e)}: ${e.message}`);
    }
  }
  return r;
};
const bounded = await parseRuns(Person);
out.parsed = bounded.parsed;
out.parseErrors = bounded.errors;
const free = await parseRuns(FreePerson);
out.freeParsed = free.parsed;
out.freeParseErrors = free.errors;
const jo = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'JSON, please.' }], response_format: { type: 'json_object' }, temperature: 0,
});
out.jsonObject = jo.choices[0].message.content;
out.jsonObjectFinish = jo.choices[0].finish_reason;
const ch = await client.completions.create({ model, prompt: 'The cat was', max_tokens: 8, structured_outputs: { choice: ['happy', 'sad'] } });
out.choice = ch.choices[0].text;
const rx = await client.completions.create({ model, prompt: 'The cat was', max_tokens: 16, structured_outputs: { regex: '[a-z]{3,8} [0-9]{2}' } });
out.regex = rx.choices[0].text;
// Tool calls: tool_choice "required" and a named function, whole (parse() reads the
// arguments with the tool's zod schema) and streamed (the SDK's stream helper joins the
// deltas); then a history with the assistant's calls and the tool's results.
const Weather = z.object({ city: z.enum(['Paris', 'Rome', 'Oslo']), days: z.number().int().min(1).max(7) });
const tools = [zodFunction({ name: 'get_weather', parameters: Weather, description: 'The weather in a city' })];
const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
out.tools = [];
for (const [name, toolChoice] of [['required', 'required'], ['named', { type: 'function', function: { name: 'get_weather' } }]]) {
  for (const seed of [1, 2, 3]) {
    const c = await client.chat.completions.parse({ model, messages: ask, tools, tool_choice: toolChoice, parallel_tool_calls: false, temperature: 1, seed, max_tokens: 200 });
    const m = c.choices[0].message;
    const call = m.tool_calls?.[0];
    out.tools.push({ name, seed, streamed: false, finish: c.choices[0].finish_reason, calls: m.tool_calls?.length ?? 0,
      id: call?.id ?? '', valid: Weather.safeParse(call?.function?.parsed_arguments).success, args: call?.function?.arguments ?? m.content });
  }
  const stream = client.chat.completions.stream({ model, messages: ask, tools, tool_choice: toolChoice, parallel_tool_calls: false, temperature: 1, seed: 7, max_tokens: 200 });
  const c = await stream.finalChatCompletion();
  const m = c.choices[0].message;
  const call = m.tool_calls?.[0];
  out.tools.push({ name, seed: 7, streamed: true, finish: c.choices[0].finish_reason, calls: m.tool_calls?.length ?? 0,
    id: call?.id ?? '', valid: Weather.safeParse(call?.function?.parsed_arguments).success, args: call?.function?.arguments ?? m.content });
}
const history = await client.chat.completions.create({
  model, tools, tool_choice: 'none', max_tokens: 8, messages: [...ask,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","days":1}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21 C' }],
});
out.historyFinish = history.choices[0].finish_reason;
console.log(JSON.stringify(out));
