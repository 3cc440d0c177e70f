package pgoutbox

import (
	"time"

	"github.com/gyrehq/gyre/server/consume"
)

// SetLagInterval has c, a consumer of New not running yet, count its lag
// every d rather than every lagInterval.
func SetLagInterval(c consume.Consumer, d time.Duration) { c.(*Consumer).lagEvery = d }
