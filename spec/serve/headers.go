package serve

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime/debug"
)

// modelNotFound is the 404 for a model this server does not serve, as OpenAI and vLLM answer
// it (SDKs raise their NotFoundError on it).
func modelNotFound(id, served string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "not_found_error", Param: "model", Code: codeModelNotFound,
		Message: fmt.Sprintf("The model `%s` does not exist (this server serves %q).", id, served)}
}

// cors lets a web page of any origin call the server, as vLLM's default --allowed-origins '*'
// does: every reply says so, and a preflight (OPTIONS with Access-Control-Request-Method) gets
// a 204 naming the methods and the headers asked for. It reports whether it answered.
func cors(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "X-Request-Id")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	allow := r.Header.Get("Access-Control-Request-Headers")
	if allow == "" {
		allow = "Authorization, Content-Type"
	}
	h.Set("Access-Control-Allow-Headers", allow)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// requestID sets the reply's X-Request-Id: the client's, or a new random one, so that a
// client's logs and the server's can be matched.
func requestID(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 128 {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	w.Header().Set("X-Request-Id", id)
}

// handleVersion answers GET /version as vLLM does: {"version": ...}, here the wspec module's
// version and, when the binary was built from a checkout, its commit.
func handleVersion(w http.ResponseWriter, r *http.Request) {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
	}
	writeJSON(w, map[string]string{"version": v})
}
