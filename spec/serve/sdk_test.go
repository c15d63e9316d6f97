//go:build oracle

package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights/home"
)

// openaiJS is the official OpenAI JavaScript SDK the check runs (the version the issue's
// probe used).
const openaiJS = "openai@6.49.0"

// zodJS is the schema library the SDK's parse() helper takes (zodResponseFormat).
const zodJS = "zod@3"

// The official OpenAI JavaScript SDK raises NotFoundError for a model the server does not
// serve (completions and chat), and serves a completion with vLLM's ignore_eos and min_tokens
// and a prompt of token ids; structured outputs through parse() with a zod schema; tool calls
// forced by tool_choice "required" and a named function, whole and streamed, with arguments
// the tool's zod schema accepts; a history with tool calls and results. (The tag oracle: it installs the SDK from npm's registry, as the
// llama.cpp comparison does; CI runs it in its long tier.)
func TestOpenAIJSSDK(t *testing.T) {
	dir := sdkDir(t)
	script, err := os.ReadFile("testdata/sdk.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sdk.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	f := specServer(t)
	ids := mustJSON(t, f.e.Tokenizer().Encode("Once upon a time", true))
	cmd := exec.Command("node", filepath.Join(dir, "sdk.mjs"), f.ts.URL+"/v1", testKey, model, ids)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var got struct {
		CompletionUnknown, ChatUnknown, Text, Finish string
		PromptTokens, CompletionTokens               int
		Parsed, FreeParsed                           int
		ParseErrors, FreeParseErrors                 []string
		JSONObject, JSONObjectFinish, Choice, Regex  string
		Tools                                        []struct {
			Name, Finish, ID, Args string
			Seed, Calls            int
			Streamed, Valid        bool
		}
		HistoryFinish string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%+v", got)
	if got.CompletionUnknown != "NotFoundError" || got.ChatUnknown != "NotFoundError" {
		t.Errorf("an unknown model: completions %s, chat %s; want NotFoundError", got.CompletionUnknown, got.ChatUnknown)
	}
	if got.Text == "" || got.Finish != "length" || got.PromptTokens != 5 || got.CompletionTokens != 8 {
		t.Errorf("the completion with vLLM's fields: %+v", got)
	}
	// Structured outputs through the SDK: parse() with a zod schema whose strings have a
	// length bound returns an object that validates every time.
	if got.Parsed != 20 || len(got.ParseErrors) > 0 {
		t.Errorf("parse() with a zod schema: %d of 20 parsed and validated; %q", got.Parsed, got.ParseErrors)
	}
	// With free strings, parse() fails a choice the length limit cut (the story model's
	// strings can run to the end of its 256-token context): those are counted, and every other
	// must parse and validate.
	for _, e := range got.FreeParseErrors {
		if !strings.Contains(e, "LengthFinishReasonError") {
			t.Errorf("parse() with free strings: %s", e)
		}
	}
	t.Logf("parse() with a zod schema: %d of 20 parsed and validated; with free strings %d of 20, %d cut by the length limit",
		got.Parsed, got.FreeParsed, len(got.FreeParseErrors))
	if got.FreeParsed == 0 {
		t.Errorf("parse() with free strings: none of 20 parsed")
	}
	var obj map[string]any
	if got.JSONObjectFinish == "stop" && json.Unmarshal([]byte(got.JSONObject), &obj) != nil {
		t.Errorf("json_object: %q", got.JSONObject)
	}
	if got.Choice != "happy" && got.Choice != "sad" {
		t.Errorf("choice: %q", got.Choice)
	}
	if !regexp.MustCompile(`^[a-z]{3,8} [0-9]{2}$`).MatchString(got.Regex) {
		t.Errorf("regex: %q", got.Regex)
	}
	// Forced tool calls: each a call whose arguments the tool's zod schema accepts.
	if len(got.Tools) != 8 {
		t.Errorf("tool calls: %d results, want 8", len(got.Tools))
	}
	for _, c := range got.Tools {
		if c.Finish != "tool_calls" || c.Calls != 1 || !c.Valid || c.ID == "" {
			t.Errorf("tool_choice %s (seed %d, streamed %v): finish %s, %d calls, valid %v, id %q: %s", c.Name, c.Seed, c.Streamed, c.Finish, c.Calls, c.Valid, c.ID, c.Args)
		}
	}
	if got.HistoryFinish == "" {
		t.Error("a history with tool calls and results got no reply")
	}
}

// sdkDir installs the SDK and zod (once, into the wspec home) and returns their folder.
func sdkDir(t *testing.T) string {
	dir := filepath.Join(home.Default(), "sdk-js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "zod", "package.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", openaiJS, zodJS).CombinedOutput(); err != nil {
			msg := fmt.Sprintf("npm install %s failed (%v): %s", openaiJS, err, out)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED, NOT PASSED: the SDK check needs npm's registry: " + msg)
		}
	}
	return dir
}
