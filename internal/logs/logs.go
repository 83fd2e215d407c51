// Package logs is the server's own logger, configured as kube's components
// configure theirs: --logging-format text or json (kube's JSON field names),
// -v (verbosity: V(n) is zap level -n), --vmodule (per-file verbosity), and
// /debug/flags/v to change the verbosity of a running server.
package logs

import (
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Config configures the logger (annex.Logging is this). The zero value is
// kube's default: text, verbosity 0, on stderr.
type Config struct {
	// Format is "text" (one readable line per entry; zero means text) or
	// "json" (kube's JSON lines: ts, caller, msg, v, and the entry's
	// key/value pairs, err for errors).
	Format string
	// Verbosity is -v: entries logged at V(n) (zap level -n) show when n
	// is at most Verbosity. At 3, every request is logged as kube's httplog
	// line ("HTTP" with verb, URI, latency, userAgent, audit-ID, srcIP,
	// resp).
	Verbosity int
	// VModule is --vmodule: "pattern=N,..." raises the verbosity of the
	// source files whose base name (without .go) matches the glob pattern,
	// or whose path does when the pattern has a "/".
	VModule string
	// FlushFrequency is --log-flush-frequency. Entries are written as they
	// come (nothing is buffered), so it changes nothing; it is accepted so
	// that a kube component's arguments run unchanged.
	FlushFrequency time.Duration
	// Output receives the lines. Nil means stderr.
	Output io.Writer
}

// V is the zap level of kube's verbosity n (logr's V(n)).
func V(n int) zapcore.Level { return zapcore.Level(-n) }

// vmoduleRule is one pattern=N of --vmodule.
type vmoduleRule struct {
	pattern string
	level   int
}

func parseVModule(s string) ([]vmoduleRule, error) {
	var rules []vmoduleRule
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		pat, lv, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(lv)
		if !ok || pat == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("--vmodule: %q is not pattern=N", part)
		}
		if _, err := path.Match(pat, ""); err != nil {
			return nil, fmt.Errorf("--vmodule: %q: %v", pat, err)
		}
		rules = append(rules, vmoduleRule{pat, n})
	}
	return rules, nil
}

// New builds the logger of cfg on w, and the level /debug/flags/v changes.
func New(cfg Config, w zapcore.WriteSyncer) (*zap.Logger, zap.AtomicLevel, error) {
	level := zap.NewAtomicLevelAt(V(cfg.Verbosity))
	rules, err := parseVModule(cfg.VModule)
	if err != nil {
		return nil, level, err
	}
	var enc zapcore.Encoder
	switch cfg.Format {
	case "", "text":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		ec.EncodeLevel = func(l zapcore.Level, pe zapcore.PrimitiveArrayEncoder) {
			if l < zapcore.InfoLevel {
				pe.AppendString("V(" + strconv.Itoa(int(-l)) + ")")
				return
			}
			zapcore.CapitalLevelEncoder(l, pe)
		}
		enc = zapcore.NewConsoleEncoder(ec)
	case "json":
		enc = zapcore.NewJSONEncoder(zapcore.EncoderConfig{
			MessageKey: "msg", CallerKey: "caller", NameKey: "logger", TimeKey: "ts",
			EncodeTime:     func(t time.Time, pe zapcore.PrimitiveArrayEncoder) { pe.AppendFloat64(float64(t.UnixNano()) / 1e6) },
			EncodeDuration: zapcore.StringDurationEncoder,
			EncodeCaller:   zapcore.ShortCallerEncoder,
		})
	default:
		return nil, level, fmt.Errorf("--logging-format: %q is not one of text, json", cfg.Format)
	}
	var core zapcore.Core = &levelCore{Core: zapcore.NewCore(enc, zapcore.Lock(w), zapcore.DebugLevel-126),
		level: level, rules: rules, json: cfg.Format == "json"}
	return zap.New(core, zap.AddCaller()), level, nil
}

// levelCore applies the verbosity and --vmodule, and in JSON writes kube's
// "v" and "err" keys.
type levelCore struct {
	zapcore.Core
	level zap.AtomicLevel
	rules []vmoduleRule
	json  bool
}

func (c *levelCore) Enabled(l zapcore.Level) bool {
	if c.level.Enabled(l) {
		return true
	}
	for _, r := range c.rules {
		if l >= V(r.level) {
			return true
		}
	}
	return false
}

func (c *levelCore) With(fields []zapcore.Field) zapcore.Core {
	return &levelCore{Core: c.Core.With(fields), level: c.level, rules: c.rules, json: c.json}
}

// Check admits an entry the verbosity or a --vmodule rule could enable; the
// caller is known only at Write, which drops what --vmodule does not allow.
func (c *levelCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.Enabled(e.Level) {
		return ce
	}
	return ce.AddCore(e, c)
}

func (c *levelCore) vmoduleEnables(e zapcore.Entry) bool {
	if len(c.rules) == 0 || !e.Caller.Defined {
		return false
	}
	file := e.Caller.File
	base := strings.TrimSuffix(path.Base(file), ".go")
	for _, r := range c.rules {
		target := base
		if strings.Contains(r.pattern, "/") {
			target = strings.TrimSuffix(file, ".go")
		}
		if ok, _ := path.Match(r.pattern, target); ok || (strings.Contains(r.pattern, "/") && strings.HasSuffix(target, r.pattern)) {
			return e.Level >= V(r.level)
		}
	}
	return false
}

func (c *levelCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if !c.level.Enabled(e.Level) && !c.vmoduleEnables(e) {
		return nil
	}
	if c.json {
		if e.Level < zapcore.ErrorLevel {
			v := 0
			if e.Level < zapcore.InfoLevel {
				v = int(-e.Level)
			}
			fields = append([]zapcore.Field{zap.Int("v", v)}, fields...)
		}
		for i := range fields {
			if fields[i].Key == "error" && fields[i].Type == zapcore.ErrorType {
				fields[i].Key = "err"
			}
		}
	}
	return c.Core.Write(e, fields)
}

// LevelHandler serves /debug/flags/v as kube's components: a PUT whose
// body is a verbosity sets it. With a logger given in code (nil level)
// there is no level to set.
func LevelHandler(level *zap.AtomicLevel) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.Method != http.MethodPut {
			w.Header().Set("Allow", http.MethodPut)
			http.Error(w, "only PUT is allowed", http.StatusMethodNotAllowed)
			return
		}
		if level == nil {
			http.Error(w, "the server's logger was given in code (Builder.Observability.Logger): its verbosity is set there", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(body)))
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("invalid verbosity %q", strings.TrimSpace(string(body))), http.StatusBadRequest)
			return
		}
		level.SetLevel(V(n))
		fmt.Fprintf(w, "successfully set klog.logging.verbosity to %d", n)
	}
}
