package bytesize_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/internal/bytesize"
)

func TestFormat(t *testing.T) {
	tests := map[uint64]string{
		0: "0B", 300: "300B", 1023: "1023B", 1024: "1KiB", 2048: "2KiB", 1536 << 20: "1.5GiB", 512 << 20: "512MiB",
		2 << 30: "2GiB", 3 << 40: "3TiB", 1<<30 + 1: "1GiB", 37<<20 + 200<<10: "37.2MiB",
	}
	for in, want := range tests {
		assert.Equal(t, want, bytesize.Format(in), "%d", in)
	}
}

func TestCompact(t *testing.T) {
	tests := map[uint64]string{
		0: "0B", 1023: "1023B", 1024: "1.0K", 1536: "1.5K", 10 << 20: "10M",
		700 << 20: "700M", 1 << 30: "1.0G", 16 << 30: "16G", 1023 << 30: "1023G", 2 << 40: "2.0T",
		3 << 50: "3.0P", 10000 << 50: "10000P",
	}
	for in, want := range tests {
		got := bytesize.Compact(in)
		assert.Equal(t, want, got, "%d", in)
	}
}
