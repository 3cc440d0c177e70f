package config

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadPEM returns PEM data given inline, as base64 of PEM, or as the path of
// a PEM file, tried in that order: the key options of Centrifugo accept all
// three.
func ReadPEM(value string) ([]byte, error) {
	if strings.Contains(value, "-----BEGIN") {
		return []byte(value), nil
	}
	if decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value)); err == nil && hasPEM(decoded) {
		return decoded, nil
	}
	data, err := os.ReadFile(value)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("not PEM, base64 of PEM, or an existing file")
		}
		return nil, fmt.Errorf("read PEM file: %w", err)
	}
	if !hasPEM(data) {
		return nil, fmt.Errorf("file %s holds no PEM data", value)
	}
	return data, nil
}

func hasPEM(data []byte) bool {
	block, _ := pem.Decode(bytes.TrimSpace(data))
	return block != nil
}
