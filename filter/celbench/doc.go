// Package celbench measures Gyre's tag filters against two alternatives, in a module of
// its own so that Gyre never requires them:
//
//   - CEL (github.com/google/cel-go), a general expression language, evaluating the
//     same expressions over the same tags;
//   - github.com/quagmt/udecimal, a fixed-point decimal library, reading and comparing
//     the numbers a numeric comparison meets.
//
// Run from this directory:
//
//	go test -run '^$' -bench . -benchmem
//
// results.md holds a recorded run. The package holds only benchmarks and the tests that keep them honest (each CEL
// program must agree with the Gyre filter it is compared with).
package celbench
