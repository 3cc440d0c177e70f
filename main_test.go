package gyre_test

import (
	"testing"

	"github.com/gyrehq/gyre/internal/enginetest"
)

// TestMain stops the Redis servers that the engine tests share.
func TestMain(m *testing.M) { enginetest.Main(m) }
