package grammar

import (
	"context"
	"fmt"
	"time"
)

// budget bounds one compile as a whole, beside the bounds on one rule (maxNFAStates,
// maxDFAStates): the work it does, counted in units (a subschema read, an automaton state
// made, a state's edges followed), and its time; and it stops the compile when its context
// ends (the client went away, the server drains). Without it, anyOf beside properties
// multiplied the subschemas 2^depth, and many heavy rules added up to minutes and gigabytes.
type budget struct {
	ctx       context.Context
	deadline  time.Time
	left      int64
	sinceLook int64 // units spent since the clock and the context were last read
}

const (
	// schemaWork is what reading one subschema costs, in units: about what a deterministic
	// state's row costs.
	schemaWork = 256
	// maxCompileWork is the units one compile may spend: about a second of work on the
	// project's 2-core machine, past the largest schemas the OpenAI SDKs' helpers write.
	maxCompileWork = 16_000_000
	// maxCompileTime stops a compile that is slow for reasons the units do not see.
	maxCompileTime = 2 * time.Second
)

func newBudget(ctx context.Context) *budget {
	return &budget{ctx: ctx, deadline: time.Now().Add(maxCompileTime), left: maxCompileWork}
}

// spend takes n units, and fails once the budget is spent, the time is up or the context
// has ended. A nil budget has no bound.
func (b *budget) spend(n int) error {
	if b == nil {
		return nil
	}
	b.left -= int64(n)
	if b.left < 0 {
		return fmt.Errorf("%w: the grammar is too large to compile (over %d units of work: subschemas and automaton states; anyOf beside properties, and repetitions inside repetitions, multiply them)", ErrUnsupported, maxCompileWork)
	}
	if b.sinceLook += int64(n); b.sinceLook < 4096 {
		return nil
	}
	b.sinceLook = 0
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("grammar: compile stopped: %w", err)
	}
	if time.Now().After(b.deadline) {
		return fmt.Errorf("%w: the grammar is too large to compile in %v", ErrUnsupported, maxCompileTime)
	}
	return nil
}
