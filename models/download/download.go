// Package download fetches a model's files over HTTP into a folder, resumably and
// verified: each file streams into NAME.part (with NAME.part.json remembering the
// server's ETag and the expected hash), an interrupted transfer continues with an
// HTTP Range request — in the same run after a cut connection or a stall, or in a
// later process — and the sha256 (git blob sha1 for small non-LFS files) is
// computed while streaming, after first re-hashing any existing .part prefix. A
// file whose hash does not match is moved aside to NAME.corrupt (kept for
// diagnosis, never loaded) and reported by name. Before starting, the free space
// is checked against what is left to fetch plus a margin; a full disk mid-way
// stops the job cleanly with the .part files kept.
//
// Nothing here deletes partial files except Job.Cancel, an explicit user action.
package download

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Errors a caller can test with errors.Is.
var (
	ErrPaused   = errors.New("download paused")
	ErrCanceled = errors.New("download canceled")
	ErrNoSpace  = errors.New("not enough free disk space")
	ErrStalled  = errors.New("download stalled (no data received)")
)

// VerifyError reports a file whose content does not match its published hash.
type VerifyError struct {
	File       string // name inside the model folder
	Want, Got  string
	Algo       string // "sha256" or "git-sha1"
	Quarantine string // where the bad bytes were moved
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%s failed verification: %s is %s, expected %s (moved aside to %s; it will not be loaded — download it again)",
		e.File, e.Algo, e.Got, e.Want, filepath.Base(e.Quarantine))
}

// File is one file to fetch.
type File struct {
	Name   string // path inside the folder, slash-separated
	URL    string
	Size   int64  // expected size (-1 or 0 with no hash: unknown)
	SHA256 string // hex sha256 to verify (LFS files)
	GitOID string // hex git blob sha1 to verify when SHA256 is empty
}

// PartFile is what the downloader writes a .part into (an *os.File normally;
// tests inject one that fails like a full disk).
type PartFile interface {
	io.WriteCloser
	io.Seeker
	Truncate(size int64) error
	Sync() error
}

// Options tune a download. Zero values pick the defaults noted.
type Options struct {
	HTTP *http.Client
	// Authorize adds credentials to each request (Go's client drops them on a
	// redirect to another host, as the CDN's URLs are signed).
	Authorize    func(*http.Request)
	Parallel     int           // files in flight at once (4)
	StallTimeout time.Duration // no byte for this long aborts the attempt and retries (60s)
	MaxRetries   int           // consecutive failed attempts without progress before giving up (8)
	BackoffBase  time.Duration // first retry delay, doubled each time (1s)
	BackoffMax   time.Duration // cap on the delay (60s)
	// FreeSpace reports the free bytes at a path (store.FreeSpace normally). Nil skips the check.
	FreeSpace func(path string) (int64, error)
	// SpaceMargin is added to the bytes left when checking free space (store.SpaceMargin
	// normally, as models sets it: the one margin its downloads and moves keep; nil adds
	// none).
	SpaceMargin func(need int64) int64
	// Reserve is free space the download must leave beyond its own and its margin:
	// what is to be written from it afterwards (a profile made from it on this PC).
	Reserve int64
	// OpenPart opens a .part file for writing (os.OpenFile normally).
	OpenPart func(path string) (PartFile, error)
	// StatusError turns a failed response into the error reported for it (nil:
	// the package's StatusError, the Hub's wording once the models package is
	// linked). Jobs that fetch from another server set their own.
	StatusError func(*http.Response) error
	// OnEvent receives progress; called from the job's goroutines, must not block.
	// Every call has returned by the time the job ends (Wait, Done).
	OnEvent func(Event)
	// Interval between progress events (250ms).
	Interval time.Duration
}

func (o *Options) defaults() {
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 60 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 8
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 60 * time.Second
	}
	if o.SpaceMargin == nil {
		o.SpaceMargin = func(int64) int64 { return 0 }
	}
	if o.OpenPart == nil {
		o.OpenPart = func(p string) (PartFile, error) { return os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644) }
	}
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
}

// EventKind tells what an Event reports.
type EventKind string

const (
	EventProgress  EventKind = "progress"   // periodic: bytes, rate, ETA
	EventVerifying EventKind = "verifying"  // re-hashing an existing .part before resuming
	EventRetry     EventKind = "retry"      // an attempt failed; retrying after a backoff (Err says why)
	EventFileDone  EventKind = "file-done"  // a file was verified and moved into place
	EventFileError EventKind = "file-error" // a file failed (Err); a VerifyError means quarantined
	EventState     EventKind = "state"      // the job's state changed (State)
)

// State of a job.
type State string

const (
	StateQueued      State = "queued"
	StateDownloading State = "downloading"
	StatePaused      State = "paused"
	StateDone        State = "done"
	StateFailed      State = "failed"
	StateCanceled    State = "canceled"
)

// Event is one progress report of a job.
type Event struct {
	Kind  EventKind
	State State
	File  string // the file concerned, if any
	Done  int64  // bytes present (verified or in .part) over all files
	Total int64  // bytes of all files
	// Fetched counts bytes received over the network in this process (for tests
	// and diagnostics: after a resume it stays ≈ what was missing).
	Fetched int64
	Rate    float64       // bytes/s, smoothed over the last seconds
	ETA     time.Duration // -1 when unknown
	Err     error
	Attempt int // for EventRetry
}

// Job downloads a set of files into a folder; see New and Start.
type Job struct {
	dir   string
	files []File
	opt   Options

	start    sync.Once
	mu       sync.Mutex
	state    State
	cancel   context.CancelCauseFunc
	resumeCh chan struct{}
	doneCh   chan struct{}
	err      error
	results  map[string]error // per file: nil = verified

	done    atomic.Int64 // bytes present
	fetched atomic.Int64
	total   int64
	rate    rateMeter
}

// Start begins downloading files into dir and returns at once: New, then
// Job.Start. Files already present in final form are not fetched again if their
// size matches and the caller does not list them (callers pass only what is
// missing).
func Start(ctx context.Context, dir string, files []File, opt Options) *Job {
	j := New(dir, files, opt)
	j.Start(ctx)
	return j
}

// New makes a job that fetches files into dir once Start is called. Until then
// it sends nothing, and a Pause or Cancel holds from its first moment: a job
// paused before Start reports the pause and waits for Resume, a job canceled
// before Start removes the files' .part files and ends with ErrCanceled, with
// no request made in either case.
func New(dir string, files []File, opt Options) *Job {
	opt.defaults()
	j := &Job{dir: dir, files: files, opt: opt, state: StateQueued, resumeCh: make(chan struct{}, 1),
		doneCh: make(chan struct{}), results: map[string]error{}}
	for _, f := range files {
		if f.Size > 0 {
			j.total += f.Size
		}
	}
	return j
}

// Start begins the job on its own goroutine; ctx ending fails it. Only the first
// call starts it, and Wait and Done wait for a started job.
func (j *Job) Start(ctx context.Context) {
	j.start.Do(func() { go j.loop(ctx) })
}

// Wait blocks until the started job is done, failed or canceled (not while paused) and
// returns its error: nil, or the files' errors joined (each names its file).
func (j *Job) Wait() error {
	<-j.doneCh
	return j.err
}

// Done is closed when the job ends.
func (j *Job) Done() <-chan struct{} { return j.doneCh }

// Results returns each finished file's outcome (nil = verified) so far.
func (j *Job) Results() map[string]error {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make(map[string]error, len(j.results))
	for k, v := range j.results {
		out[k] = v
	}
	return out
}

// State is the job's current state.
func (j *Job) State() State {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state
}

// Pause stops the transfers, keeping the .part files; Resume continues them. A
// Pause after a Resume the job has not acted on yet holds: the job waits again.
func (j *Job) Pause() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == StateDownloading || j.state == StateQueued {
		j.state = StatePaused
		if j.cancel != nil {
			j.cancel(ErrPaused)
		}
	}
	if j.state == StatePaused {
		select { // a Resume not yet taken is undone
		case <-j.resumeCh:
		default:
		}
	}
}

// Resume continues a paused job: it is queued to download again.
func (j *Job) Resume() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == StatePaused {
		j.state = StateQueued
		select {
		case j.resumeCh <- struct{}{}:
		default:
		}
	}
}

// Cancel stops the job and removes the .part files of the files not finished.
func (j *Job) Cancel() {
	j.mu.Lock()
	j.state = StateCanceled
	if j.cancel != nil {
		j.cancel(ErrCanceled)
	}
	select {
	case j.resumeCh <- struct{}{}:
	default:
	}
	j.mu.Unlock()
}

// waitResume reports the pause and blocks until Resume or Cancel (true) or until the
// parent context ends (false: the job has failed with its error).
func (j *Job) waitResume(parent context.Context) bool {
	j.emit(Event{Kind: EventState, State: StatePaused})
	select {
	case <-j.resumeCh:
		return true
	case <-parent.Done():
		j.err = parent.Err()
		j.setState(StateFailed)
		return false
	}
}

// setState moves the job to state s and reports it; a failure carries the job's error
// (set before, on the loop's goroutine, which alone calls setState with StateFailed),
// so a listener never hears "failed" without why.
func (j *Job) setState(s State) {
	j.mu.Lock()
	if j.state != StateCanceled || s == StateCanceled {
		j.state = s
	}
	j.mu.Unlock()
	ev := Event{Kind: EventState, State: s}
	if s == StateFailed {
		ev.Err = j.err
	}
	j.emit(ev)
}

func (j *Job) emit(ev Event) {
	if j.opt.OnEvent == nil {
		return
	}
	if ev.State == "" {
		ev.State = j.State()
	}
	ev.Done, ev.Total, ev.Fetched = j.done.Load(), j.total, j.fetched.Load()
	ev.Rate = j.rate.Rate()
	ev.ETA = -1
	if ev.Rate > 0 && j.total > 0 {
		ev.ETA = time.Duration(float64(j.total-ev.Done) / ev.Rate * float64(time.Second))
	}
	j.opt.OnEvent(ev)
}

func (j *Job) loop(parent context.Context) {
	defer close(j.doneCh)
	if err := j.checkSpace(); err != nil && j.State() != StateCanceled { // canceled: removing, not fetching
		j.err = err
		j.setState(StateFailed)
		return
	}
	for {
		ctx, cancel := context.WithCancelCause(parent)
		j.mu.Lock()
		if j.state == StateCanceled {
			j.mu.Unlock()
			cancel(ErrCanceled)
			break
		}
		if j.state == StatePaused { // paused before it started, or again before a Resume was taken
			j.mu.Unlock()
			cancel(nil)
			if !j.waitResume(parent) {
				return
			}
			continue
		}
		j.cancel = cancel
		j.state = StateDownloading
		j.mu.Unlock()
		j.emit(Event{Kind: EventState, State: StateDownloading})
		err := j.runOnce(ctx)
		cause := context.Cause(ctx)
		cancel(nil)
		switch {
		case j.State() == StateCanceled:
		case errors.Is(cause, ErrPaused):
			continue // paused (or paused and resumed already): the loop's top waits or goes on
		case err != nil:
			j.err = err
			j.setState(StateFailed)
			return
		default:
			j.setState(StateDone)
			return
		}
		break
	}
	// Canceled: remove what is unfinished.
	for _, f := range j.files {
		if r, ok := j.Results()[f.Name]; ok && r == nil {
			continue
		}
		p := filepath.Join(j.dir, filepath.FromSlash(f.Name))
		os.Remove(p + ".part")
		os.Remove(p + ".part.json")
	}
	j.err = ErrCanceled
	j.setState(StateCanceled)
}

// checkSpace compares what is left to fetch (plus a margin) with the free space.
func (j *Job) checkSpace() error {
	var left, have int64
	for _, f := range j.files {
		p := filepath.Join(j.dir, filepath.FromSlash(f.Name))
		var n int64
		if st, err := os.Stat(p + ".part"); err == nil && st.Size() <= f.Size {
			n = st.Size()
		}
		have += n
		if f.Size > 0 {
			left += f.Size - n
		}
	}
	j.done.Store(have)
	if j.opt.FreeSpace == nil || left == 0 {
		return nil
	}
	free, err := j.opt.FreeSpace(j.dir)
	if err != nil {
		return nil // unknown: a write error will still stop us cleanly
	}
	need := left + j.opt.SpaceMargin(left)
	switch {
	case j.opt.Reserve > 0 && free < need+j.opt.Reserve:
		return fmt.Errorf("%w in %s: %s to download needs %s with margin, and %s more for what is made from it after, %s free",
			ErrNoSpace, j.dir, fmtBytes(left), fmtBytes(need), fmtBytes(j.opt.Reserve), fmtBytes(free))
	case free < need:
		return fmt.Errorf("%w in %s: %s to download needs %s with margin, %s free", ErrNoSpace, j.dir,
			fmtBytes(left), fmtBytes(need), fmtBytes(free))
	}
	return nil
}

func (j *Job) runOnce(ctx context.Context) error {
	sem := make(chan struct{}, j.opt.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	// The ticker's progress events end before runOnce returns: one still being
	// delivered as the job ends would reach subscribers after its last event
	// (the manager's "complete" then followed by "downloading").
	stopTick, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(j.opt.Interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				j.rate.Add(j.fetched.Load())
				j.emit(Event{Kind: EventProgress})
			case <-stopTick:
				return
			}
		}
	}()
	for _, f := range j.files {
		if r, ok := j.Results()[f.Name]; ok && r == nil {
			continue // verified in an earlier run of this job
		}
		wg.Add(1)
		go func(f File) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			err := j.fetch(ctx, f)
			if ctx.Err() != nil && err != nil && !isVerify(err) {
				return // paused or canceled: not a result
			}
			j.mu.Lock()
			j.results[f.Name] = err
			j.mu.Unlock()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				j.emit(Event{Kind: EventFileError, File: f.Name, Err: err})
			} else {
				j.emit(Event{Kind: EventFileDone, File: f.Name})
			}
		}(f)
	}
	wg.Wait()
	close(stopTick)
	<-ticked
	j.emit(Event{Kind: EventProgress})
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return errors.Join(errs...)
}

func isVerify(err error) bool {
	var v *VerifyError
	return errors.As(err, &v)
}

// partMeta is NAME.part.json: what the .part holds bytes of.
type partMeta struct {
	URL    string `json:"url"`
	ETag   string `json:"etag,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	GitOID string `json:"git_oid,omitempty"`
	Size   int64  `json:"size"`
}

// fetch downloads one file with retries until it is verified or fails for good.
func (j *Job) fetch(ctx context.Context, f File) error {
	final := filepath.Join(j.dir, filepath.FromSlash(f.Name))
	part, metaPath := final+".part", final+".part.json"
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	meta := partMeta{URL: f.URL, SHA256: f.SHA256, GitOID: f.GitOID, Size: f.Size}
	var old partMeta
	have, counted := int64(0), int64(0)
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
		if have <= f.Size {
			counted = have // checkSpace counted it in j.done
		}
		if b, err := os.ReadFile(metaPath); err == nil && json.Unmarshal(b, &old) == nil {
			if old.SHA256 != f.SHA256 || old.GitOID != f.GitOID || old.Size != f.Size {
				have = 0 // the .part belongs to another version of the file
			} else {
				meta.ETag = old.ETag
			}
		}
		if f.Size > 0 && have > f.Size {
			have = 0
		}
	}
	j.done.Add(have - counted)
	w, err := j.opt.OpenPart(part)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, diskErr(err))
	}
	closed := false
	defer func() {
		if !closed {
			w.Close()
		}
	}()
	h := newHasher(f)
	if have > 0 {
		// Re-hash what is already there; a resumed file is verified end to end.
		j.emit(Event{Kind: EventVerifying, File: f.Name})
		if err := hashPrefix(ctx, part, have, h); err != nil {
			return fmt.Errorf("%s: re-reading %s: %w", f.Name, filepath.Base(part), err)
		}
	}
	if err := w.Truncate(have); err != nil {
		return fmt.Errorf("%s: %w", f.Name, diskErr(err))
	}
	if _, err := w.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	if err := writeMeta(metaPath, meta); err != nil {
		return fmt.Errorf("%s: %w", f.Name, diskErr(err))
	}

	failures := 0
	for have < f.Size || f.Size <= 0 {
		before := have
		n, etag, restart, err := j.attempt(ctx, f, w, h, have, meta.ETag)
		have += n
		if restart {
			// The server sent the whole file (or a different one): start over.
			j.done.Add(-have)
			have = 0
			h = newHasher(f)
			if e := w.Truncate(0); e != nil {
				return fmt.Errorf("%s: %w", f.Name, diskErr(e))
			}
			if _, e := w.Seek(0, io.SeekStart); e != nil {
				return fmt.Errorf("%s: %w", f.Name, e)
			}
		}
		if etag != "" && etag != meta.ETag {
			meta.ETag = etag
			_ = writeMeta(metaPath, meta)
		}
		if err == nil && (f.Size <= 0 || have == f.Size) {
			break
		}
		if err == nil {
			err = fmt.Errorf("connection closed after %d of %d bytes", have, f.Size)
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if !retryable(err) {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if have > before {
			failures = 0
		}
		failures++
		if failures > j.opt.MaxRetries {
			return fmt.Errorf("%s: giving up after %d attempts without progress: %w", f.Name, failures, err)
		}
		j.emit(Event{Kind: EventRetry, File: f.Name, Err: err, Attempt: failures})
		delay := j.opt.BackoffBase << (failures - 1)
		if delay > j.opt.BackoffMax || delay <= 0 {
			delay = j.opt.BackoffMax
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("%s: %w", f.Name, diskErr(err))
	}
	closed = true
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", f.Name, diskErr(err))
	}
	got, want, algo := hex.EncodeToString(h.Sum(nil)), f.SHA256, "sha256"
	if want == "" {
		want, algo = f.GitOID, "git-sha1"
	}
	if want != "" && !strings.EqualFold(got, want) {
		q := final + ".corrupt"
		os.Remove(q)
		if err := os.Rename(part, q); err != nil {
			os.Remove(part)
			q = "(deleted: " + err.Error() + ")"
		}
		os.Remove(metaPath)
		return &VerifyError{File: f.Name, Want: want, Got: got, Algo: algo, Quarantine: q}
	}
	if err := os.Rename(part, final); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	os.Remove(metaPath)
	return nil
}

// attempt makes one request for the bytes from offset on and streams them into w
// and h. It returns the bytes written, the ETag seen, whether the caller must
// start over from zero, and why the attempt ended early (nil at the end of body).
func (j *Job) attempt(ctx context.Context, f File, w io.Writer, h hash.Hash, offset int64, etag string) (int64, string, bool, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, f.URL, nil)
	if err != nil {
		return 0, "", false, permanent(err)
	}
	if j.opt.Authorize != nil {
		j.opt.Authorize(req)
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
		if etag != "" && !strings.HasPrefix(etag, "W/") {
			req.Header.Set("If-Range", etag)
		}
	}
	// Stall watchdog: no byte for StallTimeout cancels the attempt.
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(j.opt.StallTimeout / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if time.Since(time.Unix(0, last.Load())) > j.opt.StallTimeout {
					cancel(ErrStalled)
					return
				}
			}
		}
	}()
	// Remember what the Hub's redirect says the file is (X-Linked-Etag: the LFS
	// sha256, X-Linked-Size), to catch a file that changed since it was listed.
	client := *j.opt.HTTP
	var linkedTag, linkedSize string
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if r.Response != nil {
			if v := r.Response.Header.Get("X-Linked-Etag"); v != "" {
				linkedTag = v
			}
			if v := r.Response.Header.Get("X-Linked-Size"); v != "" {
				linkedSize = v
			}
			if err := checkLinked(f, linkedTag, linkedSize); err != nil {
				return err // do not follow the redirect: nothing is fetched
			}
		}
		if j.opt.HTTP.CheckRedirect != nil {
			return j.opt.HTTP.CheckRedirect(r, via)
		}
		return nil
	}
	resp, err := client.Do(req)
	var perm permanentError
	if errors.As(err, &perm) {
		return 0, "", false, perm
	}
	if err != nil {
		if errors.Is(context.Cause(actx), ErrStalled) && ctx.Err() == nil {
			return 0, "", false, ErrStalled
		}
		return 0, "", false, err
	}
	defer resp.Body.Close()
	newTag := resp.Header.Get("ETag")
	switch {
	case resp.StatusCode == http.StatusPartialContent:
		start, err := contentRangeStart(resp.Header.Get("Content-Range"))
		if err != nil || start != offset {
			return 0, newTag, true, fmt.Errorf("server sent bytes from %d, asked for %d", start, offset)
		}
	case resp.StatusCode == http.StatusOK:
		if offset > 0 {
			// Range ignored or the file changed (If-Range failed): the body is the whole file.
			j.done.Add(-offset)
			h.Reset()
			if f.GitOID != "" && f.SHA256 == "" {
				fmt.Fprintf(h, "blob %d\x00", f.Size)
			}
			if sw, ok := w.(interface {
				Truncate(int64) error
				io.Seeker
			}); ok {
				if err := sw.Truncate(0); err != nil {
					return 0, newTag, false, permanent(diskErr(err))
				}
				if _, err := sw.Seek(0, io.SeekStart); err != nil {
					return 0, newTag, false, permanent(err)
				}
			}
			return j.stream(actx, ctx, f, resp.Body, w, h, &last, newTag, -offset)
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && offset == f.Size:
		return 0, newTag, false, nil
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return 0, newTag, true, fmt.Errorf("server refused the range from byte %d", offset)
	default:
		return 0, newTag, false, statusErr(resp, j.opt.StatusError)
	}
	return j.stream(actx, ctx, f, resp.Body, w, h, &last, newTag, 0)
}

// stream copies body into w and h. base is subtracted from the byte count
// returned when the caller's offset was discarded (a full 200 body).
func (j *Job) stream(actx, ctx context.Context, f File, body io.Reader, w io.Writer, h hash.Hash, last *atomic.Int64, etag string, base int64) (int64, string, bool, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		m, rerr := body.Read(buf)
		if m > 0 {
			last.Store(time.Now().UnixNano())
			if _, err := w.Write(buf[:m]); err != nil {
				return n + base, etag, false, permanent(diskErr(err))
			}
			h.Write(buf[:m])
			n += int64(m)
			j.done.Add(int64(m))
			j.fetched.Add(int64(m))
		}
		if rerr == io.EOF {
			return n + base, etag, false, nil
		}
		if rerr != nil {
			if errors.Is(context.Cause(actx), ErrStalled) && ctx.Err() == nil {
				return n + base, etag, false, ErrStalled
			}
			return n + base, etag, false, rerr
		}
	}
}

// checkLinked compares what the Hub's redirect announces with the file list.
func checkLinked(f File, linkedTag, linkedSize string) error {
	if tag := strings.Trim(strings.TrimPrefix(linkedTag, "W/"), `"`); tag != "" && f.SHA256 != "" && !strings.EqualFold(tag, f.SHA256) {
		return permanent(fmt.Errorf("the Hub now serves a different version of the file (sha256 %s, listed %s); pull again to get the new file list", tag, f.SHA256))
	}
	if n, err := strconv.ParseInt(linkedSize, 10, 64); err == nil && f.Size > 0 && n != f.Size {
		return permanent(fmt.Errorf("the Hub now serves %d bytes, listed %d; pull again to get the new file list", n, f.Size))
	}
	return nil
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

func retryable(err error) bool {
	var p permanentError
	if errors.As(err, &p) || errors.Is(err, ErrNoSpace) {
		return false
	}
	var he *httpStatusError
	if errors.As(err, &he) {
		return he.retryable
	}
	return true // network errors, stalls, cut connections
}

type httpStatusError struct {
	err       error
	retryable bool
}

func (e *httpStatusError) Error() string { return e.err.Error() }
func (e *httpStatusError) Unwrap() error { return e.err }

// StatusError converts a failed response into an error; set by the models
// package to the hub's plain-language errors (401, 404). Default: the status line.
var StatusError = func(resp *http.Response) error {
	return fmt.Errorf("the server answered %s", resp.Status)
}

func statusErr(resp *http.Response, convert func(*http.Response) error) error {
	if convert == nil {
		convert = StatusError
	}
	s := resp.StatusCode
	return &httpStatusError{err: convert(resp), retryable: s >= 500 || s == 429 || s == 408}
}

// diskErr turns ENOSPC into ErrNoSpace.
func diskErr(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w (the disk filled up; the partial file was kept — free some space and resume): %v", ErrNoSpace, err)
	}
	return permanent(err)
}

func contentRangeStart(cr string) (int64, error) {
	// "bytes 100-199/200"
	cr = strings.TrimPrefix(cr, "bytes ")
	dash := strings.IndexByte(cr, '-')
	if dash < 0 {
		return 0, fmt.Errorf("bad Content-Range %q", cr)
	}
	return strconv.ParseInt(cr[:dash], 10, 64)
}

func newHasher(f File) hash.Hash {
	if f.SHA256 == "" && f.GitOID != "" {
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", f.Size)
		return h
	}
	return sha256.New()
}

func hashPrefix(ctx context.Context, path string, n int64, h hash.Hash) error {
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, 1<<20)
	var done int64
	for done < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := int64(len(buf))
		if n-done < k {
			k = n - done
		}
		m, err := io.ReadFull(r, buf[:k])
		h.Write(buf[:m])
		done += int64(m)
		if err != nil {
			return err
		}
	}
	return nil
}

func writeMeta(path string, m partMeta) error {
	b, _ := json.Marshal(m)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// HashFile returns the hex sha256 of a file (for checks and tests).
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// PartSize returns the size of NAME.part in dir, 0 if none.
func PartSize(dir, name string) int64 {
	st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)) + ".part")
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return 0
	}
	return st.Size()
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// rateMeter smooths the transfer rate over recent samples.
type rateMeter struct {
	mu            sync.Mutex
	firstT, lastT time.Time
	firstN, lastN int64
	rate          float64
	started       bool
}

// rateWindow is the smoothing's time constant, in seconds.
const rateWindow = 3

// Add records the cumulative byte count now.
func (r *rateMeter) Add(total int64) { r.add(time.Now(), total) }

// add records the cumulative byte count at now. For the first rateWindow
// seconds the rate is the average since the first sample; then each interval
// moves it a share dt/rateWindow towards the interval's rate. (The first
// interval's rate alone once set it: two ticks a moment apart, as a ticker
// delivers them after its goroutine was held up, made it a burst's rate
// for seconds.)
func (r *rateMeter) add(now time.Time, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		r.firstT, r.firstN, r.lastT, r.lastN, r.started = now, total, now, total, true
		return
	}
	dt := now.Sub(r.lastT).Seconds()
	if dt <= 0 {
		return
	}
	if since := now.Sub(r.firstT).Seconds(); since < rateWindow {
		r.rate = float64(total-r.firstN) / since
	} else {
		r.rate += min(dt/rateWindow, 1) * (float64(total-r.lastN)/dt - r.rate)
	}
	r.lastT, r.lastN = now, total
}

// Rate is the smoothed bytes/s.
func (r *rateMeter) Rate() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rate
}
