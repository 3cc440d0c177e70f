package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/token"
)

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	return nil
}

// genConfig writes a config with fresh secrets, refusing to overwrite.
func genConfig(args []string, stdout io.Writer) error {
	fs := newFlagSet("genconfig")
	path := fs.String("c", "config.json", "file to write")
	format := fs.String("f", "", "json, yaml or toml (default: from the file extension)")
	if err := parse(fs, args); err != nil {
		return err
	}
	f := *format
	if f == "" {
		var err error
		if f, err = config.FormatOf(*path); err != nil {
			return err
		}
	}
	data, err := config.Generate().MarshalNonDefault(f)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(*path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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
	_, err = fmt.Fprintf(stdout, "wrote %s\n", *path)
	return err
}

func checkConfig(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("checkconfig")
	path := fs.String("c", "config.json", "file to check")
	allow := fs.Bool("allow-unsupported", false, "accept keys Gyre does not implement (they are ignored), e.g. while migrating from Centrifugo")
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
	// fails the check unless the user accepts it.
	if unsupported := cfg.Unsupported(); len(unsupported) > 0 && !*allow {
		for _, k := range unsupported {
			fmt.Fprintln(stderr, "unsupported:", k)
		}
		return fmt.Errorf("%s sets %d key(s) Gyre does not implement; remove them, or pass --allow-unsupported to accept that they are ignored", *path, len(unsupported))
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

func genToken(args []string, stdout io.Writer, sub bool) error {
	name := "gentoken"
	if sub {
		name = "gensubtoken"
	}
	fs := newFlagSet(name)
	path := fs.String("c", "config.json", "config with client.token.hmac_secret_key")
	user := fs.String("u", "", "user id (sub claim)")
	channel := fs.String("s", "", "channel (subscription tokens)")
	ttl := ttlFlag(defaultTokenTTL)
	fs.Var(&ttl, "t", "time to live: seconds (60) or a Go duration (1h, 90s); 0 never expires")
	if err := parse(fs, args); err != nil {
		return err
	}
	if sub && *channel == "" {
		return errors.New("gensubtoken: -s CHANNEL is required")
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

func checkToken(args []string, stdout io.Writer) error {
	fs := newFlagSet("checktoken")
	path := fs.String("c", "config.json", "config with the token keys")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("checktoken: give one token")
	}
	cfg, err := loadForTokens(*path)
	if err != nil {
		return err
	}
	t := cfg.Client.Token
	v, err := token.NewVerifier(token.Config{
		HMACSecretKey: t.HMACSecretKey, RSAPublicKey: t.RSAPublicKey, ECDSAPublicKey: t.ECDSAPublicKey,
		JWKSPublicEndpoint: t.JWKSPublicEndpoint, Audience: t.Audience, AudienceRegex: t.AudienceRegex,
		Issuer: t.Issuer, IssuerRegex: t.IssuerRegex, UserIDClaim: t.UserIDClaim,
	})
	if err != nil {
		return err
	}
	ct, err := v.VerifyConnectToken(fs.Arg(0), false)
	if err != nil {
		return err
	}
	exp := "never"
	if ct.ExpireAt > 0 {
		exp = time.Unix(ct.ExpireAt, 0).UTC().Format(time.RFC3339)
	}
	_, err = fmt.Fprintf(stdout, "valid token for user %q, expires %s\n", ct.UserID, exp)
	return err
}

func printVersion(w io.Writer) error {
	_, err := fmt.Fprintf(w, "gyre %s\n", server.Version)
	return err
}
