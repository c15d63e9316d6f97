// Package serve is wspec's OpenAI-compatible HTTP server (`wspec serve`): /v1/completions,
// /v1/chat/completions, /v1/responses and Anthropic's /v1/messages (streamed as server-sent
// events or whole), /v1/models, /health and /metrics, on one engine whose scheduler batches the requests (continuous batching) and
// speculates for them. Every request a client can send is validated before it reaches the
// engine; what is wrong with it comes back as a 400 with OpenAI's error object. The guide is
// docs/serving.md; this is the reference.
//
// # Flags
//
// Named as vLLM names them: --host (default 127.0.0.1; a non-loopback host without a key
// prints a warning), --port (8000; 0 picks a free one, printed when ready), --api-key (or
// $WSPEC_API_KEY: "Authorization: Bearer KEY" is then required on /v1/*; /health, /metrics,
// /version, /tokenize and /detokenize stay open), --served-model-name (default: the model
// folder's name), --chat-template (a file or the template itself), --shutdown-timeout (30, in
// seconds, or a duration), --num-gpu-blocks-override (KV pages of 16 tokens),
// --enable-prefix-caching (the default) or --no-enable-prefix-caching, and generate's --model
// (or the model as the first argument), --adapter, --dtype and speculative flags. vLLM's
// --max-num-seqs, --max-num-batched-tokens, --seed, --generation-config, --max-logprobs,
// --enable-auto-tool-choice, --tool-call-parser and --reasoning-parser are applied; its harmless
// flags are accepted with a note (docs/serving.md lists them).
// --max-request-bytes (2 MiB) bounds a request body, --request-body-timeout (30s) the time it
// may take to arrive (a slower one gets a 408), --max-connections (512) the open connections
// (when all are taken, the longest idle keep-alive one is closed to make room; with none idle,
// a new one gets a 503 and is closed). --allowed-origins names the web origins that may call
// the server (CORS: a comma list or vLLM's JSON list, "*" for any; none by default, unlike
// vLLM's "*", so a page elsewhere cannot read what a local server answers; a preflight OPTIONS
// is answered without the API key, from another origin with a 400). Every request gets an
// access-log line on stderr (client, request line, status, bytes, seconds, request id;
// --disable-access-log turns it off), and every reply an X-Request-Id: the client's, or a new
// random one.
//
// # Endpoints
//
//   - POST /v1/completions and POST /v1/chat/completions: whole, or with "stream": true as
//     server-sent events "data: {...}" ending in "data: [DONE]", with a last usage event when
//     stream_options.include_usage is set. A streamed chat sends each choice's role first, then
//     its text, then a chunk with its finish_reason (and, when asked, its logprobs).
//   - POST /v1/responses, GET and DELETE /v1/responses/{id}: OpenAI's Responses API
//     (responses.go), a chat request underneath; stored responses live in memory.
//   - POST /v1/messages and POST /v1/messages/count_tokens: Anthropic's Messages API
//     (messages.go), a chat request underneath, with Anthropic's errors and events.
//   - GET /v1/models and GET /v1/models/{id}: the card names the drafter
//     (speculative.method, num_speculative_tokens). A model the server does not serve is a
//     404 not_found_error, as OpenAI and vLLM answer.
//   - POST /tokenize and POST /detokenize: vLLM's (prompt, add_special_tokens,
//     return_token_strs; tokens).
//   - GET /health (200, or 503 while draining), GET /version, GET /metrics.
//
// finish_reason is "stop" (EOS or a stop string), "length" (max_tokens, or the end of the
// model's context) or, for a chat reply with tool calls, "tool_calls"; a request whose client
// went away gets no reply.
//
// # Request fields
//
// model (absent means the served one); prompt (a string, a list of strings, a list of token
// ids or a list of them); messages (roles system, developer, user, assistant, tool; content a
// string or text parts; an assistant's tool_calls and reasoning_content, a tool's
// tool_call_id); max_tokens / max_completion_tokens (the latter wins; completions default to
// 16, chat to the rest of the context; prompt + max_tokens must fit the context); the sampling
// parameters of engine.SamplingParams (temperature, default 1, top_p, top_k, min_p,
// presence_penalty, frequency_penalty, repetition_penalty; `wspec generate --help` lists their
// ranges; unset, those a model's generation_config.json may set come from it:
// Config.Defaults); seed (absent: a random one, or the next
// from --seed); n (1..16; the choices run concurrently, choice
// i with its own random stream); stop (a string or up to 16, each 1..256 bytes, matched across
// token boundaries and cut from the text); logprobs (chat: a boolean with top_logprobs 0..20;
// completions: 0..20); prompt scoring (score.go): completions' echo, vLLM's prompt_logprobs
// (0..20, not streamed), max_tokens 0 with either; logit_bias (up to 300 token ids,
// -100..100); vLLM's ignore_eos, stop_token_ids,
// truncate_prompt_tokens (keep the prompt's last n tokens, -1 as many as fit), min_tokens,
// include_stop_str_in_output, skip_special_tokens and spaces_between_special_tokens (both
// default true); stream, stream_options. All of them hold with speculation on: the rejection
// sampler applies every logits processor to the target's distribution of every verified row.
// Chat's tools, tool_choice and parallel_tool_calls (tools.go: "required" and named choices
// are forced through structured outputs; "auto" needs Config.ToolCallParser and
// EnableAutoToolChoice), chat_template_kwargs, reasoning_effort, documents,
// add_generation_prompt and continue_final_message (passed to the chat template). user, and
// chat's store, metadata, prompt_cache_key, safety_identifier and service_tier are accepted and
// ignored; suffix, best_of other than n and content parts other than text are refused;
// any other top-level field is ignored with a line to Config.Warnings, as vLLM ignores it.
//
// Structured outputs (structured.go; docs/serving.md): response_format (json_object,
// json_schema), structured_outputs (json, regex, choice, grammar, json_object) and the guided_*
// aliases, at most one per request, on chat and completions; also under speculation.
//
// Per-request speculation, wspec's extension field:
// "speculative": {"num_speculative_tokens": k, "fixed": false}. k 0 turns speculation off for
// the request; 1..15 drafts at most k tokens a step (never more than the server's -k); absent
// keeps the server's. By default the scheduler drafts only as far as drafts pay under the load
// of the moment; "fixed": true drafts k every step.
//
// # Validation and errors
//
// The server checks what belongs to the wire (JSON types, the model's name, n, stream_options
// without stream, logit-bias keys that are integers); every value is then validated once, by
// the engine (engine.GenerateOptions.Validate through Engine.NewRequest, which also tokenizes
// the prompt, once), whose errors name their parameter (*engine.InvalidError,
// *engine.PromptTooLongError) and are mapped to OpenAI's error object by type:
// {"error": {"message", "type", "param", "code"}}. 400 invalid_request_error for every
// invalid request (bad JSON or UTF-8, mistyped fields, values out of range, a
// prompt or max_tokens beyond the context: context_length_exceeded, an unknown model), 401
// authentication_error for a missing or wrong key, 413 for a body over the limit, 404 and 405
// for unknown routes and methods, 503 while draining. An error after a stream has started
// comes as a "data: {"error": ...}" event, then [DONE].
//
// # Chat template
//
// From --chat-template, else the model's tokenizer_config.json chat_template (a string, or
// the list entry named "default"), else chat_template.jinja, rendered as Hugging Face's
// apply_chat_template renders it (weights/chat: trim_blocks and lstrip_blocks, transformers'
// tojson, bos_token, eos_token, raise_exception, strftime_now, tools, documents and the
// request's template variables; templates cannot include files). A BOS the
// template writes first is dropped, since the tokenizer adds one. A model without a template
// (stories15M) gets system and developer messages as paragraphs, every other message as
// "Role: content" on its own line, then "Assistant:".
//
// # Shutdown
//
// On SIGTERM or SIGINT the server drains: it still accepts connections, but every new request
// and /health get a 503 (so a load balancer sees the drain rather than refused connections),
// bodies still arriving are cut off, running requests may finish within --shutdown-timeout,
// then are cancelled (each ends within one engine step, its KV pages freed; a streamed one
// gets an error event, a whole one a 503); then it closes its port and exits 0.
//
// # Metrics
//
// /metrics (Prometheus text format) keeps vLLM's names, vllm: prefix included, and its labels
// (model_name, engine="0"), so vLLM's Grafana dashboards and alerts work on wspec:
// vllm:num_requests_running, vllm:num_requests_waiting (sequences: each choice is one),
// vllm:kv_cache_usage_perc (KV pages in use, 0..1), vllm:prompt_tokens_total,
// vllm:generation_tokens_total, vllm:num_preemptions_total,
// vllm:request_success_total{finished_reason}, vllm:time_to_first_token_seconds,
// vllm:inter_token_latency_seconds (one sample per step that delivered text to a request),
// vllm:request_time_per_output_token_seconds, vllm:e2e_request_latency_seconds,
// vllm:request_queue_time_seconds, vllm:request_prefill_time_seconds,
// vllm:request_decode_time_seconds, vllm:request_inference_time_seconds,
// vllm:request_prompt_tokens, vllm:request_generation_tokens, vllm:request_params_n,
// vllm:request_params_max_tokens, vllm:iteration_tokens_total, vllm:cache_config_info,
// vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total, and with speculation
// vllm:spec_decode_num_drafts_total, vllm:spec_decode_num_draft_tokens_total,
// vllm:spec_decode_num_accepted_tokens_total and
// vllm:spec_decode_num_accepted_tokens_per_pos_total{position}. The draft and accepted token
// counters move with every engine step; num_drafts (steps of a sequence that drafted) is added
// when each request ends.
package serve
