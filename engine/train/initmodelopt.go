package train

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// A checkpoint in NVIDIA ModelOpt's NVFP4 export layout (quant.NVFP4Profile), as
// nvidia/diffusiongemma-26B-A4B-it-NVFP4 comes (engine/weights/nvfp4.go has the
// layout and its sources): the weights the profile quantizes (quant.Profile.SpecFor)
// as ModelOpt's Linear modules (weights.ModelOptModules: experts split per expert),
// each MODULE.weight (U8, two E2M1 codes a byte), .weight_scale (F8_E4M3, one per 16
// inputs), .weight_scale_2 (F32, the module's amax / (6·448)) and .input_scale (F32,
// an activation scale Darkroom reads and ignores); the rest BF16 under their HF names;
// and hf_quant_config.json. The values are the seed's, as in every other profile: the
// same model, quantized as ModelOpt quantizes (quant.QuantizeNVFP4).

// modelOptInputScale is the input_scale written for every module: a calibrated
// activation amax of 1 (amax / (6·448)). Darkroom multiplies in float32 and ignores it.
const modelOptInputScale = float32(1.0 / (6 * 448))

// modelOptQuantConfig is the hf_quant_config.json written beside the weights: NVFP4
// in blocks of 16, and the modules the profile leaves in BF16 excluded (the LM head,
// which is the tied embedding; the self-conditioning MLP; the routers; the vision
// tower, which Darkroom neither writes nor reads).
var modelOptQuantConfig = map[string]any{
	"producer": map[string]any{"name": "modelopt", "version": "darkroom train init"},
	"quantization": map[string]any{
		"quant_algo": "NVFP4", "kv_cache_quant_algo": nil, "group_size": quant.NVFP4.GroupSize,
		"exclude_modules": []string{"lm_head", weights.DecoderPrefix + "self_conditioning*",
			"model.encoder.vision_tower*", weights.DecoderPrefix + "layers.*.router*"},
	},
}

// modelOptHeaders are the stored tensors of sp's modules (ModelOptModules), in the
// order writeInitModelOpt writes them, and their bytes.
func modelOptHeaders(sp weights.Spec) ([]weights.ModelOptModule, []safetensors.Header, int64) {
	ms := weights.ModelOptModules(sp)
	in := sp.Shape[len(sp.Shape)-1]
	var hs []safetensors.Header
	var bytes int64
	for _, m := range ms {
		hs = append(hs,
			safetensors.Header{Name: m.Name + ".weight", DType: safetensors.U8, Shape: []int{m.Rows, in / 2}},
			safetensors.Header{Name: m.Name + ".weight_scale", DType: safetensors.F8E4M3, Shape: []int{m.Rows, in / 16}},
			safetensors.Header{Name: m.Name + ".weight_scale_2", DType: safetensors.F32, Shape: []int{}},
			safetensors.Header{Name: m.Name + ".input_scale", DType: safetensors.F32, Shape: []int{}})
		bytes += int64(m.Rows*in/2+m.Rows*in/16) + 8
	}
	return ms, hs, bytes
}

// writeInitModelOpt streams t's modules to w: the values generated a chunk at a time
// (the seed's, as every profile draws them), each module quantized once its rows are
// all there — its weight_scale_2 needs its largest magnitude — with its rows split
// across GOMAXPROCS goroutines.
func writeInitModelOpt(w *safetensors.Writer, t initTensor, seed uint64) error {
	in := t.spec.Shape[len(t.spec.Shape)-1]
	var buf []float32
	next := 0
	flush := func() error {
		for next < len(t.modules) && len(buf) >= t.modules[next].Rows*in {
			m := t.modules[next]
			if err := writeModelOptModule(w, m.Name, buf[:m.Rows*in], m.Rows, in); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			buf = append(buf[:0], buf[m.Rows*in:]...)
			next++
		}
		return nil
	}
	err := eachInitChunk(t.spec, seed, func(vals []float32, _, _ int) initOut { return initOut{vals: vals} },
		func(o initOut) error {
			buf = append(buf, o.vals...)
			return flush()
		})
	if err == nil && next < len(t.modules) {
		err = fmt.Errorf("%s: %d of %d modules written", t.spec.HF, next, len(t.modules))
	}
	return err
}

// writeModelOptModule quantizes one module's values [rows, in] and writes its four
// tensors.
func writeModelOptModule(w *safetensors.Writer, name string, vals []float32, rows, in int) error {
	var amax float32
	for _, v := range vals {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	scale2 := quant.NVFP4TensorScale(amax)
	codes, fp8 := make([]byte, rows*in/2), make([]byte, rows*in/16)
	parts := min(runtime.GOMAXPROCS(0), rows)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r0, r1 := rows*p/parts, rows*(p+1)/parts
			errs[p] = quant.QuantizeNVFP4(codes[r0*in/2:r1*in/2], fp8[r0*in/16:r1*in/16], vals[r0*in:r1*in], scale2)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	f32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	for _, t := range []struct {
		suffix string
		data   []byte
	}{{".weight", codes}, {".weight_scale", fp8}, {".weight_scale_2", f32(scale2)}, {".input_scale", f32(modelOptInputScale)}} {
		if err := w.Write(name+t.suffix, t.data); err != nil {
			return err
		}
	}
	return nil
}

// writeModelOptQuantConfig writes hf_quant_config.json into dir.
func writeModelOptQuantConfig(dir string) error {
	b, err := json.MarshalIndent(modelOptQuantConfig, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, weights.HFQuantConfigFile), append(b, '\n'), 0o644)
}
