package tokenizer

import "unicode"

// trie matches added tokens in raw text (longest match at a position).
type trie struct {
	root  [256]int32 // first byte → node (0: none)
	nodes []trieNode
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into Tokenizer.added, -1 if no token ends here
}

func newTrie() *trie {
	return &trie{nodes: []trieNode{{token: -1}}} // node 0 is the root
}

func (t *trie) insert(s string, token int) {
	if s == "" {
		return
	}
	n := t.root[s[0]]
	if n == 0 {
		n = t.newNode()
		t.root[s[0]] = n
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		nx, ok := t.nodes[n].next[c]
		if !ok {
			nx = t.newNode()
			if t.nodes[n].next == nil {
				t.nodes[n].next = map[byte]int32{}
			}
			t.nodes[n].next[c] = nx
		}
		n = nx
	}
	t.nodes[n].token = int32(token)
}

func (t *trie) newNode() int32 {
	t.nodes = append(t.nodes, trieNode{token: -1})
	return int32(len(t.nodes) - 1)
}

// longest returns the added-token index and byte length of the longest token
// starting at text[i:], or (-1, 0).
func (t *trie) longest(text string, i int) (int, int) {
	n := t.root[text[i]]
	if n == 0 {
		return -1, 0
	}
	best, bestLen := -1, 0
	for j := i; ; {
		if tok := t.nodes[n].token; tok >= 0 {
			best, bestLen = int(tok), j-i+1
		}
		j++
		if j >= len(text) {
			break
		}
		nx, ok := t.nodes[n].next[text[j]]
		if !ok {
			break
		}
		n = nx
	}
	return best, bestLen
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r)
}
