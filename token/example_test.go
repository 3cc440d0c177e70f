package token_test

import (
	"errors"
	"fmt"

	"github.com/gyrehq/gyre/token"
)

func Example() {
	v, err := token.NewVerifier(token.Config{HMACSecretKey: "secret"})
	if err != nil {
		panic(err)
	}
	tok, err := token.SignHMAC("HS256", []byte("secret"), map[string]any{
		"sub":      "42",
		"info":     map[string]string{"name": "Ann"},
		"channels": []string{"news"},
	})
	if err != nil {
		panic(err)
	}
	ct, err := v.VerifyConnectToken(tok, false)
	switch {
	case errors.Is(err, token.ErrTokenExpired), errors.Is(err, token.ErrTokenNotValidYet):
		fmt.Println("ask the client to refresh")
	case err != nil:
		fmt.Println("refuse:", err)
	default:
		fmt.Println(ct.UserID, string(ct.Info), ct.Channels, ct.ExpireAt)
	}
	// Output: 42 {"name":"Ann"} [news] 0
}
