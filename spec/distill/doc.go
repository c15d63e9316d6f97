// Package distill trains drafters for a target model on the CPU, in Go (`wspec distill`):
// it generates data with the target (tokens, hidden states, the residuals EAGLE-3 reads, the
// target's top probabilities), trains EAGLE-3, EAGLE-1, Medusa heads and a small draft model
// with hand-written forward and backward passes (llm.c style, over flat float32 arrays, each
// checked against finite differences; a blocked GEMM with an AVX2/FMA micro-kernel on amd64,
// plain Go elsewhere), writes them in the layouts spec/neural loads, and measures their
// acceptance by replaying greedy chain speculation against the target's greedy output. The CPU
// was chosen over the WGSL kernels because training needs backward kernels the device does
// not have, and lavapipe, the only device where this was built, is itself the CPU.
//
// # Commands
//
//	wspec distill gen   --out data.safetensors [--force] [--model M] [--prompts P --chat --max-len N]
//	                    [--greedy 1 --sampled 2 --mixed 2 --aux 2,4,5]
//	wspec distill train --drafter eagle3|eagle|medusa|draft_model --data data.safetensors --out DIR
//	                    [--force] [--epochs E --batch-rows R --lr LR ...]
//	wspec distill eval  --drafter MODE --dir DIR [--prompts eval --chat --max-new 128 --k-max 8 --json F]
//
// The target (--model, default stories15M) is a Llama-family folder or GGUF file (quantized
// tensors decoded to float32; grouped-query attention is computed as such; the EAGLE heads it
// trains have a key/value head per query head). --chat sends each prompt as a user's message
// in the model's chat template, as `wspec serve` renders a chat request.
//
// gen and train check their output first: an existing dataset file, or a folder holding
// anything, is refused before any work unless --force (which replaces a folder only when it
// holds nothing but a model's or drafter's files, and only once the new one is complete).
//
//   - gen runs the target over prompts/train.txt (840 story openings) greedily, sampled
//     (T 0.8, top-p 0.9) and sampled-then-greedy, and records per position the token, the last
//     hidden state, the residuals entering the EAGLE-3 aux layers and the target's top-32
//     probabilities, in a safetensors file that names its target.
//   - train trains one drafter with AdamW behind a progress bar (loss, validation loss,
//     per-depth argmax agreement, tokens/s), and writes it in the layout the loaders read
//     (float16, zstd: model.safetensors.zst, medusa_lm_head.safetensors.zst) with
//     "wspec_target": {"name", "fingerprint"} in its config.json, and an SVG loss curve. The
//     losses are the papers': EAGLE-3 soft cross-entropy over the draft vocabulary with the
//     training-time test (0.8^k); EAGLE-1 SmoothL1 feature regression + 0.1 soft cross-entropy;
//     Medusa soft cross-entropy per head (0.8^k); the draft model distilled to the target's
//     top-32.
//   - eval measures acceptance on the CPU on prompts/eval.txt (40 openings kept apart from
//     training): mean acceptance length (bonus token included), acceptance rate and per
//     position, k = 1..8, counted with the scheduler's own spec.Metrics (a test checks the
//     replay's counts against real speculative decoding through spec/sched on the CPU target).
//     --sampling-temperature T adds, for the EAGLE heads, the first draft's acceptance at T
//     with argmax drafts against drafts sampled from the head.
//
// recipe-smollm2.sh trains an EAGLE-3 head for a real chat model, SmolLM2-135M-Instruct's
// Q4_1 GGUF, on instruction prompts (prompts/chat-train.txt, chat-eval.txt: templates x
// topics, 8 topics kept apart; chat-prompts.py writes them); its time and acceptance are in
// docs/speculative.md.
//
// recipe.sh makes the drafters the repository ships in spec/drafters/stories15M (12.6 MB in
// all, with their loss curves and eval.json) in about 37 minutes on a 2-core machine. A
// drafter whose wspec_target fingerprint (the target's sizes and a hash of its LM head and
// final norm) is not the loaded model's is refused before the target loads; drafters without
// the field are not checked. Their acceptance is in docs/speculative.md.
package distill
