//go:build oracle

package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The official OpenAI JavaScript SDK's Responses API against wspec serve (with n-gram
// speculation): responses.create and the responses.stream helper (text, the same whole and
// streamed), a forced function call whole and streamed, its output sent back with
// previous_response_id, text.format json_schema, retrieve, and a hosted tool's 400 raised as
// the SDK's BadRequestError.
func TestOpenAIJSSDKResponses(t *testing.T) {
	dir := sdkDir(t)
	script, err := os.ReadFile("testdata/responses.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "responses.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	f := toolServer(t)
	out, err := exec.Command("node", filepath.Join(dir, "responses.mjs"), f.ts.URL+"/v1", testKey, model).Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var got struct {
		Text, Status, Streamed, FinalText, JSON, HostedTool, FollowStatus string
		OutputTokens                                                      int
		Types                                                             []string
		Call                                                              struct {
			Name, Args string
			Valid      bool
		}
		StreamedCall struct{ Args, Final string }
		Retrieved    bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%s", out)
	if got.Text == "" || got.Status != "incomplete" || got.OutputTokens != 16 || got.Streamed != got.Text || got.FinalText != got.Text {
		t.Errorf("text: %+v", got)
	}
	if len(got.Types) == 0 || got.Types[0] != "response.created" || !slices.Contains(got.Types, "response.output_text.done") || got.Types[len(got.Types)-1] != "response.incomplete" {
		t.Errorf("events: %v", got.Types)
	}
	if got.Call.Name != "get_weather" || !got.Call.Valid || got.StreamedCall.Args == "" || got.StreamedCall.Args != got.StreamedCall.Final {
		t.Errorf("call: %+v %+v", got.Call, got.StreamedCall)
	}
	var pet struct{ Name string }
	if err := json.Unmarshal([]byte(got.JSON), &pet); err != nil || !got.Retrieved || got.FollowStatus == "" {
		t.Errorf("json_schema %q (%v), retrieved %v, follow-up %q", got.JSON, err, got.Retrieved, got.FollowStatus)
	}
	if !strings.HasPrefix(got.HostedTool, "BadRequestError 400") {
		t.Errorf("a hosted tool: %s", got.HostedTool)
	}
}
