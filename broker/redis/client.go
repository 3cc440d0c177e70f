package redis

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/redis/rueidis"
)

// clientOptions returns the rueidis options of every Redis client the
// engine needs: one per standalone address, or one for the cluster or the
// Sentinel-watched master.
func (c Config) clientOptions() ([]rueidis.ClientOption, error) {
	switch c.mode() {
	case modeSentinel:
		opt := c.baseOption(c.SentinelAddresses)
		opt.Sentinel = rueidis.SentinelOption{
			Dialer:     opt.Dialer,
			TLSConfig:  c.SentinelTLS,
			MasterSet:  c.SentinelMasterName,
			Username:   c.SentinelUser,
			Password:   c.SentinelPassword,
			ClientName: c.SentinelClientName,
		}
		return []rueidis.ClientOption{opt}, nil
	case modeCluster:
		opt := c.baseOption(c.ClusterAddresses)
		opt.SelectDB = 0 // a cluster has database 0 only
		opt.ShuffleInit = true
		return []rueidis.ClientOption{opt}, nil
	}
	opts := make([]rueidis.ClientOption, 0, len(c.Addresses))
	seen := make(map[string]bool)
	for _, addr := range c.Addresses {
		opt, err := c.standaloneOption(addr)
		if err != nil {
			return nil, err
		}
		if seen[opt.InitAddress[0]] {
			return nil, fmt.Errorf("redis: address %q listed twice", addr)
		}
		seen[opt.InitAddress[0]] = true
		opts = append(opts, opt)
	}
	return opts, nil
}

func (c Config) baseOption(addrs []string) rueidis.ClientOption {
	return rueidis.ClientOption{
		// A copy: rueidis shuffles the seed addresses of a cluster in
		// place, which would reorder the caller's Config and race with
		// another engine made from the same one.
		InitAddress:      slices.Clone(addrs),
		Username:         c.User,
		Password:         c.Password,
		ClientName:       c.ClientName,
		SelectDB:         c.DB,
		TLSConfig:        c.TLS,
		Dialer:           net.Dialer{Timeout: c.ConnectTimeout},
		ConnWriteTimeout: c.IOTimeout,
		DisableCache:     true,
		AlwaysRESP2:      c.ForceRESP2,
	}
}

// standaloneOption reads one entry of Config.Addresses: host:port, or a
// redis:// or rediss:// URL whose user, password, database and TLS
// override the Config's.
func (c Config) standaloneOption(addr string) (rueidis.ClientOption, error) {
	opt := c.baseOption([]string{addr})
	opt.ForceSingleClient = true
	if !strings.Contains(addr, "://") {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return opt, fmt.Errorf("redis: address %q: %w", addr, err)
		}
		return opt, nil
	}
	u, err := rueidis.ParseURL(addr)
	if err != nil {
		return opt, fmt.Errorf("redis: address %q: %w", addr, err)
	}
	if u.DialCtxFn != nil {
		return opt, fmt.Errorf("redis: address %q: unix sockets are not supported", addr)
	}
	opt.InitAddress = u.InitAddress
	if u.Username != "" {
		opt.Username = u.Username
	}
	if u.Password != "" {
		opt.Password = u.Password
	}
	if u.SelectDB != 0 {
		opt.SelectDB = u.SelectDB
	}
	if u.TLSConfig != nil && opt.TLSConfig == nil {
		opt.TLSConfig = u.TLSConfig
	}
	return opt, nil
}
