package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/serve"
)

// runServe runs the OpenAI-compatible server until SIGTERM or SIGINT, then drains it (no new
// requests; running ones finish within --shutdown-timeout, then are cancelled) and returns
// nil: the exit status is 0.
func runServe(args []string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	ef := addEngineFlags(fs)
	host := fs.String("host", "127.0.0.1", "address to listen on (0.0.0.0: every interface; then set --api-key)")
	port := fs.Int("port", 8000, "port to listen on (0: any free port, printed when ready)")
	apiKey := fs.String("api-key", "", "require 'Authorization: Bearer KEY' on /v1 requests; /health, /metrics, /version, /tokenize and /detokenize stay open, as in vLLM (default: $WSPEC_API_KEY)")
	name := fs.String("served-model-name", "", "the model's name in the API (default: the model folder's name)")
	chatTemplate := fs.String("chat-template", "", "Jinja chat template (a file, or the template) instead of the model's")
	maxBody := fs.Int64("max-request-bytes", serve.DefaultMaxBodyBytes, "largest request body accepted (larger: 413)")
	origins := fs.String("allowed-origins", "", "web origins whose pages may call the server (CORS): comma-separated or a JSON list; \"*\" for any (default: none)")
	maxConns := fs.Int("max-connections", serve.DefaultMaxConnections, "open connections at most (one more is answered 503 and closed)")
	bodyTimeout := fs.Duration("request-body-timeout", serve.DefaultBodyTimeout, "how long a request's body may take to arrive (slower: 408)")
	noAccessLog := fs.Bool("disable-access-log", false, "do not log a line per request to stderr")
	drainD := serve.DefaultDrainTimeout
	drain := &drainD
	fs.Var(secondsFlag{drain}, "shutdown-timeout", "on SIGTERM, how long running requests may finish before they are cancelled: seconds (30) or a duration (30s)")
	vf := addVLLMFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec serve [MODEL] [flags]\n\nServes the OpenAI API (/v1/completions, /v1/chat/completions, /v1/models) and vLLM's /tokenize, /detokenize, /version, /health, /metrics. MODEL (or --model) is a Hugging Face folder, a GGUF file, or a Hugging Face repository (ORG/NAME[:QUANT]) fetched into huggingface_hub's cache. vLLM's serve flags are taken where they mean something on one device, and its harmless ones accepted with a note.\n\nflags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(normalizeVLLM(args)); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 1:
		return fmt.Errorf("unexpected argument %q (serve takes one model, then flags)", fs.Arg(1))
	case fs.NArg() == 1 && *ef.model != "" && filepath.Clean(*ef.model) != filepath.Clean(fs.Arg(0)):
		return fmt.Errorf("two models: %s and --model %s", fs.Arg(0), *ef.model)
	case fs.NArg() == 1:
		*ef.model = fs.Arg(0)
	}
	eo, err := ef.options()
	if err != nil {
		return err
	}
	var sc serve.Config
	if err := vf.apply(os.Stderr, *ef.model, ef.repo, &eo, &sc); err != nil {
		return err
	}
	switch {
	case *port < 0 || *port > 65535:
		return fmt.Errorf("--port %d: want 0..65535", *port)
	case *maxBody < 1:
		return fmt.Errorf("--max-request-bytes %d: want at least 1", *maxBody)
	case *maxConns < 1:
		return fmt.Errorf("--max-connections %d: want at least 1", *maxConns)
	case *bodyTimeout <= 0:
		return fmt.Errorf("--request-body-timeout %v: want more than 0", *bodyTimeout)
	case *drain < 0:
		return fmt.Errorf("--shutdown-timeout %v: want 0 or more", *drain)
	}
	allowed, err := serve.ParseOrigins(*origins)
	if err != nil {
		return fmt.Errorf("--allowed-origins: %w", err)
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("WSPEC_API_KEY")
	}
	if *name == "" {
		*name = engine.DefaultModel
		switch {
		case ef.repo != "":
			*name = ef.repo // as vLLM names a model it fetched
		case *ef.model != "":
			*name = filepath.Base(filepath.Clean(*ef.model))
		}
	}
	// Listen first: a port in use is reported before the model loads.
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	defer ln.Close()
	k := 0
	if eo.Speculative != nil {
		k = eo.Speculative.NumSpeculativeTokens
	}
	metrics := serve.NewMetrics(*name, k)
	fmt.Fprintf(os.Stderr, "loading %s ...\n", orDefault(*ef.model, "the default model"))
	eo.Progress, eo.FirstRun, eo.OnStep = loadBar(), compileNotice(), metrics.OnStep
	e, err := engine.Load(*ef.model, eo)
	if err != nil {
		return err
	}
	defer e.Close()
	sc.ModelName, sc.APIKey, sc.MaxBodyBytes, sc.DrainTimeout = *name, *apiKey, *maxBody, *drain
	sc.ChatTemplate, sc.AllowedOrigins, sc.Metrics, sc.MaxConnections, sc.BodyTimeout = *chatTemplate, allowed, metrics, *maxConns, *bodyTimeout
	sc.Warnings = os.Stderr
	if sc.Defaults, err = vf.generationDefaults(os.Stderr, e.Info().Dir); err != nil {
		return err
	}
	if !*noAccessLog && !*vf.uvicornAccessLog {
		sc.AccessLog = os.Stderr
	}
	s, err := serve.New(e, sc)
	if err != nil {
		return err
	}
	info := e.Info()
	spec := "off"
	if info.Method != "" {
		spec = fmt.Sprintf("%s, k=%d", info.Method, info.K)
	}
	fmt.Fprintf(os.Stderr, "%s on %s, %s weights; speculation %s; chat template: %s\n%s\n", info.Dir, info.Adapter, info.DType, spec, s.ChatTemplateSource(), info.Memory)
	if *apiKey == "" && !isLoopback(*host) {
		fmt.Fprintf(os.Stderr, "warning: listening on %s without --api-key: anyone who reaches it can use it\n", *host)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "serving %q on http://%s (stop: SIGTERM or Ctrl-C)\n", *name, ln.Addr())
	t0 := time.Now()
	if err := s.Serve(ctx, ln); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "stopped after %v\n", time.Since(t0).Round(time.Second))
	return nil
}

// isLoopback says whether host (an address or "localhost") reaches this machine only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
