package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
)

// modelNotFound is the 404 for a model this server does not serve, as OpenAI and vLLM answer
// it (SDKs raise their NotFoundError on it).
func modelNotFound(id, served string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "not_found_error", Param: "model", Code: codeModelNotFound,
		Message: fmt.Sprintf("The model `%s` does not exist (this server serves %q).", id, served)}
}

// ParseOrigins reads the --allowed-origins value: origins separated by commas, or vLLM's JSON
// list ('["https://app.example"]'); "*" allows every origin. Each other origin is a scheme and a
// host (with a port where one is given), as browsers send it, with no path.
func ParseOrigins(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	var list []string
	if strings.HasPrefix(v, "[") {
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			return nil, fmt.Errorf("allowed origins %q: not a JSON list of strings: %v", v, err)
		}
	} else if v != "" {
		list = strings.Split(v, ",")
	}
	for i, o := range list {
		o = strings.TrimSpace(o)
		list[i] = o
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("allowed origin %q: want \"*\" or scheme://host[:port], as a browser's Origin header says it", o)
		}
		list[i] = strings.TrimSuffix(o, "/")
	}
	return list, nil
}

// cors answers what a web page's requests ask of Cross-Origin Resource Sharing, for the origins
// of Config.AllowedOrigins (none by default): a reply to an allowed origin says it may read
// it (and the X-Request-Id); a preflight (OPTIONS with Access-Control-Request-Method) from one
// gets a 204 naming the methods and the headers asked for, from any other origin a 400 (as
// vLLM's server answers). It reports whether it answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	allow := ""
	for _, o := range s.cfg.AllowedOrigins {
		if o == "*" || o == origin {
			allow = o
			break
		}
	}
	if allow == "" {
		if preflight {
			writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: codeInvalidValue,
				Message: fmt.Sprintf("Disallowed CORS origin %q (serve --allowed-origins)", origin)})
		}
		return preflight
	}
	h.Set("Access-Control-Allow-Origin", allow)
	h.Set("Access-Control-Expose-Headers", "X-Request-Id")
	if !preflight {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	hdrs := r.Header.Get("Access-Control-Request-Headers")
	if hdrs == "" {
		hdrs = "Authorization, Content-Type"
	}
	h.Set("Access-Control-Allow-Headers", hdrs)
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
