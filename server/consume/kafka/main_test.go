package kafka_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/consume/consumetest"
)

func TestMain(m *testing.M) { consumetest.Main(m) }
