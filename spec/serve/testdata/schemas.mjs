// schemas.mjs BASE_URL API_KEY MODEL: schemas as applications write them, in zod 3 and zod 4,
// turned into JSON Schema by the official OpenAI JavaScript SDK's helpers (zodResponseFormat,
// zodFunction) and served by wspec with response_format and as a tool's parameters with
// tool_choice "required" and named. Prints a JSON list: for each schema, way and seed, whether
// the SDK parsed the reply and zod accepted it, or the error.
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z as z3 } from 'zod/v3';
import { z as z4 } from 'zod/v4';

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });

// The same models in both zods: nested objects, optional (nullable) fields, enums, unions
// (a discriminated one), formats, integers (zod 4's int() writes bounds of +-(2^53 - 1)),
// bounded arrays and strings (the default model's context is 256 tokens).
function models(z) {
  const Item = z.object({ sku: z.string().max(6), qty: z.number().int().min(1).max(9) });
  return {
    order: z.object({
      id: z.number().int(),
      customer: z.object({ name: z.string().max(10), vip: z.boolean() }),
      items: z.array(Item).min(1).max(2),
      note: z.string().max(8).nullable(),
    }),
    shape: z.object({
      color: z.enum(['red', 'green', 'blue']),
      shape: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('circle'), r: z.number() }),
        z.object({ kind: z.literal('square'), side: z.number().int() }),
      ]),
      label: z.union([z.string().max(6), z.number().int()]),
    }),
    stamp: z.object({ id: z.string().uuid(), when: z.string().datetime() }),
    contact: z.object({ mail: z.string().email() }),
  };
}

const out = [];
const ask = (what) => [{ role: 'user', content: `Write a ${what} as JSON.` }];
for (const [zname, z] of [['zod3', z3], ['zod4', z4]]) {
  for (const [name, schema] of Object.entries(models(z))) {
    const tools = [zodFunction({ name, parameters: schema, description: `Record a ${name}` })];
    const ways = [
      ['response_format', { response_format: zodResponseFormat(schema, name) }],
      ['required', { tools, tool_choice: 'required', parallel_tool_calls: false }],
      ['named', { tools, tool_choice: { type: 'function', function: { name } }, parallel_tool_calls: false }],
    ];
    for (const [way, extra] of ways) {
      for (const seed of [1]) {
        const r = { lib: 'zod', zod: zname.slice(3), schema: name, way, seed };
        try {
          const c = await client.chat.completions.parse({ model, messages: ask(name), temperature: 1, seed, max_tokens: 200, ...extra });
          const m = c.choices[0].message;
          const value = way === 'response_format' ? m.parsed : m.tool_calls?.[0]?.function?.parsed_arguments;
          r.finish = c.choices[0].finish_reason;
          r.valid = schema.safeParse(value).success;
          r.text = way === 'response_format' ? m.content : m.tool_calls?.[0]?.function?.arguments;
        } catch (e) {
          r.error = `${e?.constructor?.name}: ${e?.message}`;
        }
        out.push(r);
      }
    }
  }
}
console.log(JSON.stringify(out));
