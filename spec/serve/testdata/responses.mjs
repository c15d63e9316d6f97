// responses.mjs: the official OpenAI JavaScript SDK's Responses API against wspec serve.
// Usage: node responses.mjs BASE_URL API_KEY MODEL. Prints one JSON object of what it saw.
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({baseURL, apiKey, maxRetries: 0});
const out = {};

// text, whole
const r = await client.responses.create({model, input: "Once upon a time", instructions: "Tell a story.", max_output_tokens: 16, temperature: 0});
out.text = r.output_text;
out.status = r.status;
out.outputTokens = r.usage.output_tokens;

// text, streamed through the SDK's stream helper
const stream = client.responses.stream({model, input: "Once upon a time", instructions: "Tell a story.", max_output_tokens: 16, temperature: 0});
let streamed = "";
const types = [];
stream.on("response.output_text.delta", (e) => { streamed += e.delta; });
for await (const e of stream) types.push(e.type);
const final = await stream.finalResponse();
out.streamed = streamed;
out.finalText = final.output_text;
out.types = types;

// a forced function call, whole and streamed, then its output sent back
const tools = [{type: "function", name: "get_weather", description: "The weather in a city", strict: true,
  parameters: {type: "object", properties: {city: {type: "string", maxLength: 20}}, required: ["city"], additionalProperties: false}}];
const call = await client.responses.create({model, input: "What is the weather in Paris?", tools, tool_choice: {type: "function", name: "get_weather"}, max_output_tokens: 200, temperature: 0});
const fc = call.output.find((o) => o.type === "function_call");
out.call = {name: fc?.name, args: fc?.arguments, valid: (() => { try { JSON.parse(fc.arguments); return true; } catch { return false; } })()};
const cs = client.responses.stream({model, input: "What is the weather in Paris?", tools, tool_choice: {type: "function", name: "get_weather"}, max_output_tokens: 200, temperature: 0});
let argDeltas = "";
cs.on("response.function_call_arguments.delta", (e) => { argDeltas += e.delta; });
const cfinal = await cs.finalResponse();
out.streamedCall = {args: argDeltas, final: cfinal.output.find((o) => o.type === "function_call")?.arguments};
const follow = await client.responses.create({model, previous_response_id: call.id, tools, max_output_tokens: 8,
  input: [{type: "function_call_output", call_id: fc.call_id, output: JSON.stringify({temp: 21})}]});
out.followStatus = follow.status;

// text.format json_schema, and previous_response_id
const js = await client.responses.create({model, input: "Tell me about a cat.", max_output_tokens: 120, temperature: 0,
  text: {format: {type: "json_schema", name: "pet", strict: true, schema: {type: "object", properties: {name: {type: "string", maxLength: 12}},
    required: ["name"], additionalProperties: false}}}});
out.json = js.output_text;
const again = await client.responses.retrieve(js.id);
out.retrieved = again.id === js.id && again.output_text === js.output_text;

// errors as the SDK raises them
try {
  await client.responses.create({model, input: "hi", tools: [{type: "web_search"}]});
  out.hostedTool = "no error";
} catch (e) {
  out.hostedTool = `${e.constructor.name} ${e.status}`;
}
process.stdout.write(JSON.stringify(out));
