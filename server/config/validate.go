package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Validate checks every key and the rules between keys, and reports all
// problems at once, one KeyError per line.
func (c *Config) Validate() error {
	v := &validator{}
	v.limits("", reflect.ValueOf(c).Elem())
	v.client(c)
	v.channel(c)
	v.backends(c)
	v.mapBroker(c)
	v.endpoints(c)
	v.proxies(c)
	v.sharedPoll(c)
	v.eventHooks(c)
	v.consumers(c)
	return errors.Join(v.errs...)
}

type validator struct {
	errs []error
}

func (v *validator) fail(path string, format string, args ...any) {
	v.errs = append(v.errs, keyErr(path, fmt.Errorf(format, args...)))
}

// limits checks what the struct tags declare: min, max, enum, precision,
// nonempty, refused, and that handler prefixes are paths.
func (v *validator) limits(path string, s reflect.Value) {
	for _, f := range fieldsOf(s.Type()) {
		p := joinPath(path, f.key)
		fv := s.FieldByIndex(f.index)
		if f.refused != "" && !fv.IsZero() {
			v.fail(p, "not supported: %s", f.refused)
		}
		switch f.kind {
		case kindStruct:
			v.limits(p, fv)
		case kindStructs:
			for i := range fv.Len() {
				v.limits(p+"["+strconv.Itoa(i)+"]", fv.Index(i))
			}
		case kindInt:
			v.intLimits(p, f, fv.Int())
		case kindDuration:
			v.durationLimits(p, f, time.Duration(fv.Int()))
		case kindString:
			v.stringLimits(p, f, fv.String())
		case kindStrings:
			for _, item := range fv.Interface().([]string) {
				if f.enum != nil && !slices.Contains(f.enum, item) {
					v.fail(p, "unknown value %q (allowed: %s)", item, strings.Join(f.enum, ", "))
				}
			}
		}
	}
}

func (v *validator) intLimits(path string, f field, n int64) {
	lo := int64(0)
	if f.min != "" {
		lo, _ = strconv.ParseInt(f.min, 10, 64)
	}
	if n < lo {
		v.fail(path, "%d is less than %d", n, lo)
	}
	if f.max != "" {
		if hi, _ := strconv.ParseInt(f.max, 10, 64); n > hi {
			v.fail(path, "%d is greater than %d", n, hi)
		}
	}
}

func (v *validator) durationLimits(path string, f field, d time.Duration) {
	lo := time.Duration(0)
	if f.min != "" {
		lo, _ = time.ParseDuration(f.min)
	}
	switch {
	case d < lo && lo > 0:
		v.fail(path, "must be positive, got %s", d)
	case d < lo:
		v.fail(path, "must not be negative, got %s", d)
	}
	if f.precision != "" {
		unit, _ := time.ParseDuration(f.precision)
		if d%unit != 0 {
			v.fail(path, "%s is finer than the supported precision of %s", d, unit)
		}
	}
}

func (v *validator) stringLimits(path string, f field, s string) {
	if f.enum != nil && !slices.Contains(f.enum, s) {
		v.fail(path, "unknown value %q (allowed: %s)", s, describeEnum(f.enum))
	}
	if f.nonEmpty && s == "" {
		v.fail(path, "must not be empty")
	}
	if f.key == "handler_prefix" && s != "" && !strings.HasPrefix(s, "/") {
		v.fail(path, "must start with '/', got %q", s)
	}
}

func describeEnum(enum []string) string {
	out := make([]string, len(enum))
	for i, e := range enum {
		out[i] = strconv.Quote(e)
	}
	return strings.Join(out, ", ")
}

// namespaceName is what Centrifugo accepts as a namespace name.
var namespaceName = regexp.MustCompile(`^[-a-zA-Z0-9_.]{2,}$`)

func (v *validator) channel(c *Config) {
	ch := &c.Channel
	v.channelOptions("channel.without_namespace", &ch.WithoutNamespace, ch)
	seen := map[string]int{}
	for i, ns := range ch.Namespaces {
		p := "channel.namespaces[" + strconv.Itoa(i) + "]"
		switch first, dup := seen[ns.Name]; {
		case !namespaceName.MatchString(ns.Name):
			v.fail(p+".name", "invalid namespace name %q: must match %s", ns.Name, namespaceName)
		case dup:
			v.fail(p+".name", "namespace %q is already defined at channel.namespaces[%d]", ns.Name, first)
		default:
			seen[ns.Name] = i
		}
		v.channelOptions(p, &ns.ChannelOptions, ch)
	}
	pc := &c.Client.SubscribeToUserPersonalChannel
	if !pc.Enabled {
		return
	}
	opts := &ch.WithoutNamespace
	if pc.PersonalChannelNamespace != "" {
		i, ok := seen[pc.PersonalChannelNamespace]
		if !ok {
			v.fail("client.subscribe_to_user_personal_channel.personal_channel_namespace", "namespace %q is not defined in channel.namespaces", pc.PersonalChannelNamespace)
			return
		}
		opts = &ch.Namespaces[i].ChannelOptions
	}
	if pc.SingleConnection && !opts.Presence {
		v.fail("client.subscribe_to_user_personal_channel.single_connection", "needs presence in the personal channel's namespace")
	}
}

func (v *validator) channelOptions(path string, o *ChannelOptions, ch *Channel) {
	switch {
	case o.HistorySize > 0 && o.HistoryTTL <= 0:
		v.fail(path+".history_ttl", "must be set when history_size is set")
	case o.HistorySize == 0 && o.HistoryTTL > 0:
		v.fail(path+".history_size", "must be set when history_ttl is set")
	}
	metaTTL := ch.HistoryMetaTTL
	if o.HistoryMetaTTL != 0 {
		metaTTL = o.HistoryMetaTTL
	}
	if o.HistoryTTL > metaTTL {
		v.fail(path+".history_ttl", "%s is longer than history_meta_ttl (%s)", o.HistoryTTL, metaTTL)
	}
	if o.ForceRecovery && o.HistorySize == 0 {
		v.fail(path+".force_recovery", "needs history (history_size and history_ttl)")
	}
	v.regex(path+".channel_regex", o.ChannelRegex)
	v.mapOptions(path, o)
	v.mapPresencePrefixes(path, o, ch)
}
