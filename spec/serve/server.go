package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/reasoning"
	"github.com/wspec/wspec/spec/toolcall"
	"github.com/wspec/wspec/weights/chat"
	"github.com/wspec/wspec/weights/tokenizer"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 2 << 20
	DefaultDrainTimeout = 30 * time.Second
)

// Config are a server's settings.
type Config struct {
	// ModelName is the model's name in requests and replies ("" is the model folder's name).
	ModelName string
	// APIKey, when set, is required of every /v1 request as "Authorization: Bearer <key>"
	// (/health, /metrics, /version, /tokenize and /detokenize stay open, as vLLM leaves every
	// route outside /v1).
	APIKey string
	// MaxBodyBytes bounds a request's body (0: DefaultMaxBodyBytes); a larger one gets a 413.
	MaxBodyBytes int64
	// DrainTimeout bounds how long Serve lets running requests finish once told to stop,
	// before it cancels them (0: DefaultDrainTimeout).
	DrainTimeout time.Duration
	// BodyTimeout bounds how long a request's body may take to arrive (0:
	// DefaultBodyTimeout); a slower one gets a 408.
	BodyTimeout time.Duration
	// MaxConnections bounds the open connections (0: DefaultMaxConnections); one more is
	// answered 503 and closed.
	MaxConnections int
	// AccessLog, when set, gets a line per request once it is answered (accessLog).
	AccessLog io.Writer
	// ChatTemplate, when set, is a Jinja chat template (a file, or the template itself) used
	// instead of the model's.
	ChatTemplate string
	// AllowedOrigins are the web origins whose pages may call the server (CORS): "*" is any;
	// none by default, so a page elsewhere cannot read the replies (ParseOrigins reads the
	// flag).
	AllowedOrigins []string
	// Metrics are the server's metrics (nil: made here, without the engine's step counters:
	// pass a Metrics' OnStep to engine.Options to have them).
	Metrics *Metrics
	// ToolCallParser reads tool calls out of replies (one of toolcall.Parsers, "" for none)
	// when EnableAutoToolChoice lets tool_choice be "auto": vLLM's --tool-call-parser and
	// --enable-auto-tool-choice.
	ToolCallParser       string
	EnableAutoToolChoice bool
	// ReasoningParser splits replies into reasoning_content and content (one of
	// reasoning.Parsers, "" for none): vLLM's --reasoning-parser.
	ReasoningParser string
	// Defaults are the sampling settings of a request that sets none (the model's
	// generation_config.json, as vLLM applies it).
	Defaults SamplingDefaults
	// Warnings, when set, gets a line for each request field the server ignored.
	Warnings io.Writer
	// Seed, when set, seeds the seeds of requests that set none (vLLM's --seed): the same
	// requests in the same order give the same outputs. Unset, each is random.
	Seed *uint64
	// MaxLogprobs bounds logprobs and top_logprobs (vLLM's --max-logprobs; 0: the engine's
	// bound, engine.MaxTopLogprobs).
	MaxLogprobs int
}

// SamplingDefaults are sampling settings a request gets where it does not set them, by the
// names of engine.SamplingParams (a name not set: the parameter's ServerDefault, OpenAI's).
type SamplingDefaults map[string]float64

// Server serves one engine. See the package comment.
type Server struct {
	cfg     Config
	e       *engine.Engine
	tok     *tokenizer.Tokenizer
	name    string
	dir     string
	maxSeq  int
	tpl     *chat.Template
	metrics *Metrics
	created int64
	keyHash [32]byte
	seeds   *seeder
	// responses are the Responses API's stored responses (responses_reply.go)
	responses *responseStore

	draining atomic.Bool     // Serve was told to stop: new requests get a 503
	active   atomic.Int64    // requests being handled
	reading  sync.Map        // *http.ResponseController -> struct{}: bodies being read
	hardStop context.Context // cancelled when the drain runs out of time
	stopAll  context.CancelFunc
}

// New makes a server for e, reading the model's chat template.
func New(e *engine.Engine, c Config) (*Server, error) {
	info := e.Info()
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.ModelName == "" {
		c.ModelName = filepath.Base(info.Dir)
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(c.ModelName, info.K)
	}
	tok := e.Tokenizer()
	s := &Server{cfg: c, e: e, tok: tok, name: c.ModelName, dir: info.Dir, maxSeq: info.Config.MaxSeq,
		metrics: c.Metrics,
		created: time.Now().Unix(), keyHash: sha256.Sum256([]byte(c.APIKey)), seeds: newSeeder(c.Seed),
		responses: newResponseStore(MaxStoredResponses, MaxStoredResponseBytes)}
	if c.MaxLogprobs < 0 || c.MaxLogprobs > engine.MaxTopLogprobs {
		return nil, fmt.Errorf("max logprobs %d: want 0..%d", c.MaxLogprobs, engine.MaxTopLogprobs)
	}
	s.hardStop, s.stopAll = context.WithCancel(context.Background())
	if c.ToolCallParser != "" && !toolcall.Valid(c.ToolCallParser) {
		return nil, fmt.Errorf("tool call parser %q: want one of %s", c.ToolCallParser, strings.Join(toolcall.Parsers(), ", "))
	}
	if c.EnableAutoToolChoice && c.ToolCallParser == "" {
		return nil, fmt.Errorf("automatic tool choice needs a tool call parser (one of %s)", strings.Join(toolcall.Parsers(), ", "))
	}
	if c.ReasoningParser != "" && !reasoning.Valid(c.ReasoningParser) {
		return nil, fmt.Errorf("reasoning parser %q: want one of %s", c.ReasoningParser, strings.Join(reasoning.Parsers(), ", "))
	}
	var err error
	if s.tpl, err = chat.ForModel(info.Dir, info.ChatTemplate, c.ChatTemplate, tok); err != nil {
		return nil, err
	}
	s.metrics.watch(e)
	return s, nil
}

// ChatTemplateSource says where the chat template came from ("default" when the model has
// none).
func (s *Server) ChatTemplateSource() string { return s.tpl.Origin }

// Name is the served model name.
func (s *Server) Name() string { return s.name }

// Handler is the server's HTTP handler (for tests, or to mount it elsewhere; Serve uses it).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/completions", method("POST", s.handleCompletions))
	mux.HandleFunc("/v1/chat/completions", method("POST", s.handleChat))
	mux.HandleFunc("/v1/responses", method("POST", s.handleResponses))
	mux.HandleFunc("/v1/messages", method("POST", s.handleMessages))
	mux.HandleFunc("/v1/messages/count_tokens", method("POST", s.handleCountTokens))
	mux.HandleFunc("/v1/responses/{id}", s.handleResponse)
	mux.HandleFunc("/v1/models", method("GET", s.handleModels))
	mux.HandleFunc("/v1/models/{id...}", method("GET", s.handleModel))
	mux.HandleFunc("/health", method("GET", s.handleHealth))
	mux.HandleFunc("/version", method("GET", handleVersion))
	mux.HandleFunc("/tokenize", method("POST", s.handleTokenize))
	mux.HandleFunc("/detokenize", method("POST", s.handleDetokenize))
	mux.HandleFunc("/metrics", method("GET", s.metrics.Handler().ServeHTTP))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "not_found_error", Code: codeNotFound,
			Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	})
	return s.guard(mux)
}

// method answers requests of another method with a 405.
func method(m string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != m {
			w.Header().Set("Allow", m)
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: codeMethodNotAllowd,
				Message: fmt.Sprintf("%s %s: want %s", r.Method, r.URL.Path, m)})
			return
		}
		h(w, r)
	}
}

var errShuttingDown = &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: codeShuttingDown,
	Message: "the server is shutting down"}

// guard wraps every request: a panic is a 500 (a last resort: requests are validated
// first), every reply carries an X-Request-Id (and CORS headers for an allowed origin), a CORS
// preflight is answered without the API key, /v1 requests need the API key when one is set,
// and none is taken while draining.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.active.Add(1) // before the drain is looked at: a drain waits for every request past this
		defer s.active.Add(-1)
		var w http.ResponseWriter = rw
		if s.cfg.AccessLog != nil {
			sw, t0 := &statusWriter{ResponseWriter: rw}, time.Now()
			defer func() { accessLog(s.cfg.AccessLog, r, sw, time.Since(t0)) }()
			w = sw
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Printf("serve: panic serving %s %s: %v\n%s", r.Method, r.URL.Path, p, debug.Stack())
				writeError(w, fmt.Errorf("panic: %v", p))
			}
		}()
		requestID(w, r)
		if s.cors(w, r) {
			return // a preflight, answered
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1" {
			if s.draining.Load() {
				w.Header().Set("Connection", "close")
				writeError(w, errShuttingDown)
				return
			}
			if s.cfg.APIKey != "" && !s.authorized(r) {
				w.Header().Set("WWW-Authenticate", "Bearer")
				writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "authentication_error", Code: codeInvalidAPIKey,
					Message: "a valid API key is required: Authorization: Bearer <key>"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorized checks the bearer token (or Anthropic's x-api-key header) in constant time.
func (s *Server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		if key := r.Header.Get("X-Api-Key"); key != "" {
			scheme, token, ok = "Bearer", key, true
		} else {
			return false
		}
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(h[:], s.keyHash[:]) == 1
}

func (s *Server) card() modelCard {
	c := modelCard{ID: s.name, Object: "model", Created: s.created, OwnedBy: "wspec", Root: s.dir, MaxModelLen: s.maxSeq}
	if i := s.e.Info(); i.Method != "" {
		c.Speculative = &modelSpeculative{Method: i.Method, NumSpeculativeTokens: i.K}
	}
	return c
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, modelList{Object: "list", Data: []modelCard{s.card()}})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != s.name {
		writeError(w, modelNotFound(id, s.name))
		return
	}
	writeJSON(w, s.card())
}

// handleHealth is 200 (empty, as vLLM's) while the server takes requests, 503 once it drains.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeError(w, errShuttingDown)
		return
	}
	w.WriteHeader(http.StatusOK)
}
