//go:build oracle

package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// anthropicJS is the official Anthropic TypeScript SDK the check runs.
const anthropicJS = "@anthropic-ai/sdk@1.17.0"

// The official Anthropic TypeScript SDK against wspec serve's Messages API (x-api-key, with
// n-gram speculation): messages.create and messages.stream (the same text), a forced tool_use
// streamed, its tool_result sent back, countTokens, and a bad request raised as the SDK's
// BadRequestError with Anthropic's error type.
func TestAnthropicJSSDK(t *testing.T) {
	dir := sdkDir(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "sdk", "package.json")); err != nil {
		if out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", anthropicJS).CombinedOutput(); err != nil {
			msg := "npm install " + anthropicJS + ": " + err.Error() + ": " + string(out)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED, NOT PASSED: the SDK check needs npm's registry: " + msg)
		}
	}
	script, err := os.ReadFile("testdata/anthropic.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "anthropic.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	f := toolServer(t)
	out, err := exec.Command("node", filepath.Join(dir, "anthropic.mjs"), f.ts.URL, testKey, model).Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	t.Logf("%s", out)
	var got struct {
		Text, Stop, Streamed, FinalText, FollowStop, BadRequest string
		Usage                                                   struct{ InputTokens, OutputTokens int } `json:"usage"`
		ToolUse                                                 struct {
			Stop, Name string
			Input      map[string]any
		}
		Count int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Text == "" || got.Stop != "max_tokens" || got.Streamed != got.Text || got.FinalText != got.Text {
		t.Errorf("text: %+v", got)
	}
	if got.ToolUse.Stop != "tool_use" || got.ToolUse.Name != "get_weather" || got.ToolUse.Input == nil || got.FollowStop == "" {
		t.Errorf("tool_use: %+v, follow-up %q", got.ToolUse, got.FollowStop)
	}
	if got.Count == 0 || !strings.HasPrefix(got.BadRequest, "BadRequestError 400 invalid_request_error") {
		t.Errorf("count %d, bad request %q", got.Count, got.BadRequest)
	}
}
