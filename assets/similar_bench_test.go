package assets

import "testing"

// BenchmarkSimilarMini times one Similar lookup over the built-in Mini's
// 17,227 entries, as a typo's page or chat answer asks it
// (go test ./assets -run XXX -bench SimilarMini).
func BenchmarkSimilarMini(b *testing.B) {
	fsys, err := Mini()
	if err != nil {
		b.Skip(err)
	}
	l, err := ReadLeads(fsys)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.Similar("operating sytem", 3)
	}
}
