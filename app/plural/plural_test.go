package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 forward passes"}, {1, "1 forward pass"}, {2, "2 forward passes"}, {-1, "-1 forward passes"}, {1000, "1000 forward passes"}} {
		if got := Count(c.n, "forward pass", "forward passes"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
