package redis

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// Expiry of map keys. Each write of a key with a TTL scores it in its
// channel's expiry set, and files the channel in its key base's index
// under its earliest expiry. Every running MapBroker looks at the index
// of each base every mapExpireEvery and runs the expiry script
// (lua/map_expire.lua) for each channel that is due: it removes the keys
// whose time has come, each as a change. Redis runs one script at a time,
// so when several nodes do it at once each expiry still makes one change.
const (
	mapExpireEvery = 500 * time.Millisecond
	// mapExpireChannels bounds the channels one look at an index takes,
	// mapExpireBatch the keys one script call removes.
	mapExpireChannels = 100
	mapExpireBatch    = 100
	// mapExpireRounds bounds the looks at one index per tick, so that a
	// burst of expiries on one base does not hold up the others.
	mapExpireRounds = 10
)

// expireTarget is an index to look at: a key base of a Redis client.
type expireTarget struct {
	client int
	base   string
}

// expireTargets lists each base of each client once: a standalone Redis
// has one base for all its pub/sub shards, a cluster one per hash tag.
func (m *MapBroker) expireTargets() []expireTarget {
	var out []expireTarget
	for ci := range m.e.clients {
		for _, base := range slices.Compact(slices.Clone(m.e.bases)) {
			out = append(out, expireTarget{ci, base})
		}
	}
	return out
}

func (m *MapBroker) expireLoop() {
	targets := m.expireTargets()
	t := time.NewTicker(mapExpireEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		for _, tg := range targets {
			m.expireBase(tg)
		}
	}
}

// expireBase removes what is due on one base, in rounds while a round
// finds more than it takes.
func (m *MapBroker) expireBase(tg expireTarget) {
	for range mapExpireRounds {
		more, err := m.expireRound(tg)
		if err != nil {
			m.ps.logRepeated("map expire", m.ps.redisName(tg.client), slog.LevelWarn, "redis: remove expired map keys", "base", tg.base, "error", err)
			return
		}
		if !more {
			return
		}
		select {
		case <-m.stop:
			return
		default:
		}
	}
}

// expireRound runs the expiry script for the channels of the base that
// are due, pipelined; more reports that some may be left.
func (m *MapBroker) expireRound(tg expireTarget) (more bool, err error) {
	c := m.e.clients[tg.client]
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.IOTimeout)
	defer cancel()
	channels, err := execScript(ctx, mapDueScript, c, []string{tg.base + mapIndexSuffix}, []string{strconv.Itoa(mapExpireChannels)}, true).AsStrSlice()
	if err != nil {
		return false, wrapErr("map expiry index", err)
	}
	if len(channels) == 0 {
		return false, nil
	}
	command, batch := m.e.publishCommand(), strconv.Itoa(mapExpireBatch)
	cmds := make(rueidis.Commands, len(channels))
	build := func(i int, withBody bool) rueidis.Completed {
		ch := channels[i]
		args := []string{ch, tg.base + mapPubSubInfix + ch, command, batch, newEpoch(), m.ps.durableRestarts}
		return mapExpireScript.cmd(c, mapKeys(tg.base, ch), args, withBody)
	}
	for i := range channels {
		cmds[i] = build(i, false)
	}
	results := c.DoMulti(ctx, cmds...)
	// A Redis that lost its scripts: send those calls again with the
	// script. Order does not matter, a call removes only what is due.
	var again rueidis.Commands
	var againAt []int
	for i, r := range results {
		if isNoScript(r.Error()) {
			again = append(again, build(i, true))
			againAt = append(againAt, i)
		}
	}
	if len(again) > 0 {
		for k, r := range c.DoMulti(ctx, again...) {
			results[againAt[k]] = r
		}
	}
	more = len(channels) == mapExpireChannels
	for _, r := range results {
		n, err := r.AsInt64()
		if err != nil {
			return more, wrapErr("map expire", err)
		}
		more = more || n == mapExpireBatch
	}
	return more, nil
}
