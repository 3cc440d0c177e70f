package redis

import (
	"context"
	_ "embed"

	"github.com/redis/rueidis"
)

var (
	//go:embed lua/occupancy_common.lua
	occupancyCommonLua string
	//go:embed lua/occupancy_hold.lua
	occupancyHoldLua string
	//go:embed lua/occupancy_release.lua
	occupancyReleaseLua string
	//go:embed lua/occupancy_lease.lua
	occupancyLeaseLua string
	//go:embed lua/occupancy_poll.lua
	occupancyPollLua string
	//go:embed lua/occupancy_ack.lua
	occupancyAckLua string
)

// The occupancy scripts, sent by EVALSHA, alone or pipelined, and by EVAL
// to a Redis that does not know them (see occupancyCall).
var (
	occupancyHoldScript    = newPipelinedScript(occupancyCommonLua + occupancyHoldLua)
	occupancyReleaseScript = newPipelinedScript(occupancyCommonLua + occupancyReleaseLua)
	occupancyLeaseScript   = newPipelinedScript(occupancyCommonLua + occupancyLeaseLua)
	occupancyPollScript    = newPipelinedScript(occupancyCommonLua + occupancyPollLua)
	occupancyAckScript     = newPipelinedScript(occupancyCommonLua + occupancyAckLua)
)

// occupancyCall is one script call in a partition.
type occupancyCall struct {
	p      *occupancyPartition
	script *pipelinedScript
	keys   []string
	args   []string
}

// do runs one call.
func (c occupancyCall) do(ctx context.Context) rueidis.RedisResult {
	cl := c.p.client
	res := cl.Do(ctx, c.script.cmd(cl, c.keys, c.args, false))
	if isNoScript(res.Error()) {
		res = cl.Do(ctx, c.script.cmd(cl, c.keys, c.args, true))
	}
	return res
}

// doAll runs calls pipelined, one pipeline per Redis client, and returns
// their results in the order of calls. Redis runs a client's calls in
// order; a call that found the script unknown (a restarted Redis) is sent
// again with the script, after the others: the occupancy calls of one
// pipeline never depend on each other's order.
func doAll(ctx context.Context, calls []occupancyCall) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(calls))
	byClient := make(map[rueidis.Client][]int)
	var clients []rueidis.Client
	for i, c := range calls {
		if _, ok := byClient[c.p.client]; !ok {
			clients = append(clients, c.p.client)
		}
		byClient[c.p.client] = append(byClient[c.p.client], i)
	}
	for _, cl := range clients {
		idx := byClient[cl]
		cmds := make(rueidis.Commands, len(idx))
		for j, i := range idx {
			c := calls[i]
			cmds[j] = c.script.cmd(cl, c.keys, c.args, false)
		}
		var again rueidis.Commands
		var againAt []int
		for j, r := range cl.DoMulti(ctx, cmds...) {
			out[idx[j]] = r
			if isNoScript(r.Error()) {
				c := calls[idx[j]]
				again = append(again, c.script.cmd(cl, c.keys, c.args, true))
				againAt = append(againAt, idx[j])
			}
		}
		if len(again) > 0 {
			for k, r := range cl.DoMulti(ctx, again...) {
				out[againAt[k]] = r
			}
		}
	}
	return out
}
