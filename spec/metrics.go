package spec

import "time"

// Metrics count what speculation did for one sequence (and, summed, for many). The
// definitions are vLLM's: a draft is one step's proposal for one sequence, its tokens the
// draft tokens; the mean acceptance length counts the steps that drafted.
type Metrics struct {
	Steps               int   // verify steps: target steps that sampled the sequence after its prefill
	Drafts              int   // steps that had at least one draft token
	DraftTokens         int   // draft tokens proposed (and verified)
	AcceptedTokens      int   // draft tokens the target accepted
	EmittedTokens       int   // tokens the verify steps produced (accepted + 1 each), before cutting at a stop token or the length; the prefill's token is not counted
	AcceptedPerPosition []int // index i: steps where draft i was accepted
	DraftedPerPosition  []int // index i: steps that drafted at least i+1 tokens
	// Where the time went: drafting (the sequence's share of the drafter's calls), and the
	// target steps that verified its drafts (Steps of them; wall time, shared with the other
	// sequences of a batched step; its prompt's steps are not counted).
	DraftTime, StepTime time.Duration
}

// Count records one verify step of nDraft drafts of which the first accepted passed.
func (m *Metrics) Count(nDraft, accepted int) {
	m.Steps++
	m.EmittedTokens += accepted + 1
	if nDraft == 0 {
		return
	}
	m.Drafts++
	m.DraftTokens += nDraft
	m.AcceptedTokens += accepted
	for len(m.AcceptedPerPosition) < nDraft {
		m.AcceptedPerPosition = append(m.AcceptedPerPosition, 0)
		m.DraftedPerPosition = append(m.DraftedPerPosition, 0)
	}
	for i := range nDraft {
		m.DraftedPerPosition[i]++
	}
	for i := range accepted {
		m.AcceptedPerPosition[i]++
	}
}

// Add sums o into m (per-sequence metrics into a run's).
func (m *Metrics) Add(o Metrics) {
	m.Steps += o.Steps
	m.Drafts += o.Drafts
	m.DraftTokens += o.DraftTokens
	m.AcceptedTokens += o.AcceptedTokens
	m.EmittedTokens += o.EmittedTokens
	for len(m.AcceptedPerPosition) < len(o.AcceptedPerPosition) {
		m.AcceptedPerPosition = append(m.AcceptedPerPosition, 0)
		m.DraftedPerPosition = append(m.DraftedPerPosition, 0)
	}
	for i := range o.AcceptedPerPosition {
		m.AcceptedPerPosition[i] += o.AcceptedPerPosition[i]
		m.DraftedPerPosition[i] += o.DraftedPerPosition[i]
	}
	m.DraftTime += o.DraftTime
	m.StepTime += o.StepTime
}

// AcceptanceRate is the fraction of draft tokens accepted (0 with no drafts).
func (m Metrics) AcceptanceRate() float64 {
	if m.DraftTokens == 0 {
		return 0
	}
	return float64(m.AcceptedTokens) / float64(m.DraftTokens)
}

// MeanAcceptanceLength is vLLM's: 1 + accepted / drafts, the tokens a step that drafted
// produced, the recovered or bonus token included (0 with no drafts). Steps that did not
// draft are not counted: see DraftingShare.
func (m Metrics) MeanAcceptanceLength() float64 {
	if m.Drafts == 0 {
		return 0
	}
	return 1 + float64(m.AcceptedTokens)/float64(m.Drafts)
}

// DraftingShare is the fraction of verify steps that drafted.
func (m Metrics) DraftingShare() float64 {
	if m.Steps == 0 {
		return 0
	}
	return float64(m.Drafts) / float64(m.Steps)
}

// AcceptanceAt is, for each draft position i, the fraction of the steps that drafted that far
// whose draft i was accepted.
func (m Metrics) AcceptanceAt() []float64 {
	out := make([]float64, len(m.AcceptedPerPosition))
	for i, n := range m.AcceptedPerPosition {
		if i < len(m.DraftedPerPosition) && m.DraftedPerPosition[i] > 0 {
			out[i] = float64(n) / float64(m.DraftedPerPosition[i])
		}
	}
	return out
}

// FinishReason says why a generation ended: OpenAI's "stop" and "length", and the engine's
// own "context_full" and "cancelled".
type FinishReason string

// Finish reasons.
const (
	FinishStop        FinishReason = "stop"         // a stop token (not in the output), or the caller's emit said stop
	FinishLength      FinishReason = "length"       // the most new tokens were generated
	FinishContextFull FinishReason = "context_full" // prompt plus output filled the model's context
	FinishCancelled   FinishReason = "cancelled"    // the context was cancelled (ctx.Err() says why)
)
