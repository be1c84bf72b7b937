package backend

import (
	"statesim/sched"
	"statesim/sim"
)

// Backend executes classified batches. Execute sees rows in the reordered
// order with NumComputed as the model runner sees it (before the step) and
// the requests' block tables already grown for the step's tokens.
type Backend interface {
	Name() string
	Execute(out *sched.Output, now sim.Time) error
}
