package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/weights/hf2gguf"
	"github.com/wspec/wspec/weights/llama2c"
)

func runConvert(args []string) error {
	fs := pflag.NewFlagSet("convert", pflag.ContinueOnError)
	from := fs.String("from", "llama2c", "source layout: llama2c (MODEL.bin TOKENIZER.bin) or hf (a Hugging Face folder)")
	to := fs.String("to", "", "output format: hf (a Hugging Face folder; the default from llama2c) or gguf (from hf)")
	revision := fs.String("revision", "", "with --from hf and a Hugging Face repository (ORG/NAME) for DIR: the branch, tag or commit (default main)")
	downloadDir := fs.String("download-dir", "", "with --from hf and a Hugging Face repository for DIR: the hub cache to fetch into (default $HF_HUB_CACHE, $HF_HOME/hub)")
	out := fs.String("out", "", "output folder (hf) or file (gguf); written whole, or left as it was on failure")
	outType := fs.String("outtype", "f16", "with --to gguf: the matrices' type or llama-quantize's mix: "+strings.Join(hf2gguf.FileTypeNames(), ", ")+" (norms stay f32)")
	quantize := fs.String("quantize", "", "with --to gguf: the same as --outtype (llama-quantize's name for it), e.g. q4_k_m or q8_0")
	force := fs.Bool("force", false, "replace an --out folder that is not empty (once the new one is complete)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec convert --from llama2c MODEL.bin TOKENIZER.bin --out DIR [--force]\n"+
			"       wspec convert --from hf DIR --to gguf --out FILE.gguf [--outtype f16|f32|q8_0|q4_k_m|...]\n"+
			"       wspec convert --from llama2c MODEL.bin TOKENIZER.bin --to gguf --out FILE.gguf [--outtype ...]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	t := *outType
	if *quantize != "" {
		if fs.Changed("outtype") && !strings.EqualFold(*outType, *quantize) {
			return fmt.Errorf("--outtype %s and --quantize %s: give one", *outType, *quantize)
		}
		t = *quantize
	}
	switch {
	case *from == "hf" && *to == "gguf":
		if fs.NArg() != 1 || *out == "" {
			fs.Usage()
			return fmt.Errorf("want one model folder and --out FILE.gguf")
		}
		in, _, err := resolveModel(fs.Arg(0), *revision, *downloadDir)
		if err != nil {
			return err
		}
		return convertToGGUF(in, *out, t)
	case *from == "llama2c" && *to == "gguf":
		return llama2cToGGUF(fs, *out, t)
	case *from != "llama2c":
		return fmt.Errorf("--from %q --to %q: want --from llama2c (to hf or gguf) or --from hf --to gguf", *from, *to)
	case *to != "" && *to != "hf":
		return fmt.Errorf("--from llama2c --to %q: llama2c converts to hf or gguf", *to)
	}
	if fs.NArg() != 2 || *out == "" {
		fs.Usage()
		return fmt.Errorf("want MODEL.bin TOKENIZER.bin and --out DIR")
	}
	fmt.Fprintf(os.Stderr, "converting %s + %s -> %s\n", fs.Arg(0), fs.Arg(1), *out)
	if err := llama2c.Convert(fs.Arg(0), fs.Arg(1), *out, *force); err != nil {
		return forceHint(err, *force)
	}
	fmt.Fprintf(os.Stderr, "wrote %s (model.safetensors, config.json, tokenizer.json, tokenizer_config.json)\n", *out)
	return nil
}

// convertToGGUF writes the Hugging Face folder dir as the GGUF file out, its matrices of type
// (or llama-quantize's mix) outType.
func convertToGGUF(dir, out, outType string) error {
	ft, err := hf2gguf.ParseFileType(outType)
	if err != nil {
		return fmt.Errorf("--outtype: %w", err)
	}
	fmt.Fprintf(os.Stderr, "converting %s -> %s (%s)\n", dir, out, ft.Name)
	if err := hf2gguf.Convert(dir, out, hf2gguf.Options{FileType: ft}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", out)
	return nil
}

// llama2cToGGUF converts llama2.c's MODEL.bin TOKENIZER.bin to a Hugging Face folder in a
// temporary folder, then that to the GGUF file out.
func llama2cToGGUF(fs *pflag.FlagSet, out, outType string) error {
	if fs.NArg() != 2 || out == "" {
		fs.Usage()
		return fmt.Errorf("want MODEL.bin TOKENIZER.bin and --out FILE.gguf")
	}
	if _, err := hf2gguf.ParseFileType(outType); err != nil {
		return fmt.Errorf("--outtype: %w", err) // before the conversion's work
	}
	tmp, err := os.MkdirTemp("", "wspec-llama2c-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "hf")
	if err := llama2c.Convert(fs.Arg(0), fs.Arg(1), dir, false); err != nil {
		return err
	}
	return convertToGGUF(dir, out, outType)
}
