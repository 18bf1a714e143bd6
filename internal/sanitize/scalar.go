package sanitize

import (
	"errors"
	"strconv"
	"strings"
)

// ambiguousPlainScalar reports whether s, written unquoted, would be read
// back as something other than a string by a YAML 1.2 reader (yaml.v3) or a
// YAML 1.1 reader (go-yaml v2 behind sigs.k8s.io/yaml, used by kubectl and
// kustomize). Quoting more than strictly needed is harmless; quoting less
// turns a ConfigMap value like "on" or "12:30" into a bool or an int.
func ambiguousPlainScalar(s string) bool {
	if s == "" {
		return true
	}
	switch strings.ToLower(s) {
	case "~", "null", "true", "false", "y", "yes", "n", "no", "on", "off", "<<", "=",
		".nan", ".inf", "+.inf", "-.inf":
		return true
	}
	switch c := s[0]; {
	case c >= '0' && c <= '9', c == '+', c == '-', c == '.':
		return looksNumeric(s) || looksSexagesimal(s) || looksLikeDate(s)
	}
	return false
}

// looksNumeric covers decimal, octal, hex and binary integers and floats,
// with the underscores YAML 1.1 allows.
func looksNumeric(s string) bool {
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseFloat(plain, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return true
	}
	_, err := strconv.ParseInt(plain, 0, 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// looksSexagesimal covers YAML 1.1 base-60 numbers such as 12:30 (read as
// 750) and 1:20:30.5.
func looksSexagesimal(s string) bool {
	body := strings.TrimLeft(s, "+-")
	if body == "" || body[0] < '0' || body[0] > '9' || !strings.Contains(body, ":") {
		return false
	}
	for _, c := range body {
		if !strings.ContainsRune("0123456789:_.", c) {
			return false
		}
	}
	return true
}

// looksLikeDate covers YAML timestamps (2024-01-02, 2024-1-2T10:00:00Z),
// which readers turn into time values and re-render differently.
func looksLikeDate(s string) bool {
	if len(s) < 8 || s[4] != '-' {
		return false
	}
	for _, c := range s[:4] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
