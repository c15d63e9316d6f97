// anthropic.mjs: the official Anthropic TypeScript SDK against wspec serve's Messages API.
// Usage: node anthropic.mjs BASE_URL API_KEY MODEL. Prints one JSON object of what it saw.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new Anthropic({baseURL, apiKey, maxRetries: 0});
const out = {};
const text = (m) => m.content.filter((b) => b.type === "text").map((b) => b.text).join("");

const m = await client.messages.create({model, max_tokens: 16, temperature: 0, system: "You tell stories.",
  messages: [{role: "user", content: "Once upon a time"}]});
out.text = text(m);
out.stop = m.stop_reason;
out.usage = m.usage;

const stream = client.messages.stream({model, max_tokens: 16, temperature: 0, system: "You tell stories.",
  messages: [{role: "user", content: "Once upon a time"}]});
let streamed = "";
stream.on("text", (t) => { streamed += t; });
const final = await stream.finalMessage();
out.streamed = streamed;
out.finalText = text(final);

const tools = [{name: "get_weather", description: "The weather in a city",
  input_schema: {type: "object", properties: {city: {type: "string", maxLength: 20}}, required: ["city"]}}];
const ts = client.messages.stream({model, max_tokens: 200, temperature: 0, tools, tool_choice: {type: "tool", name: "get_weather"},
  messages: [{role: "user", content: "What is the weather in Paris?"}]});
const call = await ts.finalMessage();
const use = call.content.find((b) => b.type === "tool_use");
out.toolUse = {stop: call.stop_reason, name: use?.name, input: use?.input};
const follow = await client.messages.create({model, max_tokens: 8, tools, messages: [
  {role: "user", content: "What is the weather in Paris?"}, {role: "assistant", content: call.content},
  {role: "user", content: [{type: "tool_result", tool_use_id: use.id, content: "21 degrees"}]}]});
out.followStop = follow.stop_reason;

const count = await client.messages.countTokens({model, system: "You tell stories.", messages: [{role: "user", content: "Once upon a time"}]});
out.count = count.input_tokens;

try {
  await client.messages.create({model, max_tokens: 8, messages: [{role: "robot", content: "hi"}]});
  out.badRequest = "no error";
} catch (e) {
  out.badRequest = `${e.constructor.name} ${e.status} ${e.error?.error?.type}`;
}
process.stdout.write(JSON.stringify(out));
