package model

import (
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/model/naive"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// TestGraphVsNaive runs the batched trainer-facing graph functions (Encoder, Decoder
// without and with self-conditioning, Logits, SoftEmbedding) on a padded batch of two
// prompts longer than the sliding window and compares every real logit against the
// float64 reference.
func TestGraphVsNaive(t *testing.T) {
	for _, storage := range []dtypes.DType{dtypes.Float32, dtypes.BFloat16} {
		t.Run(storage.String(), func(t *testing.T) {
			cfg := tinyConfig()
			w, nm := randomModel(t, cfg, 1, storage)
			backend := newBackend(t)
			ctx := newContext(t, w)
			rng := rand.New(rand.NewPCG(3, 4))
			const T, C = 10, 6
			lens := []int{10, 7}
			temp := float32(0.7)

			tokens := make([]int32, 2*T)
			valid := make([]bool, 2*T)
			pos := make([]int32, 2*T)
			canvas := make([]int32, 2*C)
			cpos := make([]int32, 2*C)
			var prompts, canvases [][]int
			for b := range 2 {
				pr := randTokens(rng, lens[b], cfg.VocabSize)
				cv := randTokens(rng, C, cfg.VocabSize)
				prompts, canvases = append(prompts, pr), append(canvases, cv)
				for j := range T {
					pos[b*T+j] = int32(j)
					if j < lens[b] {
						tokens[b*T+j], valid[b*T+j] = int32(pr[j]), true
					} else {
						tokens[b*T+j] = 0 // padding: must not influence anything
					}
				}
				for j := range C {
					canvas[b*C+j], cpos[b*C+j] = int32(cv[j]), int32(lens[b]+j)
				}
			}
			exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, tok, pos, valid, cv, cpos, temp *Node) []*Node {
				p := NewParams(ctx, tok.Graph(), cfg)
				h, kv := Encoder(p, tok, pos, valid)
				enc := Logits(p, h)
				d1 := Logits(p, Decoder(p, cv, cpos, nil, kv, nil))
				soft := SoftEmbedding(p, d1, temp)
				d2 := Logits(p, Decoder(p, cv, cpos, soft, kv, valid))
				return []*Node{enc, d1, soft, d2}
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Exec(
				tensors.FromFlatDataAndDimensions(tokens, 2, T), tensors.FromFlatDataAndDimensions(pos, 2, T),
				tensors.FromFlatDataAndDimensions(valid, 2, T), tensors.FromFlatDataAndDimensions(canvas, 2, C),
				tensors.FromFlatDataAndDimensions(cpos, 2, C), temp)
			if err != nil {
				t.Fatal(err)
			}
			enc, d1 := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
			soft, d2 := tensors.MustCopyFlatData[float32](out[2]), tensors.MustCopyFlatData[float32](out[3])
			v, d := cfg.VocabSize, cfg.HiddenSize
			for b := range 2 {
				cache := &naive.Cache{}
				wantEnc := nm.Encode(cache, prompts[b])
				wantD1 := nm.Decode(cache, canvases[b], nil)
				wantSoft := nm.SoftEmbedding(wantD1, float64(temp))
				wantD2 := nm.Decode(cache, canvases[b], wantSoft)
				checks := []struct {
					name string
					got  []float32
					want []float64
				}{
					{"encoder", enc[b*T*v : (b*T+lens[b])*v], flat(wantEnc)},
					{"decoder", d1[b*C*v : (b+1)*C*v], flat(wantD1)},
					{"soft", soft[b*C*d : (b+1)*C*d], flat(wantSoft)},
					{"decoder+selfcond", d2[b*C*v : (b+1)*C*v], flat(wantD2)},
				}
				for _, c := range checks {
					e := relErr(c.got, c.want)
					t.Logf("batch %d %s: max rel err %.2e", b, c.name, e)
					if e > 1e-4 {
						t.Errorf("batch %d %s: max relative error %.3e > 1e-4", b, c.name, e)
					}
				}
			}
		})
	}
}
