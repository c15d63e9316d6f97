package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/drafters"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/web"
)

// runWeb builds the engine for the browser (WebAssembly) and serves the page, the engine and
// the model's files on loopback.
func runWeb(args []string) error {
	fs := pflag.NewFlagSet("web", pflag.ContinueOnError)
	host := fs.String("host", "127.0.0.1", "address to listen on (loopback by default: the page serves the model's files)")
	port := fs.Int("port", 8090, "port to listen on")
	model := fs.String("model", "", "the model the page offers: a Hugging Face folder or a GGUF file (default: the default model, with its shipped drafters)")
	wasm := fs.String("wasm", "", "a prebuilt wspec.wasm (GOOS=js GOARCH=wasm go build ./cmd/wspec-wasm), with the wasm_exec.js of its Go release beside it; default: build it from the source")
	source := fs.String("source", ".", "the wspec source to build the WebAssembly from (this folder or one above it)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec web [flags]\n\nServes wspec in a web page: open the address it prints in a browser with WebGPU.\n\nflags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("--port %d: want 0..65535", *port)
	}
	site := web.Site{Model: *model, Drafters: map[string]string{}}
	if site.Model == "" {
		d, err := engine.DefaultModelDir()
		if err != nil {
			return err
		}
		site.Model = d
		for _, mode := range drafters.Modes() {
			if site.Drafters[mode], err = drafters.Dir(mode); err != nil {
				return err
			}
		}
	}
	// Listen first: a port in use is reported before the build.
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	defer ln.Close()
	if !isLoopback(*host) {
		fmt.Fprintf(os.Stderr, "warning: listening on %s: anyone who reaches it can download the model's files (the page has no password)\n", *host)
	}
	if *wasm != "" {
		site.Wasm, site.WasmExec = *wasm, filepath.Join(filepath.Dir(*wasm), "wasm_exec.js")
	} else {
		root, err := web.ModuleRoot(*source)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "wspec-web-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "building the page's engine (GOOS=js GOARCH=wasm) from %s ...\n", root)
		if site.Wasm, site.WasmExec, err = web.Build(root, dir); err != nil {
			return err
		}
	}
	h, err := site.Handler()
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	with := "no drafters"
	if len(site.Drafters) > 0 {
		with = fmt.Sprintf("the drafters %v", drafters.Modes())
	}
	fmt.Fprintf(os.Stderr, "wspec web: %s with %s on http://%s/ (a browser with WebGPU; Chromium: --enable-unsafe-webgpu where it is off)\n",
		site.ModelName(), with, ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
