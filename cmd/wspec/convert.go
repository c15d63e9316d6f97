package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/llama2c"
)

func runConvert(args []string) error {
	fs := pflag.NewFlagSet("convert", pflag.ContinueOnError)
	from := fs.String("from", "llama2c", "source layout (llama2c)")
	out := fs.String("out", "", "output folder (Hugging Face layout); written whole, or left as it was on failure")
	force := fs.Bool("force", false, "replace an --out folder that is not empty (once the new one is complete)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec convert --from llama2c MODEL.bin TOKENIZER.bin --out DIR [--force]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from != "llama2c" {
		return fmt.Errorf("unknown --from %q (supported: llama2c)", *from)
	}
	if fs.NArg() != 2 || *out == "" {
		fs.Usage()
		return fmt.Errorf("want MODEL.bin TOKENIZER.bin and --out DIR")
	}
	fmt.Fprintf(os.Stderr, "converting %s + %s -> %s\n", fs.Arg(0), fs.Arg(1), *out)
	if err := llama2c.Convert(fs.Arg(0), fs.Arg(1), *out, *force); err != nil {
		if errors.Is(err, weights.ErrFolderExists) && !*force {
			return fmt.Errorf("%w (pass --force to replace it)", err)
		}
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s (model.safetensors, config.json, tokenizer.json, tokenizer_config.json)\n", *out)
	return nil
}
