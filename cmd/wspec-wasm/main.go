//go:build js && wasm

// Command wspec-wasm is wspec's engine for a web page: built with GOOS=js GOARCH=wasm, it
// installs the JavaScript API (globalThis.wspecGo, wrapped by spec/web/static/wspec.js) and
// waits for the page's calls. `wspec web` builds it and serves it with the page.
package main

import "github.com/wspec/wspec/spec/web"

func main() {
	web.Register()
	select {} // the page calls in; the program lives as long as the page
}
