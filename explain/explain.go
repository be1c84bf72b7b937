package explain

import (
	"fmt"
	"io"
	"strings"

	"statesim/engine"
	"statesim/invariant"
	"statesim/report"
	"statesim/sched"
	"statesim/setup"
	"statesim/step"
)

// Life is one request's history in a run, step by step: what the seeds'
// authors had to thread request ids through vLLM's forward pass to see.
type Life struct {
	RequestID  int64                 `json:"request_id"`
	Found      bool                  `json:"found"`
	ArrivalNS  int64                 `json:"arrival_ns"`
	Group      int                   `json:"group"`
	Prompt     int                   `json:"prompt_tokens"`
	FinishNS   int64                 `json:"finish_ns"`
	Outputs    int                   `json:"output_tokens"`
	CorruptAt  int64                 `json:"corrupt_step"`
	Steps      []LifeStep            `json:"steps"`
	Violations []invariant.Violation `json:"violations"`
	// Tokens is the log-prob trace against the reference, from numeric
	// backends that keep one.
	Tokens []report.TokenTrace `json:"tokens,omitempty"`
}

// LifeStep is one step the request took part in, or its preemption.
type LifeStep struct {
	Step            int64    `json:"step"`
	StartNS         int64    `json:"start_ns"`
	EndNS           int64    `json:"end_ns"`
	Preempted       bool     `json:"preempted,omitempty"`
	Scheduled       int      `json:"scheduled"`
	Computed        int      `json:"computed"`
	Region          string   `json:"region"`
	Path            string   `json:"path"`
	HasInitialState bool     `json:"has_initial_state"`
	BatchIndex      int      `json:"batch_index"` // the row in the persistent input batch
	BatchRows       int      `json:"batch_rows"`
	BatchTokens     int      `json:"batch_tokens"`
	Slots           []int32  `json:"slots"`
	SlotProvenance  []string `json:"slot_provenance"` // what each slot held when the kernels read it
	Stale           bool     `json:"stale"`           // the read slot was not this request's own state
}

// Explain runs a scenario and returns the life of one request, read from
// the run's step records.
func Explain(st *setup.Setup, id int64) (*Life, *report.Report, error) {
	life := &Life{RequestID: id, CorruptAt: -1}
	opt := engine.Options{KeepAll: true, Detail: step.Reads, Follow: id, Following: true}
	opt.Observe = func(rec *step.Record) {
		for _, p := range rec.Preempted {
			if p == id {
				life.Steps = append(life.Steps, LifeStep{Step: rec.Step, StartNS: int64(rec.Start), EndNS: int64(rec.Start), Preempted: true})
			}
		}
		for i := range rec.Rows {
			row := &rec.Rows[i]
			if row.RequestID != id {
				continue
			}
			if !life.Found {
				life.Found = true
				life.ArrivalNS, life.Group, life.Prompt = row.ArrivalNS, row.Group, row.NumPrompt
			}
			s := LifeStep{Step: rec.Step, StartNS: int64(rec.Start), EndNS: int64(rec.End), Scheduled: row.NumScheduled, Computed: row.NumComputed,
				Region: row.Region.String(), Path: row.Path.String(), HasInitialState: row.HasInitialState,
				BatchIndex: row.BatchIndex, BatchRows: len(rec.Rows), BatchTokens: rec.NumScheduledTokens,
				Slots: append([]int32(nil), row.StateBlocks...)}
			reads := row.Path == sched.PathDecode || row.HasInitialState
			for _, rd := range row.Reads {
				s.SlotProvenance = append(s.SlotProvenance, rd.Describe())
				if reads && !rd.Own {
					s.Stale = true
				}
			}
			life.Steps = append(life.Steps, s)
			life.CorruptAt = row.CorruptStep
		}
		for _, f := range rec.Finished {
			if f.RequestID == id {
				life.FinishNS, life.Outputs = f.FinishNS, f.NumOutputTokens
			}
		}
	}
	rep, err := engine.RunSetup(st, opt)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range rep.Violations {
		if v.RequestID == id {
			life.Violations = append(life.Violations, v)
		}
	}
	life.Tokens = rep.Tokens
	return life, rep, nil
}

// WriteText renders a life for a terminal. Runs of ordinary decode steps
// are folded into one line.
func (l *Life) WriteText(w io.Writer) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	if !l.Found {
		p("request %d was never scheduled in this run\n", l.RequestID)
		_, err := io.WriteString(w, b.String())
		return err
	}
	p("request %d: arrived at %.6f s (group %d), prompt %d tokens\n", l.RequestID, float64(l.ArrivalNS)/1e9, l.Group, l.Prompt)
	p("%7s %12s %6s %8s %-8s %-8s %-5s %5s %5s  %s\n", "step", "start (s)", "sched", "computed", "region", "path", "init", "row", "rows", "slot[0] at read time")
	for i := 0; i < len(l.Steps); i++ {
		s := l.Steps[i]
		if s.Preempted {
			p("%7d %12.6f PREEMPTED (recompute): blocks freed, num_computed_tokens reset to 0\n", s.Step, float64(s.StartNS)/1e9)
			continue
		}
		j := i
		for j+1 < len(l.Steps) && plainDecode(l.Steps[j+1]) && plainDecode(s) {
			j++
		}
		if j > i+1 {
			p("%7s %12s %6s %8s decode steps %d..%d (%d steps), own state each time\n", "...", "", "", "", s.Step, l.Steps[j].Step, j-i+1)
			i = j
			continue
		}
		prov := ""
		if len(s.SlotProvenance) > 0 {
			prov = fmt.Sprintf("slot %d: %s", s.Slots[0], s.SlotProvenance[0])
		}
		mark := ""
		if s.Stale {
			mark = "   <-- STALE READ"
		}
		if s.Computed == 0 && s.Path == "decode" {
			mark += "   <-- NEW REQUEST ON THE DECODE PATH"
		}
		p("%7d %12.6f %6d %8d %-8s %-8s %-5v %5d %5d  %s%s\n", s.Step, float64(s.StartNS)/1e9, s.Scheduled, s.Computed, s.Region, s.Path, s.HasInitialState, s.BatchIndex, s.BatchRows, prov, mark)
	}
	p("finished at %.6f s with %d output tokens\n", float64(l.FinishNS)/1e9, l.Outputs)
	if l.CorruptAt >= 0 {
		p("state corrupted since step %d: every later token inherits it\n", l.CorruptAt)
	}
	if len(l.Violations) > 0 {
		p("violations:\n")
		for _, v := range l.Violations {
			p("  - %s\n", v.String())
		}
	}
	if len(l.Tokens) > 0 {
		p("log-probs against the reference (prompt + these tokens, recomputed alone from zero state):\n")
		p("%6s %7s %10s %10s %10s\n", "token", "id", "engine", "reference", "|Δ|")
		for _, t := range l.Tokens {
			d := t.EngineLP - t.ReferenceLP
			if d < 0 {
				d = -d
			}
			p("%6d %7d %10.4f %10.4f %10.4f\n", t.Index, t.Token, t.EngineLP, t.ReferenceLP, d)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plainDecode(s LifeStep) bool {
	return !s.Preempted && !s.Stale && s.Path == "decode" && s.Scheduled == 1 && s.Computed > 0
}
