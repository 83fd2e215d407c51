// This file holds one request's audit record: the event as it fills in, the
// recorder later stages annotate through, the request-body tee and the
// response writer that catches the status, the start of the response and,
// when the level asks for it, the body.

package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// record is one audited request. Its methods that record (the
// filters.AuditAnnotationRecorder and optional interfaces) are safe for
// concurrent use: validating webhooks annotate in parallel.
type record struct {
	cfg         RequestConfig
	longRunning bool
	body        *teeBody // the request body, when it is recorded

	mu sync.Mutex // guards ev and the head fields
	ev Event

	// The encoding of ev's fields from requestURI to userAgent in the
	// request's first event, written as they are into the later ones while
	// impersonatedUser is still headImp (see appendEventHead); headBuf holds
	// it, taken from the Auditor's pool until release.
	head    []byte
	headImp *UserInfo
	headBuf *[]byte

	// Storage for what ev and the filter point at, allocated with the record
	// rather than each on its own.
	rw     responseWriter
	ref    ObjectReference
	status ResponseStatus
	peer   [1]string // the usual sourceIPs: the peer's address alone
}

var (
	_ filters.AuditAnnotationRecorder      = (*record)(nil)
	_ filters.AuditLevelAnnotationRecorder = (*record)(nil)
	_ filters.AuditImpersonationRecorder   = (*record)(nil)
)

const (
	maxUserAgentLength      = 1024
	userAgentTruncateSuffix = "...TRUNCATED"
)

func (a *Auditor) newRecord(r *http.Request, info *filters.RequestInfo, cfg RequestConfig, user, impersonated *filters.User) *record {
	received, ok := filters.ReceivedTimestampFrom(r.Context())
	if !ok {
		received = a.now()
	}
	ua := r.UserAgent()
	if len(ua) > maxUserAgentLength {
		ua = ua[:maxUserAgentLength] + userAgentTruncateSuffix
	}
	rec := &record{cfg: cfg, longRunning: a.longRunning(r, info)}
	// Field by field: an Event literal would be built on the stack first
	// (a 1 KiB frame on the hot path; see encodeTruncated).
	ev := &rec.ev
	ev.Kind, ev.APIVersion, ev.Level = "Event", APIVersion, cfg.Level
	ev.AuditID = filters.AuditIDFrom(r.Context())
	ev.RequestURI, ev.Verb = r.URL.RequestURI(), info.Verb
	ev.User = userInfo(user)
	ev.SourceIPs = sourceIPs(r, rec.peer[:0])
	ev.UserAgent = ua
	ev.RequestReceivedTimestamp = MicroTime{received}
	if impersonated != nil {
		u := userInfo(impersonated)
		rec.ev.ImpersonatedUser = &u
	}
	if info.IsResourceRequest {
		rec.ref = ObjectReference{
			Resource:    info.Resource,
			Namespace:   info.Namespace,
			Name:        info.Name,
			APIGroup:    info.APIGroup,
			APIVersion:  info.APIVersion,
			Subresource: info.Subresource,
		}
		rec.ev.ObjectRef = &rec.ref
	}
	return rec
}

func userInfo(u *filters.User) UserInfo {
	if u == nil {
		return UserInfo{}
	}
	// The user is not changed once authenticated: the event shares its
	// groups and extra rather than copying them on every request.
	return UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// sourceIPs lists X-Forwarded-For's valid addresses, X-Real-Ip's when not
// already listed, and the peer's unless it is the last one listed, as
// Kubernetes' utilnet.SourceIPs. When the list is the peer's IPv4 address
// alone, it is appended to peer (room for one: no allocation).
func sourceIPs(r *http.Request, peer []string) []string {
	var ips []net.IP
	if fwd := r.Header.Get("X-Forwarded-For"); fwd != "" {
		for _, part := range strings.Split(fwd, ",") {
			if ip := net.ParseIP(strings.TrimSpace(part)); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	if real := r.Header.Get("X-Real-Ip"); real != "" {
		if ip := net.ParseIP(real); ip != nil && !slices.ContainsFunc(ips, ip.Equal) {
			ips = append(ips, ip)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(ips) == 0 {
		// The usual case, a peer's IPv4 address, needs no net.IP: ParseAddr
		// takes only the dotted form net.IP.String writes.
		if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
			return append(peer, host)
		}
	}
	if remote := net.ParseIP(host); remote != nil && (len(ips) == 0 || !remote.Equal(ips[len(ips)-1])) {
		ips = append(ips, remote)
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// AddAuditAnnotation records an annotation; the first value of a key wins,
// as in Kubernetes.
func (rec *record) AddAuditAnnotation(key, value string) {
	rec.mu.Lock()
	rec.annotate(key, value)
	rec.mu.Unlock()
}

// AddAuditAnnotationWithLevel records an annotation when the request is
// audited at level or above.
func (rec *record) AddAuditAnnotationWithLevel(key, value, level string) {
	if rec.cfg.Level.AtLeast(Level(level)) {
		rec.AddAuditAnnotation(key, value)
	}
}

// RecordImpersonatedUser sets the event's impersonatedUser.
func (rec *record) RecordImpersonatedUser(u *filters.User) {
	if u == nil {
		return
	}
	ui := userInfo(u)
	rec.mu.Lock()
	rec.ev.ImpersonatedUser = &ui
	rec.mu.Unlock()
}

// annotate is AddAuditAnnotation with rec.mu held.
func (rec *record) annotate(key, value string) {
	if _, ok := rec.ev.Annotations[key]; ok {
		return
	}
	if rec.ev.Annotations == nil {
		rec.ev.Annotations = make(map[string]string, 8) // decision, reason, stage latencies and a few more
	}
	rec.ev.Annotations[key] = value
}

// wantsRequestBody reports whether the request body is needed: recorded at
// Request level and above for the verbs that send one, and read at every
// level for create and update, whose object names, uid and resourceVersion
// complete objectRef as in Kubernetes.
func (rec *record) wantsRequestBody(info *filters.RequestInfo) bool {
	if !info.IsResourceRequest {
		return false
	}
	switch info.Verb {
	case "create", "update":
		return true
	case "patch", "delete", "deletecollection":
		return rec.cfg.Level.AtLeast(LevelRequest)
	}
	return false
}

// attachRequest puts what was read of the request body into the event, with
// rec.mu held.
func (rec *record) attachRequest() {
	if rec.body == nil || rec.body.over || len(rec.body.buf) == 0 || rec.ev.RequestObject != nil {
		return
	}
	body := rec.body.buf
	if v := rec.ev.Verb; (v == "create" || v == "update") && rec.ev.ObjectRef != nil {
		var m struct {
			Name            string `json:"name"`
			Namespace       string `json:"namespace"`
			UID             string `json:"uid"`
			ResourceVersion string `json:"resourceVersion"`
		}
		if md := topLevelField(body, "metadata"); md != nil && json.Unmarshal(md, &m) == nil {
			ref := rec.ev.ObjectRef
			fill(&ref.Name, m.Name)
			fill(&ref.Namespace, m.Namespace)
			fill(&ref.UID, m.UID)
			fill(&ref.ResourceVersion, m.ResourceVersion)
		}
	}
	if !rec.cfg.Level.AtLeast(LevelRequest) || !json.Valid(body) {
		return
	}
	if rec.cfg.OmitManagedFields {
		body = stripManagedFields(body)
	}
	rec.ev.RequestObject = body
}

func fill(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// complete fills the ResponseComplete fields from what the handler did, with
// rec.mu held.
func (rec *record) complete(rw *responseWriter, maxObject int64) {
	rec.attachRequest()
	if !rw.started {
		rec.ev.ResponseStatus = connectionClosedEarly()
		return
	}
	rec.status = ResponseStatus{Code: int32(rw.code)}
	st := &rec.status
	rec.ev.ResponseStatus = st
	if rw.capture == captureNone {
		return
	}
	if rw.over {
		if rw.capture == captureAll {
			rec.annotate(TruncatedAnnotation, "true")
		}
		return
	}
	body := rw.buf
	if isStatus(body) {
		var s meta.Status
		if json.Unmarshal(body, &s) == nil && s.Kind == "Status" {
			st.Status, st.Message, st.Reason, st.Details = s.Status, s.Message, s.Reason, s.Details
		}
	}
	if rw.capture == captureAll && len(body) > 0 {
		if rec.cfg.OmitManagedFields {
			body = stripManagedFields(body)
		}
		rec.ev.ResponseObject = body
	}
}

var statusPrefix = []byte(`{"kind":"Status"`)

// isStatus reports whether a JSON body is a Status, as written by
// filters.WriteStatus (kind first).
func isStatus(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), statusPrefix)
}

// teeBody keeps a copy of what the handler reads of the request body, up to
// limit bytes (over is then set and the copy dropped).
type teeBody struct {
	rc    io.ReadCloser
	limit int64
	buf   []byte
	over  bool
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 && !t.over {
		if int64(len(t.buf)+n) > t.limit {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p[:n]...)
		}
	}
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

// What the response writer copies of the body.
type captureMode uint8

const (
	captureNone   captureMode = iota
	captureAll                // the response object (RequestResponse level)
	captureStatus             // a Status body, for responseStatus
	captureSniff              // a Status body if the first write starts one
)

// maxStatusBytes bounds the copy of a Status body at levels below
// RequestResponse.
const maxStatusBytes = 64 << 10

// responseWriter records the status, writes the ResponseStarted event of a
// long-running request when its response starts, and copies the body when
// the level records it or it is a Status. Flush and Hijack reach the
// wrapped writer through http.ResponseController.
type responseWriter struct {
	w   http.ResponseWriter
	a   *Auditor
	rec *record
	ctx context.Context

	started bool
	code    int
	capture captureMode
	limit   int64
	buf     []byte
	over    bool
}

var _ http.ResponseWriter = (*responseWriter)(nil)

func (rw *responseWriter) Header() http.Header { return rw.w.Header() }

// Unwrap returns the wrapped writer, for http.ResponseController.
func (rw *responseWriter) Unwrap() http.ResponseWriter { return rw.w }

func (rw *responseWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		rw.start(code)
	}
	rw.w.WriteHeader(code)
}

func (rw *responseWriter) Write(p []byte) (int, error) {
	rw.start(http.StatusOK)
	if rw.capture != captureNone && !rw.over {
		rw.copy(p)
	}
	return rw.w.Write(p)
}

// FlushError sends the headers (an implicit 200) and flushes.
func (rw *responseWriter) FlushError() error {
	rw.start(http.StatusOK)
	return http.NewResponseController(rw.w).Flush()
}

// Flush is FlushError for code that asserts http.Flusher.
func (rw *responseWriter) Flush() { _ = rw.FlushError() }

// Hijack records the switch of protocols (101) before handing the
// connection over, as Kubernetes does.
func (rw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	rw.start(http.StatusSwitchingProtocols)
	return http.NewResponseController(rw.w).Hijack()
}

// start runs once, when the response starts.
func (rw *responseWriter) start(code int) {
	if rw.started {
		return
	}
	rw.started, rw.code = true, code
	h := rw.w.Header()
	ct := h.Get("Content-Type")
	jsonBody := (strings.HasPrefix(ct, "application/json") || strings.Contains(ct, "+json")) && h.Get("Content-Encoding") == ""
	switch {
	case !jsonBody:
	case rw.rec.cfg.Level == LevelRequestResponse && !rw.rec.longRunning:
		rw.capture, rw.limit = captureAll, rw.a.maxObject
	case code < 200 || code > 299:
		rw.capture, rw.limit = captureStatus, maxStatusBytes
	default:
		rw.capture, rw.limit = captureSniff, maxStatusBytes
	}
	if rw.rec.longRunning {
		rw.rec.mu.Lock()
		rw.rec.ev.ResponseStatus = &ResponseStatus{Code: int32(code)}
		rw.rec.mu.Unlock()
		rw.a.emit(rw.ctx, rw.rec, StageResponseStarted)
	}
}

func (rw *responseWriter) copy(p []byte) {
	if rw.capture == captureSniff {
		if !isStatus(p) {
			rw.capture = captureNone
			return
		}
		rw.capture = captureStatus
	}
	if int64(len(rw.buf)+len(p)) > rw.limit {
		rw.over, rw.buf = true, nil
		return
	}
	rw.buf = append(rw.buf, p...)
}

// stripManagedFields removes metadata.managedFields from an object, from
// the items of a list and from the objects of a Table's rows. It returns b
// itself when there is nothing to remove or b is not a JSON object.
func stripManagedFields(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"managedFields"`)) {
		return b
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return b
	}
	changed := false
	if m, ok := top["metadata"]; ok {
		var md map[string]json.RawMessage
		if json.Unmarshal(m, &md) == nil {
			if _, ok := md["managedFields"]; ok {
				delete(md, "managedFields")
				top["metadata"], _ = json.Marshal(md)
				changed = true
			}
		}
	}
	for _, key := range []string{"items", "rows"} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			continue
		}
		elemChanged := false
		for i, e := range elems {
			var ne []byte
			if key == "rows" {
				ne = stripRowObject(e)
			} else {
				ne = stripManagedFields(e)
			}
			if !bytes.Equal(ne, e) {
				elems[i], elemChanged = ne, true
			}
		}
		if elemChanged {
			top[key], _ = json.Marshal(elems)
			changed = true
		}
	}
	if !changed {
		return b
	}
	out, err := json.Marshal(top)
	if err != nil {
		return b
	}
	return out
}

func stripRowObject(row []byte) []byte {
	var r map[string]json.RawMessage
	if json.Unmarshal(row, &r) != nil {
		return row
	}
	obj, ok := r["object"]
	if !ok {
		return row
	}
	no := stripManagedFields(obj)
	if bytes.Equal(no, obj) {
		return row
	}
	r["object"] = no
	out, err := json.Marshal(r)
	if err != nil {
		return row
	}
	return out
}
