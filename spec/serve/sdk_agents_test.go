//go:build oracle

package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights/home"
)

// agentsJS is the OpenAI Agents SDK for JavaScript the check runs, with the zod it needs.
var agentsJS = []string{"@openai/agents@0.20.0", "zod@4"}

// The OpenAI Agents SDK for JavaScript with its default model (the Responses API) against
// wspec serve: an agent without tools answers, and an agent with a function tool (forced on
// its first turn) calls it, gets its output and answers.
func TestOpenAIJSSDKAgents(t *testing.T) {
	dir := filepath.Join(home.Default(), "agents-js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@openai", "agents", "package.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("npm", append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund"}, agentsJS...)...).CombinedOutput(); err != nil {
			msg := "npm install " + agentsJS[0] + ": " + err.Error() + ": " + string(out)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED, NOT PASSED: the SDK check needs npm's registry: " + msg)
		}
	}
	script, err := os.ReadFile("testdata/agents.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	f := toolServer(t)
	out, err := exec.Command("node", filepath.Join(dir, "agents.mjs"), f.ts.URL+"/v1", testKey, model).Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	t.Logf("%s", out)
	var got map[string]struct {
		Output, Error string
		Items         []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if p := got["plain"]; p.Error != "" || p.Output == "" || !slices.Contains(p.Items, "message_output_item") {
		t.Errorf("plain agent: %+v", p)
	}
	if w := got["tool"]; w.Error != "" || w.Output == "" || !slices.Equal(w.Items, []string{"tool_call_item", "tool_call_output_item", "message_output_item"}) {
		t.Errorf("agent with a tool: %+v", w)
	}
}
