package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrecedes(t *testing.T) {
	cases := []struct {
		name     string
		last, rv string
		want     bool
	}{
		{"an older version", "10", "11", true},
		{"nothing known", "", "11", false},
		{"the same version, re-delivered", "11", "11", false},
		{"a newer version, listed after the event", "12", "11", false},
		{"versions that are not numbers: any other one", "b", "a", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, precedes(tc.last, tc.rv))
		})
	}
}
