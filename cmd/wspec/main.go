// Command wspec runs decoder-only language models on any WebGPU adapter, with speculative
// decoding. Subcommands: setup, generate, devices, selftest, convert, bench, serve, distill, web.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

type command struct {
	name, summary string
	run           func(args []string) error
}

var commands = []command{
	{"setup", "fetch and check Dawn and the default model into the wspec home", runSetup},
	{"generate", "generate text from a prompt (default model: stories15M)", runGenerate},
	{"devices", "list the WebGPU adapters with their features and limits", runDevices},
	{"selftest", "run the kernel portability suite on every adapter (or one)", runSelftest},
	{"convert", "convert a llama2.c checkpoint into a Hugging Face folder", runConvert},
	{"synth", "write a random-weight checkpoint in a real model's shape", runSynth},
	{"bench", "measure decode speed (and speculation) on an adapter", runBench},
	{"serve", "serve the OpenAI API (completions, chat) with continuous batching", runServe},
	{"distill", "train drafters for a model by self-distillation on the CPU", runDistill},
	{"web", "serve wspec in a web page (WebAssembly and the browser's WebGPU)", runWeb},
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: wspec <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\n`wspec <command> --help` lists a command's flags.\n")
}

func main() { os.Exit(run(os.Args[1:])) }

// run runs the command line args (without the program name) and returns the exit status:
// 0 (also for --help), 1 when the command failed, 2 for a usage error.
func run(args []string) int {
	if len(args) < 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		if len(args) < 1 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(args[1:])
			if errors.Is(err, pflag.ErrHelp) {
				return 0 // --help: the usage was printed
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "wspec %s: %v\n", c.name, err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "wspec: unknown command %q\n\n", args[0])
	usage()
	return 2
}
