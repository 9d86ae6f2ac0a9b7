// Package hub is a small client for the Hugging Face Hub HTTP API, just what
// Darkroom needs to download a model: the file list of a revision with sizes and
// hashes (GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true) and the
// download URL of a file ({endpoint}/{repo}/resolve/{rev}/{file}, which answers
// with a redirect to a CDN for LFS files). It honours HF_TOKEN and HF_ENDPOINT and
// takes proxies from the environment (HTTPS_PROXY, NO_PROXY).
//
// We do not use go-huggingface's downloader: it cannot resume, does not verify
// hashes and can rename a truncated file into place.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// Errors a caller can test with errors.Is.
var (
	ErrUnauthorized = errors.New("the Hub refused access (401/403): the model may be gated or private — accept its license on huggingface.co and set a token (HF_TOKEN or --token)")
	ErrNotFound     = errors.New("not found on the Hub (404): check the repository name, revision and file name")
)

// Unreachable reports whether err says the server was never reached — its name
// did not resolve, the connection was refused, or it timed out — rather than an
// answer from it: what a user fixes by checking the connection or choosing a
// mirror. The Library and `darkroom pull` word it each in their own terms.
func Unreachable(err error) bool {
	var (
		dns  *net.DNSError
		op   *net.OpError
		nerr net.Error
	)
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial" ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout()
}

// Client talks to one Hub endpoint.
type Client struct {
	Endpoint string // e.g. https://huggingface.co or a mirror (HF_ENDPOINT)
	Token    string // sent as "Authorization: Bearer" (HF_TOKEN)
	HTTP     *http.Client
}

// New returns a client for endpoint and token; empty values fall back to
// HF_ENDPOINT / HF_TOKEN and then to the public Hub without a token.
func New(endpoint, token string) *Client {
	if endpoint == "" {
		endpoint = os.Getenv("HF_ENDPOINT")
	}
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if token == "" {
		token = os.Getenv("HF_TOKEN")
	}
	return &Client{Endpoint: strings.TrimRight(endpoint, "/"), Token: token, HTTP: NewHTTPClient()}
}

// NewHTTPClient returns an HTTP client that uses the environment's proxies and
// sane connection timeouts. It has no overall timeout: a 20 GB body takes long;
// stalls are the downloader's watchdog's business.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	tr.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: tr}
}

// File is one file of a repo revision.
type File struct {
	Name   string // path in the repo, slash-separated
	Size   int64
	SHA256 string // hex; set for LFS files
	GitOID string // git blob sha1 (hex); for non-LFS files the hash to verify
}

// Revision is a repo at a revision.
type Revision struct {
	Repo   string
	Commit string // the resolved commit sha
	Files  []File
}

type apiSibling struct {
	RFilename string `json:"rfilename"`
	Size      *int64 `json:"size"`
	BlobID    string `json:"blobId"`
	LFS       *struct {
		SHA256 string `json:"sha256"`
		Oid    string `json:"oid"`
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

type apiRevision struct {
	ID       string       `json:"id"`
	SHA      string       `json:"sha"`
	Siblings []apiSibling `json:"siblings"`
}

// Revision fetches the file list of repo at rev with sizes and hashes.
func (c *Client) Revision(ctx context.Context, repo, rev string) (*Revision, error) {
	if rev == "" {
		rev = "main"
	}
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", c.Endpoint, repo, url.PathEscape(rev))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("file list of %s@%s: %w", repo, rev, err)
	}
	c.Authorize(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("file list of %s@%s: %w", repo, rev, err)
	}
	defer resp.Body.Close()
	if err := StatusError(resp); err != nil {
		return nil, fmt.Errorf("file list of %s@%s: %w", repo, rev, err)
	}
	var ar apiRevision
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&ar); err != nil {
		return nil, fmt.Errorf("file list of %s@%s: bad answer from %s: %w", repo, rev, c.Endpoint, err)
	}
	out := &Revision{Repo: repo, Commit: ar.SHA}
	for _, s := range ar.Siblings {
		f := File{Name: s.RFilename, GitOID: s.BlobID}
		if s.Size != nil {
			f.Size = *s.Size
		}
		if s.LFS != nil {
			f.SHA256 = s.LFS.SHA256
			if f.SHA256 == "" {
				f.SHA256 = strings.TrimPrefix(s.LFS.Oid, "sha256:")
			}
			f.Size = s.LFS.Size
			f.GitOID = ""
		}
		if err := checkFileName(f.Name); err != nil {
			return nil, fmt.Errorf("file list of %s@%s: %w", repo, rev, err)
		}
		out.Files = append(out.Files, f)
	}
	if out.Commit == "" {
		out.Commit = rev
	}
	return out, nil
}

// ResolveURL is the download URL of file in repo at rev (a commit sha is best:
// the files of one download then all come from the same commit).
func (c *Client) ResolveURL(repo, rev, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return fmt.Sprintf("%s/%s/resolve/%s/%s", c.Endpoint, repo, url.PathEscape(rev), strings.Join(parts, "/"))
}

// Authorize adds the token, if any, to a request to the endpoint. Go's client
// drops the header on redirects to other hosts (the CDN's URLs are signed).
func (c *Client) Authorize(req *http.Request) {
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	req.Header.Set("User-Agent", "darkroom/1")
}

// StatusError turns a non-2xx response into an error (ErrUnauthorized, ErrNotFound
// or a plain one with the status and the Hub's message).
func StatusError(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	msg := hubMessage(resp)
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w%s", ErrUnauthorized, msg)
	case http.StatusNotFound:
		return fmt.Errorf("%w%s", ErrNotFound, msg)
	}
	return &HTTPError{Status: resp.StatusCode, Msg: resp.Status + msg}
}

// HTTPError is any other failed status. Retryable reports 5xx and 429.
type HTTPError struct {
	Status int
	Msg    string
}

func (e *HTTPError) Error() string { return "the server answered " + e.Msg }

// Retryable reports whether trying again later may help.
func (e *HTTPError) Retryable() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout
}

func hubMessage(resp *http.Response) string {
	if m := resp.Header.Get("X-Error-Message"); m != "" {
		return " (" + m + ")"
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var v struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &v) == nil && v.Error != "" {
		return " (" + v.Error + ")"
	}
	return ""
}

func checkRepo(repo string) error {
	parts := strings.Split(repo, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" || strings.ContainsAny(repo, "?#\\ :") ||
		parts[0] == ".." || parts[1] == ".." {
		return fmt.Errorf("%q is not a Hugging Face repo name (want owner/name)", repo)
	}
	return nil
}

// ParseRepo reads a model's repo as a user gives it: "owner/name" — or
// "owner/name:QUANT", one quantization of a GGUF repo, as ollama names one
// (hf.co/{repo}:{quant}), kept so — or the address of its page on the Hub or a
// mirror, as copied from a browser
// ("https://huggingface.co/owner/name", "huggingface.co/owner/name/tree/main",
// ".../blob/main/config.json", with a query or fragment after it). The Hub's
// "models" prefix is not a repo's owner: datasets and spaces are refused.
func ParseRepo(s string) (string, error) {
	in := strings.TrimSpace(s)
	repo := in
	if i := strings.Index(repo, "://"); i >= 0 {
		repo = repo[i+3:]
	}
	if i := strings.IndexAny(repo, "?#"); i >= 0 {
		repo = repo[:i]
	}
	parts := strings.Split(strings.Trim(repo, "/"), "/")
	if len(parts) >= 2 && strings.Contains(parts[0], ".") { // a host (huggingface.co, hf.co, a mirror): owners have no dots
		parts = parts[1:]
		if parts[0] == "datasets" || parts[0] == "spaces" {
			return "", fmt.Errorf("%s is a Hugging Face %s, not a model", in, strings.TrimSuffix(parts[0], "s"))
		}
		if parts[0] == "models" {
			parts = parts[1:]
		}
	}
	if len(parts) > 2 && (parts[2] == "tree" || parts[2] == "blob" || parts[2] == "resolve") {
		parts = parts[:2]
	}
	repo = strings.Join(parts, "/")
	repo, quant, named := strings.Cut(repo, ":")
	if err := checkRepo(repo); err != nil || named && !quantName.MatchString(quant) {
		return "", fmt.Errorf("%q is not a Hugging Face model: give its name (owner/name) or its page's address", in)
	}
	if named {
		return repo + ":" + quant, nil
	}
	return repo, nil
}

// quantName is a GGUF quantization's name as one follows a repo's ("Q4_K_M",
// "UD-Q4_K_XL", "bf16").
var quantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// checkFileName refuses names that would escape the model folder.
func checkFileName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return fmt.Errorf("unsafe file name %q", name)
	}
	for _, p := range strings.Split(name, "/") {
		if p == ".." || p == "" || p == "." {
			return fmt.Errorf("unsafe file name %q", name)
		}
	}
	return nil
}
