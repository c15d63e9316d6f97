package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/wspec/wspec/spec/grammar"
)

// The request and reply bodies of the OpenAI API as wspec serves it. Optional request fields
// are pointers: absent and null both mean the default. A top-level field not listed here is
// ignored with a logged warning, as vLLM does (decode.go); a listed one of the wrong type is
// a 400.

// samplingFields are the generation settings chat and completions requests share.
type samplingFields struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	N             *int               `json:"n"`
	Stream        bool               `json:"stream"`
	StreamOptions *streamOptions     `json:"stream_options"`
	Stop          *stopField         `json:"stop"`
	Seed          *int64             `json:"seed"`
	LogitBias     map[string]float64 `json:"logit_bias"`
	User          string             `json:"user"` // accepted and ignored, as vLLM does
	// The scalar sampling parameters, OpenAI's and vLLM's (engine.SamplingParams), read from
	// the body by name (params.go).
	params samplingParams
	// vLLM's extensions.
	IgnoreEOS    bool  `json:"ignore_eos"`
	StopTokenIDs []int `json:"stop_token_ids"`
	MinTokens    int   `json:"min_tokens"`
	// IncludeStopStrInOutput keeps the stop string that ended a choice in its text.
	IncludeStopStrInOutput bool `json:"include_stop_str_in_output"`
	// SkipSpecialTokens (default true) leaves special tokens out of the text;
	// SpacesBetweenSpecialTokens (default true) sets them apart by spaces when they are in.
	SkipSpecialTokens          *bool `json:"skip_special_tokens"`
	SpacesBetweenSpecialTokens *bool `json:"spaces_between_special_tokens"`
	// TruncatePromptTokens keeps the prompt's last n tokens (-1: as many as fit).
	TruncatePromptTokens int `json:"truncate_prompt_tokens"`
	// PromptLogprobs scores the prompt: each token's logprob and rank, with that many of the
	// likeliest tokens at its position (score.go).
	PromptLogprobs *int `json:"prompt_logprobs"`
	// echo is completions' echo, set by its handler: with it (or prompt_logprobs) max_tokens
	// may be 0, to score the prompt alone.
	echo bool
	// wspec's extension: per-request speculation.
	Speculative *speculativeField `json:"speculative"`
	// Structured outputs (structured.go): OpenAI's response_format, vLLM's structured_outputs
	// and its older guided_* fields; at most one of them.
	ResponseFormat    *responseFormat    `json:"response_format"`
	StructuredOutputs *structuredOutputs `json:"structured_outputs"`
	GuidedJSON        json.RawMessage    `json:"guided_json"`
	GuidedRegex       *string            `json:"guided_regex"`
	GuidedChoice      []string           `json:"guided_choice"`
	GuidedGrammar     *string            `json:"guided_grammar"`
	// vLLM's knobs of its grammar backends: accepted and ignored (one engine here).
	GuidedDecodingBackend   json.RawMessage `json:"guided_decoding_backend"`
	GuidedWhitespacePattern json.RawMessage `json:"guided_whitespace_pattern"`
}

func (f *samplingFields) samplingParams() *samplingParams { return &f.params }

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
	// OpenAI's padding of stream events against length side channels: accepted, none is sent
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

// speculativeField is the request's extension field "speculative": num_speculative_tokens
// 0 turns speculation off for the request, k in 1..15 drafts at most k tokens a step (at most
// the server's k); fixed drafts exactly that many every step instead of as far as they pay.
type speculativeField struct {
	NumSpeculativeTokens *int `json:"num_speculative_tokens"`
	Fixed                bool `json:"fixed"`
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	samplingFields
	Prompt   promptField `json:"prompt"`
	Logprobs *int        `json:"logprobs"`
	Echo     bool        `json:"echo"`
	Suffix   *string     `json:"suffix"`  // only empty
	BestOf   *int        `json:"best_of"` // only n (or 1)
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	samplingFields
	Messages            []chatMessage `json:"messages"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Logprobs            bool          `json:"logprobs"`
	TopLogprobs         *int          `json:"top_logprobs"`
	// Tools (tools.go): the functions offered, which one the reply must call (none, auto,
	// required, or a named function), and whether it may call several.
	Tools             []toolParam     `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	// The chat template's inputs besides the messages: vLLM's chat_template_kwargs (extra
	// variables, such as Qwen3's enable_thinking), reasoning_effort (passed as a variable),
	// documents, add_generation_prompt (default true) and continue_final_message.
	ChatTemplateKwargs   map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort      *string                    `json:"reasoning_effort"`
	Documents            json.RawMessage            `json:"documents"`
	AddGenerationPrompt  *bool                      `json:"add_generation_prompt"`
	ContinueFinalMessage bool                       `json:"continue_final_message"`
	// OpenAI fields that change nothing in the output: accepted and ignored.
	Store            json.RawMessage `json:"store"`
	Metadata         json.RawMessage `json:"metadata"`
	PromptCacheKey   json.RawMessage `json:"prompt_cache_key"`
	SafetyIdentifier json.RawMessage `json:"safety_identifier"`
	ServiceTier      json.RawMessage `json:"service_tier"`
}

// toolParam is one entry of tools: a function with its name, description and parameters'
// JSON Schema. raw is the entry as sent, which the chat template gets.
type toolParam struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
	raw json.RawMessage
}

func (t *toolParam) UnmarshalJSON(b []byte) error {
	type plain toolParam
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return invalid("tools", codeInvalidType, "tools: want a list of {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": ...}}")
	}
	t.raw = append(json.RawMessage(nil), b...)
	return nil
}

// responseFormat is OpenAI's response_format: text, json_object, or json_schema with its
// schema.
type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema"`
	// json_object with a schema, as several hosted providers and instructor's JSON_SCHEMA mode
	// send it: the schema is applied
	Schema json.RawMessage `json:"schema"`
}

// The request's nested objects are read strictly: a key they do not know is a 400 naming it,
// since a misspelt constraint would otherwise be served unconstrained without a word.
func (v *responseFormat) UnmarshalJSON(b []byte) error {
	type plain responseFormat
	return strictObject(b, (*plain)(v), "response_format")
}

func (v *jsonSchema) UnmarshalJSON(b []byte) error {
	type plain jsonSchema
	return strictObject(b, (*plain)(v), "response_format.json_schema")
}

func (v *streamOptions) UnmarshalJSON(b []byte) error {
	type plain streamOptions
	return strictObject(b, (*plain)(v), "stream_options")
}

func (v *speculativeField) UnmarshalJSON(b []byte) error {
	type plain speculativeField
	return strictObject(b, (*plain)(v), "speculative")
}

// structuredOutputs is vLLM's structured_outputs, read strictly.
type structuredOutputs struct{ grammar.StructuredOutputs }

func (v *structuredOutputs) UnmarshalJSON(b []byte) error {
	return strictObject(b, &v.StructuredOutputs, "structured_outputs")
}

// strictObject decodes b, a JSON object, into v, refusing a key v does not name.
func strictObject(b []byte, v any, field string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return invalid(field, codeInvalidValue, "%s: unknown field %s", field, strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.As(err, &typ) && typ.Field != "":
		p := field + "." + typ.Field
		return invalid(p, codeInvalidType, "%s: want %s, got %s", p, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.As(err, &typ):
		return invalid(field, codeInvalidType, "%s: want an object, got %s", field, typ.Value)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return invalid(field, codeInvalidValue, "%s: %v", field, err)
}

type jsonSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// chatMessage is one message of a chat; content is a string or an array of text parts.
type chatMessage struct {
	Role    string       `json:"role"`
	Content contentField `json:"content"`
	Name    string       `json:"name"`
	// An assistant message's calls, and the call a tool message answers.
	ToolCalls  []toolCallIn `json:"tool_calls"`
	ToolCallID string       `json:"tool_call_id"`
	// An assistant message's reasoning (vLLM's reasoning_content; "reasoning" is its newer
	// name).
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
}

// toolCallIn is one call of an assistant message in the history.
type toolCallIn struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // a JSON text in a string, or an object
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completionReply is a completion, and (object "text_completion" too) each streamed chunk.
type completionReply struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type completionChoice struct {
	Index          int                        `json:"index"`
	Text           string                     `json:"text"`
	Logprobs       *completionLogprobs        `json:"logprobs"`
	FinishReason   *string                    `json:"finish_reason"`
	PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs,omitempty"`
}

// completionLogprobs are the legacy completions logprobs: parallel lists per token. With
// echo, the prompt's tokens come first, the first of them with null logprobs.
type completionLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
}

// chatReply is a chat completion.
type chatReply struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // chat.completion
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usage        `json:"usage"`
	// PromptLogprobs, with prompt_logprobs, are the (first) prompt's (vLLM's).
	PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatOut       `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type chatOut struct {
	Role             string        `json:"role"`
	Content          *string       `json:"content"`
	ReasoningContent *string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
}

// toolCallOut is a call in a reply; streamed, it is a delta: the first of a call has its
// index, id, type and name, the next ones add to its arguments.
type toolCallOut struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatChunk is one streamed chat event (object chat.completion.chunk).
type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatDelta struct {
	Role             string        `json:"role,omitempty"`
	Content          *string       `json:"content,omitempty"`
	ReasoningContent *string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float32          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// modelList is GET /v1/models.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	MaxModelLen int    `json:"max_model_len"`
	// Speculative is the drafter the server speculates with (wspec's extension; absent when
	// it does not).
	Speculative *modelSpeculative `json:"speculative,omitempty"`
}

type modelSpeculative struct {
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
}
