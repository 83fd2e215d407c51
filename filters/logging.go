// This file logs one line per request, as kube's httplog does.

package filters

import (
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// RequestLoggingConfig configures WithRequestLogging.
type RequestLoggingConfig struct {
	// Logger receives the lines. Nil means none (the filter passes
	// requests through).
	Logger *zap.Logger
}

// WithRequestLogging logs one line per request at V(3) (zap level -3, where
// kube's httplog logs every request: verb, URI, latency, userAgent,
// audit-ID, srcIP, user, resp), and answers of 500 or more at Warn. It
// reads the request info, audit ID and user from the context when present.
func WithRequestLogging(cfg RequestLoggingConfig) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		log := cfg.Logger
		if log == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rw := WrapResponseWriter(w)
			next.ServeHTTP(rw, r)
			code := rw.Status()
			level := zapcore.Level(-3)
			if code >= 500 {
				level = zap.WarnLevel
			}
			if ce := log.Check(level, "HTTP"); ce != nil {
				verb := r.Method
				if info, ok := RequestInfoFrom(r.Context()); ok && info.Verb != "" {
					verb = strings.ToUpper(info.Verb)
				}
				fields := []zap.Field{
					zap.String("verb", verb), zap.String("URI", r.RequestURI), zap.Duration("latency", time.Since(start)),
					zap.String("userAgent", r.UserAgent()), zap.String("audit-ID", AuditIDFrom(r.Context())),
					zap.String("srcIP", r.RemoteAddr),
				}
				if u, ok := UserFrom(r.Context()); ok {
					fields = append(fields, zap.String("user", u.Name))
				}
				ce.Write(append(fields, zap.Int("resp", code))...)
			}
		})
	}
}
