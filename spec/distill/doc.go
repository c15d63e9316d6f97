// Package distill trains drafters for a target model on the CPU, in Go (`wspec distill`):
// it generates data with the target (tokens, hidden states, the residuals EAGLE-3 reads, the
// target's top probabilities), trains EAGLE-3, EAGLE-1, Medusa heads and a small draft model
// with hand-written forward and backward passes (each checked against finite differences, a
// blocked AVX2 GEMM underneath), writes them in the layouts spec/neural loads, and measures
// their acceptance by replaying speculative decoding against the target's greedy output,
// counted as the scheduler counts it (checked against real decoding through spec/sched on
// the CPU target, NewCPUTarget).
package distill
