package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

func init() {
	register(&Command{
		Name:    "tokenize",
		Summary: "show the token ids of a text (or the text of ids with --decode)",
		Run:     runTokenize,
	})
}

func runTokenize(env *Env, args []string) error {
	fs := newFlagSet(env, "tokenize", "[--tokenizer FILE|DIR|MODEL] [--json] (TEXT | --decode ID,ID,…)")
	tokPath := fs.String("tokenizer", "", "tokenizer.json, a model directory holding one, or a model's name as darkroom models lists it (default: the built-in "+catalog.MiniID+", as generate)")
	modelsDir := fs.String("models-dir", "", "models folder for model names (default $DARKROOM_MODELS_DIR, else the data folder)")
	asJSON := fs.Bool("json", false, `print JSON: {"ids": […]} or, with --decode, {"text": "…"}`)
	decode := fs.String("decode", "", "comma-separated token ids to turn back into text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tokPath == "" {
		*tokPath = catalog.MiniID
	}
	decoding := *decode != ""
	switch {
	case decoding && fs.NArg() > 0:
		return errors.New("tokenize: give either TEXT or --decode IDS, not both")
	case !decoding && fs.NArg() == 0:
		return errors.New("tokenize: no TEXT given (or use --decode IDS)")
	case !decoding && fs.NArg() > 1:
		return fmt.Errorf("tokenize: want one TEXT argument, got %d (quote the text)", fs.NArg())
	}
	var ids []int
	if decoding {
		var err error
		if ids, err = parseTokenIDs(*decode); err != nil {
			return fmt.Errorf("tokenize: --decode: %w", err)
		}
	}
	tok, err := loadTokenizer(*tokPath, *modelsDir)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}

	if decoding {
		for _, id := range ids {
			if _, ok := tok.Token(id); !ok {
				return fmt.Errorf("tokenize: --decode: id %d is not in the vocabulary (size %d)", id, tok.VocabSize())
			}
		}
		text := tok.Decode(ids)
		if *asJSON {
			return writeTokenizeJSON(env, struct {
				Text string `json:"text"`
			}{text})
		}
		_, err := fmt.Fprintln(env.Stdout, text)
		return err
	}

	ids = tok.Encode(fs.Arg(0))
	if *asJSON {
		if ids == nil {
			ids = []int{}
		}
		return writeTokenizeJSON(env, struct {
			IDs []int `json:"ids"`
		}{ids})
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	_, err = fmt.Fprintln(env.Stdout, strings.Join(parts, ","))
	return err
}

// loadTokenizer reads the tokenizer at path (a tokenizer.json or a folder holding
// one) or, when nothing is there, the one of the model of that name, resolved as
// the other commands' --model is.
func loadTokenizer(path, modelsDir string) (*tokenizer.Tokenizer, error) {
	if st, err := os.Stat(path); err == nil {
		if _, err := os.Stat(filepath.Join(path, "tokenizer.json")); st.IsDir() && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--tokenizer: %s has no tokenizer.json: give the folder of a model that holds one, the tokenizer.json itself, "+
				"or a model's name from `darkroom models` (e.g. --tokenizer darkroom-mini)", path)
		}
		return tokenizer.Load(path)
	}
	src, err := librarySource(path, modelsDir)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	if src.FS != nil {
		return tokenizer.LoadFS(src.FS, "tokenizer.json")
	}
	return tokenizer.Load(src.Dir)
}

// parseTokenIDs reads "2,17, 105" into ids.
func parseTokenIDs(s string) ([]int, error) {
	var ids []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, err := strconv.Atoi(f)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q is not a token id", f)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, errors.New("no ids given")
	}
	return ids, nil
}

func writeTokenizeJSON(env *Env, v any) error {
	enc := json.NewEncoder(env.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
