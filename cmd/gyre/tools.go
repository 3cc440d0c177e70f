package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/token"
)

// synopses are the first lines of each subcommand's -h; the flags follow.
var synopses = map[string]string{
	"genconfig":     "gyre genconfig [-c FILE] [-f json|yaml|toml]\n\nWrite a config with fresh secrets (never over an existing file). Without -c the file is\nconfig.json, config.yaml or config.toml after -f.",
	"checkconfig":   "gyre checkconfig [-c FILE]\n\nValidate a config file with the environment (GYRE_*, CENTRIFUGO_*) applied; exit 1 when it is invalid.",
	"defaultconfig": "gyre defaultconfig [-f json|yaml|toml]\n\nPrint every key with its default value.",
	"gentoken":      "gyre gentoken -u USER [-t TTL] [-c FILE]\n\nPrint an HS256 connection token signed with client.token.hmac_secret_key.\nWithout -u the token is anonymous (empty user).",
	"gensubtoken":   "gyre gensubtoken -u USER -s CHANNEL [-t TTL] [-c FILE]\n\nPrint an HS256 subscription token, signed with client.subscription_token.hmac_secret_key\nwhen client.subscription_token.enabled, else client.token.hmac_secret_key.",
	"checktoken":    "gyre checktoken [-c FILE] TOKEN\n\nVerify a connection token with the config's client.token keys; print its claims or the error.",
	"checksubtoken": "gyre checksubtoken [-c FILE] TOKEN\n\nVerify a subscription token with the config's keys (client.subscription_token when enabled,\nelse client.token); print its claims or the error.",
	"health":        "gyre health [--url URL] [-c FILE] [--timeout 5s]\n\nAsk a running server's health endpoint whether it can serve: exit 0 when it answers 200, 1\notherwise, with the reason. For images without curl (the container's HEALTHCHECK). Without\n--url the URL comes from the config: its port (the internal port when set), TLS and\nhealth.handler_prefix, on the loopback address, with the environment (GYRE_*) applied;\nwithout -c, from the defaults: http://127.0.0.1:8000/health. Over https to a URL taken from\nthe config the certificate is not verified (it names no loopback address; nothing secret is\nsent). health.enabled must be on in the server's config.",
	"filter":        "gyre filter [-format] 'EXPR'\n\nPrint the tags filter tree (the tf of a subscribe) of an expression; with -format, read a\ntree and print it as an expression.",
}

// helpRequested is returned by parse for -h or --help: run prints the text
// on stdout and exits 0.
type helpRequested struct{ text string }

func (h *helpRequested) Error() string { return "help requested" }

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpRequested{text: flagUsage(fs)}
		}
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	return nil
}

// flagUsage is the synopsis of fs's subcommand followed by its flags.
func flagUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n", synopses[fs.Name()])
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return b.String()
}

// genConfig writes a config with fresh secrets, refusing to overwrite.
func genConfig(args []string, stdout io.Writer) error {
	fs := newFlagSet("genconfig")
	var path, format string
	fs.StringVar(&path, "c", "", "`file` to write (default config.json, or config.yaml/config.toml after -f)")
	fs.StringVar(&path, "config", "", "same as -c")
	fs.StringVar(&format, "f", "", "json, yaml or toml (default: from the file extension, else json)")
	fs.StringVar(&format, "format", "", "same as -f")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("genconfig: unexpected argument %q (the file goes after -c)", fs.Arg(0))
	}
	f := format
	switch {
	case path == "" && f == "":
		path, f = "config.json", "json"
	case path == "":
		ext := f
		if ext == "yml" {
			ext = "yaml"
		}
		path = "config." + ext
	case f == "":
		var err error
		if f, err = config.FormatOf(path); err != nil {
			return err
		}
	}
	data, err := config.Generate().MarshalNonDefault(f)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("genconfig: %w", err)
	}
	if _, err := out.Write(data); err != nil {
		out.Close()
		return fmt.Errorf("genconfig: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("genconfig: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "wrote %s\n", path)
	return err
}

func checkConfig(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("checkconfig")
	path := fs.String("c", "config.json", "file to check")
	allow := fs.Bool("allow-unsupported", false, "accept keys Gyre does not implement (they are ignored), e.g. while migrating from Centrifugo")
	fs.StringVar(path, "config", "config.json", "same as -c")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, warnings, err := config.Resolve(config.Sources{File: *path, Environ: os.Environ()})
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err != nil {
		return err
	}
	// A key that would change what Centrifugo does but that Gyre ignores
	// makes the server behave differently from what the file says: that
	// fails the check unless the user accepts it. The warnings above
	// named each, once.
	if unsupported := cfg.Unsupported(); len(unsupported) > 0 && !*allow {
		return fmt.Errorf("%s sets %d key(s) Gyre does not implement (see the warnings above); remove them, or pass --allow-unsupported to accept that they are ignored", *path, len(unsupported))
	}
	_, err = fmt.Fprintf(stdout, "%s is valid\n", *path)
	return err
}

func defaultConfig(args []string, stdout io.Writer) error {
	fs := newFlagSet("defaultconfig")
	format := fs.String("f", "json", "json, yaml or toml")
	if err := parse(fs, args); err != nil {
		return err
	}
	data, err := config.Default().Marshal(*format)
	if err != nil {
		return err
	}
	_, err = stdout.Write(data)
	return err
}

// loadForTokens reads the config whose keys sign or check tokens.
func loadForTokens(path string) (*config.Config, error) {
	cfg, _, err := config.Resolve(config.Sources{File: path, Environ: os.Environ()})
	return cfg, err
}

func genToken(args []string, stdout, stderr io.Writer, sub bool) error {
	name := "gentoken"
	if sub {
		name = "gensubtoken"
	}
	fs := newFlagSet(name)
	path := fs.String("c", "config.json", "config with client.token.hmac_secret_key")
	fs.StringVar(path, "config", "config.json", "same as -c")
	user := fs.String("u", "", "user id (sub claim)")
	fs.StringVar(user, "user", "", "same as -u")
	quiet := fs.Bool("q", false, "no warning about an anonymous token")
	fs.BoolVar(quiet, "quiet", false, "same as -q")
	channel := new(string)
	if sub {
		fs.StringVar(channel, "s", "", "`channel` the token allows")
		fs.StringVar(channel, "channel", "", "same as -s")
	}
	ttl := ttlFlag(defaultTokenTTL)
	fs.Var(&ttl, "t", "time to live: seconds (60) or a Go duration (1h, 90s); 0 never expires")
	fs.Var(&ttl, "ttl", "same as -t")
	if err := parse(fs, args); err != nil {
		return err
	}
	if sub && *channel == "" {
		return errors.New("gensubtoken: -s CHANNEL is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
	}
	if *user == "" && !*quiet {
		// An empty sub is a valid claim, so this is no error; but a
		// forgotten -u gives a token that connects as nobody.
		fmt.Fprintf(stderr, "warning: no -u USER: the token is anonymous (empty user)\n")
	}
	cfg, err := loadForTokens(*path)
	if err != nil {
		return err
	}
	secret := cfg.Client.Token.HMACSecretKey
	if sub && cfg.Client.SubscriptionToken.Enabled {
		secret = cfg.Client.SubscriptionToken.HMACSecretKey
	}
	if secret == "" {
		return fmt.Errorf("%s: no HMAC secret key in %s (client.token.hmac_secret_key)", name, *path)
	}
	claims := map[string]any{"sub": *user}
	if ttl > 0 {
		claims["exp"] = time.Now().Add(time.Duration(ttl)).Unix()
	}
	if sub {
		claims["channel"] = *channel
	}
	tok, err := token.SignHMAC("HS256", []byte(secret), claims)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

// defaultTokenTTL is the life of a generated token without -t, a week, as
// with Centrifugo's gentoken.
const defaultTokenTTL = 7 * 24 * time.Hour

// ttlFlag is the -t of gentoken and gensubtoken. A bare integer is seconds,
// as Centrifugo's gentoken reads it (-t 60), so that scripts written for it
// keep their meaning; anything else is a Go duration (-t 1h, -t 90s). Zero
// or less means a token that never expires.
type ttlFlag time.Duration

func (f *ttlFlag) String() string { return time.Duration(*f).String() }

func (f *ttlFlag) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > maxTTLSeconds || n < -maxTTLSeconds {
			return fmt.Errorf("%d seconds is out of range", n)
		}
		*f = ttlFlag(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is neither seconds (60) nor a duration (1h, 90s)", s)
	}
	*f = ttlFlag(d)
	return nil
}

// maxTTLSeconds is the longest -t in seconds that a time.Duration holds
// (about 292 years).
const maxTTLSeconds = math.MaxInt64 / int64(time.Second)

func checkToken(args []string, stdout io.Writer, sub bool) error {
	name := "checktoken"
	if sub {
		name = "checksubtoken"
	}
	fs := newFlagSet(name)
	path := fs.String("c", "config.json", "config with the token keys")
	fs.StringVar(path, "config", "config.json", "same as -c")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%s: give one token", name)
	}
	cfg, err := loadForTokens(*path)
	if err != nil {
		return err
	}
	keys := cfg.Client.Token
	if sub && cfg.Client.SubscriptionToken.Enabled {
		keys = cfg.Client.SubscriptionToken.Token
	}
	v, err := token.NewVerifier(verifierConfig(keys))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if sub {
		st, err := v.VerifySubscribeToken(fs.Arg(0), false)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "valid subscription token for user %q, channel %q, expires %s\n", st.UserID, st.Channel, expiry(st.ExpireAt))
		if err == nil && len(st.Info) > 0 {
			_, err = fmt.Fprintf(stdout, "info: %s\n", st.Info)
		}
		if err == nil && len(st.Data) > 0 {
			_, err = fmt.Fprintf(stdout, "data: %s\n", st.Data)
		}
		return err
	}
	ct, err := v.VerifyConnectToken(fs.Arg(0), false)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "valid token for user %q, expires %s\n", ct.UserID, expiry(ct.ExpireAt))
	if err == nil && len(ct.Info) > 0 {
		_, err = fmt.Fprintf(stdout, "info: %s\n", ct.Info)
	}
	if err == nil && len(ct.Channels) > 0 {
		_, err = fmt.Fprintf(stdout, "channels: %s\n", strings.Join(ct.Channels, ", "))
	}
	return err
}

// verifierConfig is the token package's view of a config's token keys.
func verifierConfig(t config.Token) token.Config {
	return token.Config{
		HMACSecretKey: t.HMACSecretKey, RSAPublicKey: t.RSAPublicKey, ECDSAPublicKey: t.ECDSAPublicKey,
		JWKSPublicEndpoint: t.JWKSPublicEndpoint, Audience: t.Audience, AudienceRegex: t.AudienceRegex,
		Issuer: t.Issuer, IssuerRegex: t.IssuerRegex, UserIDClaim: t.UserIDClaim,
	}
}

// expiry is a token's expiry time for people: "never" or RFC 3339 UTC.
func expiry(at int64) string {
	if at <= 0 {
		return "never"
	}
	return time.Unix(at, 0).UTC().Format(time.RFC3339)
}

func printVersion(w io.Writer) error {
	_, err := fmt.Fprintf(w, "gyre %s\n", server.Version)
	return err
}
