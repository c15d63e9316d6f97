package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/hf2gguf"
	"github.com/wspec/wspec/weights/llama2c"
)

func runConvert(args []string) error {
	fs := pflag.NewFlagSet("convert", pflag.ContinueOnError)
	from := fs.String("from", "llama2c", "source layout: llama2c (MODEL.bin TOKENIZER.bin) or hf (a Hugging Face folder)")
	to := fs.String("to", "", "output format: hf (a Hugging Face folder; the default from llama2c) or gguf (from hf)")
	out := fs.String("out", "", "output folder (hf) or file (gguf); written whole, or left as it was on failure")
	outType := fs.String("outtype", "f16", "with --to gguf: the matrices' type or llama-quantize's mix: "+strings.Join(hf2gguf.FileTypeNames(), ", ")+" (norms stay f32)")
	quantize := fs.String("quantize", "", "with --to gguf: the same as --outtype (llama-quantize's name for it), e.g. q4_k_m or q8_0")
	force := fs.Bool("force", false, "replace an --out folder that is not empty (once the new one is complete)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec convert --from llama2c MODEL.bin TOKENIZER.bin --out DIR [--force]\n"+
			"       wspec convert --from hf DIR --to gguf --out FILE.gguf [--outtype f16|f32|q8_0|q4_k_m|...]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *from == "hf" && *to == "gguf":
		t := *outType
		if *quantize != "" {
			if fs.Changed("outtype") && !strings.EqualFold(*outType, *quantize) {
				return fmt.Errorf("--outtype %s and --quantize %s: give one", *outType, *quantize)
			}
			t = *quantize
		}
		return convertToGGUF(fs, *out, t)
	case *from != "llama2c":
		return fmt.Errorf("--from %q --to %q: want --from llama2c (to hf) or --from hf --to gguf", *from, *to)
	case *to != "" && *to != "hf":
		return fmt.Errorf("--from llama2c --to %q: llama2c converts to hf", *to)
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

// convertToGGUF writes the Hugging Face folder named by fs's argument as a GGUF file.
func convertToGGUF(fs *pflag.FlagSet, out, outType string) error {
	if fs.NArg() != 1 || out == "" {
		fs.Usage()
		return fmt.Errorf("want one model folder and --out FILE.gguf")
	}
	ft, err := hf2gguf.ParseFileType(outType)
	if err != nil {
		return fmt.Errorf("--outtype: %w", err)
	}
	o := hf2gguf.Options{FileType: ft}
	fmt.Fprintf(os.Stderr, "converting %s -> %s (%s)\n", fs.Arg(0), out, ft.Name)
	if err := hf2gguf.Convert(fs.Arg(0), out, o); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", out)
	return nil
}
