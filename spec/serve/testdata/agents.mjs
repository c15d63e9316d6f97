// agents.mjs: the OpenAI Agents SDK for JavaScript (@openai/agents) against wspec serve, with
// its default model, the Responses API. Usage: node agents.mjs BASE_URL API_KEY MODEL.
// Prints one JSON object: each run's final output and the model items it saw.
import OpenAI from "openai";
import {Agent, run, tool, setDefaultOpenAIClient, setTracingDisabled} from "@openai/agents";
import {z} from "zod";

const [baseURL, apiKey, model] = process.argv.slice(2);
setDefaultOpenAIClient(new OpenAI({baseURL, apiKey, maxRetries: 0}));
setTracingDisabled(true);
const out = {};

const plain = new Agent({name: "Storyteller", instructions: "Tell a story.", model,
  modelSettings: {temperature: 0, maxTokens: 200, providerData: {stop: ["."]}}});
try {
  const r1 = await run(plain, "Once upon a time");
  out.plain = {output: r1.finalOutput, items: r1.newItems.map((i) => i.type)};
} catch (e) {
  out.plain = {error: String(e)};
}

const getWeather = tool({name: "get_weather", description: "The weather in a city",
  parameters: z.object({city: z.string().max(20)}), execute: async ({city}) => `21 degrees in ${city}`});
const withTool = new Agent({name: "Weather", instructions: "Answer with the weather.", model, tools: [getWeather],
  modelSettings: {toolChoice: "get_weather", maxTokens: 200, temperature: 0, providerData: {stop: ["."]}}, resetToolChoice: true});
try {
  const r2 = await run(withTool, "What is the weather in Paris?", {maxTurns: 3});
  out.tool = {output: r2.finalOutput, items: r2.newItems.map((i) => i.type)};
} catch (e) {
  out.tool = {error: String(e)};
}
process.stdout.write(JSON.stringify(out));
