// This file holds the warning recorder: handlers and admission add warnings
// to the context, and they reach the client as Warning headers.

package filters

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// WarningRecorder receives warnings for the current request. AddWarning must
// be safe for concurrent use.
type WarningRecorder interface {
	AddWarning(text string)
}

// WarningRecorderFunc adapts a function to WarningRecorder.
type WarningRecorderFunc func(text string)

// AddWarning calls f(text).
func (f WarningRecorderFunc) AddWarning(text string) { f(text) }

var _ WarningRecorder = WarningRecorderFunc(nil)

// ContextWithWarningRecorder returns a copy of ctx carrying rec (ctx itself
// when the request's values layer takes it, see values).
func ContextWithWarningRecorder(ctx context.Context, rec WarningRecorder) context.Context {
	if v := slots(ctx, warningsKey{}); v != nil && rec != nil {
		v.warnings = rec
		return ctx
	}
	return context.WithValue(ctx, warningsKey{}, rec)
}

// WarningRecorderFrom returns the recorder in ctx, if any.
func WarningRecorderFrom(ctx context.Context) (WarningRecorder, bool) {
	rec, ok := ctx.Value(warningsKey{}).(WarningRecorder)
	return rec, ok && rec != nil
}

// AddWarning records a warning for the request of ctx; without a recorder in
// ctx it does nothing. Empty texts are ignored.
func AddWarning(ctx context.Context, text string) {
	if rec, ok := WarningRecorderFrom(ctx); ok {
		rec.AddWarning(text)
	}
}

// WarningRecorderConfig configures WithWarningRecorder. The zero value is
// Kubernetes' limits.
type WarningRecorderConfig struct {
	// MaxTotalRunes is the total warning text, in runes, past which
	// warnings are truncated; zero means 4096.
	MaxTotalRunes int
	// MaxItemRunes is the length, in runes, each warning is truncated to
	// once MaxTotalRunes was exceeded; zero means 256.
	MaxItemRunes int
}

// WithWarningRecorder returns the filter that puts a warning recorder into
// each request's context (use AddWarning). Each warning becomes a header
// `Warning: 299 - "text"`, with `"` and `\` escaped; identical texts are sent
// once; a text with control characters or invalid UTF-8 is dropped. Once the
// total text would exceed MaxTotalRunes, every warning (those already added
// too) is truncated to MaxItemRunes, and when the truncated total reaches
// MaxTotalRunes further warnings are dropped. This is Kubernetes'
// WithWarningRecorder.
//
// The recorder adds the header to the response's header map at once, so
// warnings added after the response started are lost. That map belongs to
// the handler: under WithRequestTimeout it is the timeout writer's private
// map, which is why this filter must sit inside WithRequestTimeout.
func WithWarningRecorder(cfg WarningRecorderConfig) func(http.Handler) http.Handler {
	total, item := cfg.MaxTotalRunes, cfg.MaxItemRunes
	if total <= 0 {
		total = 4 * 1024
	}
	if item <= 0 {
		item = 256
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var rec *headerWarningRecorder
			if v := room(r.Context(), warningsKey{}, roomWarnings); v != nil {
				rec = &v.warningsRoom
			} else {
				rec = &headerWarningRecorder{}
			}
			rec.w, rec.maxTotal, rec.maxItem = w, total, item
			next.ServeHTTP(w, RequestWithContext(r, ContextWithWarningRecorder(r.Context(), rec)))
		})
	}
}

type headerWarningRecorder struct {
	w                 http.ResponseWriter
	maxTotal, maxItem int

	// mu guards the fields below and the Warning header.
	mu         sync.Mutex
	seen       map[string]bool
	ordered    []string
	written    int // runes of text sent in headers
	truncating bool
}

var _ WarningRecorder = (*headerWarningRecorder)(nil)

func (rec *headerWarningRecorder) AddWarning(text string) {
	if text == "" {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.truncating && rec.written >= rec.maxTotal {
		return
	}
	if rec.seen[text] {
		return
	}
	if rec.seen == nil {
		rec.seen = map[string]bool{}
	}
	rec.seen[text] = true
	rec.ordered = append(rec.ordered, text)

	runes := utf8.RuneCountInString(text)
	if rec.truncating && runes > rec.maxItem {
		text, runes = truncateRunes(text, rec.maxItem), rec.maxItem
	}
	h := rec.w.Header()
	if rec.truncating || rec.written+runes <= rec.maxTotal {
		if v, ok := warningHeader(text); ok {
			rec.written += runes
			h.Add("Warning", v)
		}
		return
	}
	// Over the total for the first time: send everything again, truncated.
	rec.truncating = true
	rec.written = 0
	h.Del("Warning")
	for _, t := range rec.ordered {
		n := utf8.RuneCountInString(t)
		if n > rec.maxItem {
			t, n = truncateRunes(t, rec.maxItem), rec.maxItem
		}
		if v, ok := warningHeader(t); ok {
			rec.written += n
			h.Add("Warning", v)
		}
	}
}

// truncateRunes keeps the first n runes, converting through []rune as
// Kubernetes does (invalid bytes become U+FFFD).
func truncateRunes(s string, n int) string {
	return string([]rune(s)[:n])
}

// warningHeader is `299 - "text"` with " and \ escaped; false when text is
// not valid UTF-8 or has control characters (apimachinery's NewWarningHeader).
func warningHeader(text string) (string, bool) {
	if !utf8.ValidString(text) {
		return "", false
	}
	for _, c := range text {
		if unicode.IsControl(c) {
			return "", false
		}
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	b.WriteString(`299 - "`)
	for _, c := range text {
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	b.WriteByte('"')
	return b.String(), true
}
