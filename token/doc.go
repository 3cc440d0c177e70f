// Package token verifies the JSON Web Tokens that clients present: connection
// tokens, which authenticate a connection, and subscription tokens, which
// authorize one subscription. The claims are those of the Centrifugo protocol
// (sub, exp, expire_at, info, b64info, channels, subs, meta, channel,
// override ...), so tokens minted for Centrifugo verify here unchanged.
//
// # Keys and algorithms
//
// A [Verifier] accepts an algorithm family only when it holds a key of that
// family: HS256/384/512 need [Config.HMACSecretKey], RS* and PS* need
// [Config.RSAPublicKey], ES* need [Config.ECDSAPublicKey] (and only the ES
// variant that matches its curve). This closes the classic confusion attack
// where a token is MAC'ed with the public RSA key as an HMAC secret. The
// "none" algorithm is never accepted.
//
// When [Config.JWKSPublicEndpoint] is set, every token is verified with a key
// from that JSON Web Key Set, chosen by the token's "kid" header, and the
// static keys are not consulted (as in Centrifugo). RSA, EC (P-256/384/521)
// and OKP (Ed25519) keys are understood. Key sets are cached for an hour and
// fetched again early when a token names an unknown kid, at most once per
// refresh interval per endpoint, with a one second timeout and one retry.
// A set older than an hour that cannot be fetched again verifies nothing
// until the endpoint answers: stale keys are not trusted.
// The endpoint may be a template such as
// "https://idp/{{realm}}/certs" whose variables come from the named groups of
// [Config.IssuerRegex] or [Config.AudienceRegex]; keys are cached per
// resolved endpoint, so a kid known for one issuer never verifies a token of
// another.
//
// # Time
//
// A token whose exp lies in the past yields [ErrTokenExpired] unless the
// caller asks to skip that check (as the refresh flow does); one whose nbf
// lies in the future yields [ErrTokenNotValidYet], whatever the caller asks;
// iat is not checked. Neither wraps [ErrInvalidToken], and both are reported
// only for a token whose signature, audience and issuer hold, so that a
// caller can treat them as "ask again later, or with a fresh token" (the
// engine answers both with error 109, as Centrifugo does) and everything
// else as "refuse". The other claims are checked after the time, as in
// Centrifugo: an expired token with a bad b64info yields ErrTokenExpired. No
// clock leeway is applied: exp == now is still valid, now > exp is expired,
// matching golang-jwt's defaults. The expire_at claim, when
// present, only decides when the connection or subscription expires (0:
// never); it does not affect verification, and acting on it is the caller's
// business.
//
// # Concurrency
//
// A Verifier is immutable after [NewVerifier] and safe for concurrent use.
// To apply new keys, build a new Verifier and swap it in (for example with an
// atomic.Pointer); verifications in flight finish with the old one. The only
// mutable state inside is the JWKS cache, which has its own locking and whose
// fast path takes no lock.
//
// # Performance
//
// Verification costs the signature check plus decoding the header and
// claims JSON, and for HMAC the JSON dominates: HS256 takes about 10-15µs and
// 48 allocations on one core of a shared 2-core EPYC, i.e. tens of thousands
// of tokens per second; RS256 (2048-bit) about 50µs, ES256 about 110µs (see
// bench_test.go). Tokens longer than [DefaultMaxTokenLength] (or [Config].MaxLength) are refused before any
// decoding, bounding the work an unauthenticated peer can cause.
package token
