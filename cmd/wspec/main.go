// Command wspec runs decoder-only language models on any WebGPU adapter, with speculative
// decoding. Subcommands: generate, devices, selftest, convert, bench, distill.
package main

import (
	"fmt"
	"os"
)

type command struct {
	name, summary string
	run           func(args []string) error
}

var commands = []command{
	{"generate", "generate text from a prompt (default model: stories15M)", runGenerate},
	{"devices", "list the WebGPU adapters with their features and limits", runDevices},
	{"selftest", "run the kernel portability suite on every adapter (or one)", runSelftest},
	{"convert", "convert a llama2.c checkpoint into a Hugging Face folder", runConvert},
	{"bench", "measure decode speed (and speculation) on an adapter", runBench},
	{"distill", "train drafters for a model by self-distillation on the CPU", runDistill},
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: wspec <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\n`wspec <command> --help` lists a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	for _, c := range commands {
		if c.name == os.Args[1] {
			if err := c.run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "wspec %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "wspec: unknown command %q\n\n", os.Args[1])
	usage()
	os.Exit(2)
}
