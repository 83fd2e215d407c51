// This file holds the kubelet source (--source kubelet): the cluster's nodes
// and pods followed through kubeclient (list + watch), and every resolution
// each node's /metrics/resource scraped over HTTPS at the kubelet's port and
// parsed with expfmt (in the delimited protobuf format, which the kubelet's
// promhttp handler serves when asked, or the text format, which
// metrics-server reads), as metrics-server does: the same flags
// (--kubelet-port, --kubelet-use-node-status-port,
// --kubelet-preferred-address-types, --kubelet-insecure-tls,
// --kubelet-certificate-authority, --kubelet-client-certificate,
// --kubelet-client-key, --kubelet-request-timeout), the same metrics
// (node_cpu_usage_seconds_total, node_memory_working_set_bytes,
// container_cpu_usage_seconds_total, container_memory_working_set_bytes,
// each at its own timestamp) and the same rules: a node without both
// counters, or a pod with an incomplete container, is left out of the batch.

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/annexapi/annex/kubeclient"
)

// defaultAddressTypes is metrics-server's --kubelet-preferred-address-types.
var defaultAddressTypes = []string{"Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"}

// KubeletOptions are metrics-server's kubelet flags.
type KubeletOptions struct {
	Port                  int
	UseNodeStatusPort     bool
	PreferredAddressTypes []string
	InsecureTLS           bool
	CAFile                string
	ClientCertFile        string
	ClientKeyFile         string
	RequestTimeout        time.Duration
}

// validate says what is wrong with o, in metrics-server's words.
func (o KubeletOptions) validate() error {
	var errs []error
	if o.CAFile != "" && o.InsecureTLS {
		errs = append(errs, errors.New("cannot use both --kubelet-certificate-authority and --kubelet-insecure-tls"))
	}
	if (o.ClientKeyFile != "") != (o.ClientCertFile != "") {
		errs = append(errs, errors.New("need both --kubelet-client-key and --kubelet-client-certificate"))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, errors.New("kubelet-request-timeout should be positive"))
	}
	for _, t := range o.PreferredAddressTypes {
		if !slices.Contains(defaultAddressTypes, t) {
			errs = append(errs, fmt.Errorf("--kubelet-preferred-address-types: unknown address type %q (want %s)", t, strings.Join(defaultAddressTypes, ", ")))
		}
	}
	return errors.Join(errs...)
}

// Kubelets is the kubelet source. Run follows the cluster's nodes and pods;
// Scrape reads every known node's kubelet.
type Kubelets struct {
	opts    KubeletOptions
	cluster *kubeclient.Client
	conns   *kubeletConns
	// token is the server's own bearer token for the kubelets (as
	// metrics-server uses its in-cluster credentials), "" for none.
	token func() (string, error)
	log   *zap.Logger
	now   func() time.Time

	mu     sync.RWMutex
	nodes  map[string]kubeletNode
	labels *podLabels // the pods'

	// podsHint is how many pods the last batch had: the next one's room
	// (Scrape is called by one goroutine at a time).
	podsHint int

	// parsing holds a parser for each answer being read and parsed: every
	// kubelet is asked at once, but only as many answers are read and
	// parsed at a time as there are CPUs, so that a thousand answers and
	// their parsers' garbage are not alive at once.
	parsing chan *resourceParser

	// nodesListed and podsListed are closed once the cluster's nodes and
	// pods have been listed.
	nodesListed, podsListed         chan struct{}
	nodesListedOnce, podsListedOnce sync.Once
}

// kubeletNode is what a scrape needs of a node.
type kubeletNode struct {
	labels     Labels
	addresses  map[string]string // type -> first address of that type
	statusPort int
}

// NewKubelets makes the kubelet source. cluster lists nodes and pods; creds
// are the server's own credentials, presented to the kubelets unless a
// client certificate is given.
func NewKubelets(opts KubeletOptions, cluster *kubeclient.Client, creds *kubeclient.Config, log *zap.Logger) (*Kubelets, error) {
	if opts.Port == 0 {
		opts.Port = 10250
	}
	if len(opts.PreferredAddressTypes) == 0 {
		opts.PreferredAddressTypes = defaultAddressTypes
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 10 * time.Second
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: opts.InsecureTLS} //nolint:gosec // --kubelet-insecure-tls, as metrics-server's
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--kubelet-certificate-authority: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--kubelet-certificate-authority %s: no certificate", opts.CAFile)
		}
	}
	k := &Kubelets{opts: opts, cluster: cluster, log: log, now: time.Now,
		nodes: map[string]kubeletNode{}, labels: newPodLabels(),
		nodesListed: make(chan struct{}), podsListed: make(chan struct{})}
	switch {
	case opts.ClientCertFile != "":
		cert, err := tls.LoadX509KeyPair(opts.ClientCertFile, opts.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--kubelet-client-certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	case creds != nil && len(creds.CertData) > 0:
		cert, err := tls.X509KeyPair(creds.CertData, creds.KeyData)
		if err != nil {
			return nil, fmt.Errorf("kubelet client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	case creds != nil && creds.BearerToken != "":
		tok := creds.BearerToken
		k.token = func() (string, error) { return tok, nil }
	case creds != nil && creds.BearerTokenFile != "":
		file := creds.BearerTokenFile
		k.token = func() (string, error) { // re-read: a projected token rotates
			b, err := os.ReadFile(file)
			return strings.TrimSpace(string(b)), err
		}
	}
	// HTTP/1.1, one kept-alive connection per kubelet (kubeletconn.go): an
	// HTTP/2 client connection holds a framer's buffers and header tables
	// besides TLS's, tens of megabytes at a thousand nodes, and
	// multiplexing buys nothing for one request per node per resolution.
	k.conns = newKubeletConns(tc, opts.RequestTimeout)
	k.parsing = make(chan *resourceParser, runtime.GOMAXPROCS(0))
	for range cap(k.parsing) {
		k.parsing <- newResourceParser()
	}
	return k, nil
}

// Run follows the cluster's nodes and pods until ctx ends.
func (k *Kubelets) Run(ctx context.Context) error {
	onErr := func(what string) func(error) {
		return func(err error) { k.log.Warn("following the cluster's "+what+" failed", zap.Error(err)) }
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		kubeclient.Inform(ctx, k.cluster, "/api/v1/nodes", 0, kubeclient.InformHandler{
			Replace: func(items []json.RawMessage) error {
				nodes := map[string]kubeletNode{}
				for _, raw := range items {
					name, n, err := decodeNode(raw)
					if err != nil {
						return err
					}
					nodes[name] = n
				}
				k.mu.Lock()
				k.nodes = nodes
				k.mu.Unlock()
				k.nodesListedOnce.Do(func() { close(k.nodesListed) })
				return nil
			},
			Event: func(typ string, raw json.RawMessage) error {
				name, n, err := decodeNode(raw)
				if err != nil {
					return err
				}
				k.mu.Lock()
				defer k.mu.Unlock()
				if typ == "DELETED" {
					delete(k.nodes, name)
				} else {
					k.nodes[name] = n
				}
				return nil
			},
			OnError: onErr("nodes"),
		})
	}()
	go func() {
		defer wg.Done()
		// Only the pods' names and labels are read: their metadata is
		// listed and watched (PartialObjectMetadata), as metrics-server's
		// metadata informer does, not whole pods (30,000 of them held at
		// once by the first list).
		kubeclient.Inform(ctx, k.cluster, "/api/v1/pods", 0, kubeclient.InformHandler{
			Metadata: true,
			Replace: func(items []json.RawMessage) error {
				labels := newPodLabels()
				for _, raw := range items {
					key, l, err := decodePodLabels(raw)
					if err != nil {
						return err
					}
					labels.set(key.namespace, key.name, l)
				}
				k.mu.Lock()
				k.labels = labels
				k.mu.Unlock()
				k.podsListedOnce.Do(func() { close(k.podsListed) })
				return nil
			},
			Event: func(typ string, raw json.RawMessage) error {
				key, l, err := decodePodLabels(raw)
				if err != nil {
					return err
				}
				k.mu.Lock()
				defer k.mu.Unlock()
				if typ == "DELETED" {
					k.labels.delete(key.namespace, key.name)
				} else {
					k.labels.set(key.namespace, key.name, l)
				}
				return nil
			},
			OnError: onErr("pods"),
		})
	}()
	wg.Wait()
	return nil
}

// decodeNode reads what a scrape needs of a Node.
func decodeNode(raw json.RawMessage) (string, kubeletNode, error) {
	var n struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Status struct {
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
			DaemonEndpoints struct {
				KubeletEndpoint struct {
					Port int `json:"Port"`
				} `json:"kubeletEndpoint"`
			} `json:"daemonEndpoints"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", kubeletNode{}, fmt.Errorf("decode node: %w", err)
	}
	kn := kubeletNode{labels: LabelsOf(n.Metadata.Labels), addresses: map[string]string{}, statusPort: n.Status.DaemonEndpoints.KubeletEndpoint.Port}
	for _, a := range n.Status.Addresses {
		if _, ok := kn.addresses[a.Type]; !ok {
			kn.addresses[a.Type] = a.Address
		}
	}
	return n.Metadata.Name, kn, nil
}

// decodePodLabels reads a Pod's namespace, name and labels.
func decodePodLabels(raw json.RawMessage) (podKey, map[string]string, error) {
	var p struct {
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return podKey{}, nil, fmt.Errorf("decode pod: %w", err)
	}
	return podKey{p.Metadata.Namespace, p.Metadata.Name}, p.Metadata.Labels, nil
}

// address is the node's address of the first preferred type it has, and
// the kubelet's port.
func (k *Kubelets) address(n kubeletNode) (string, error) {
	port := k.opts.Port
	if k.opts.UseNodeStatusPort && n.statusPort != 0 {
		port = n.statusPort
	}
	for _, t := range k.opts.PreferredAddressTypes {
		if a := n.addresses[t]; a != "" {
			return net.JoinHostPort(a, strconv.Itoa(port)), nil
		}
	}
	return "", fmt.Errorf("no address of the types %s", strings.Join(k.opts.PreferredAddressTypes, ", "))
}

// Scrape reads /metrics/resource of every known node at once. A node that
// fails is logged and left out; the batch is an error only when every node
// failed. The first Scrape waits until Run has listed the cluster's nodes
// and pods (as metrics-server waits for its informers), so that the first
// batches hold every node and the pods' labels rather than nothing.
func (k *Kubelets) Scrape(ctx context.Context) (*Batch, error) {
	for _, listed := range []chan struct{}{k.nodesListed, k.podsListed} {
		select {
		case <-listed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	k.mu.RLock()
	nodes := make(map[string]kubeletNode, len(k.nodes))
	for name, n := range k.nodes {
		nodes[name] = n
	}
	k.mu.RUnlock()
	// Every kubelet is asked at once: on its kept connection by one
	// goroutine that writes the GETs one after the other (a write of a few
	// hundred bytes to a socket does not wait), on a new one by a
	// goroutine of its own that dials. The answers are read in the order
	// the GETs went out, each as a parser is free, by a goroutine of its
	// own. (A goroutine per node, waiting for a parser, held a grown stack
	// and its request through the scrape: megabytes at a thousand nodes.)
	type sent struct {
		name string
		s    *nodeScrape
		err  error
	}
	sends := make(chan sent, len(nodes))
	go func() {
		for name, n := range nodes {
			s, err := k.newScrape(name, n)
			if err != nil {
				sends <- sent{name: name, err: err}
				continue
			}
			if s.req = k.conns.sendKept(ctx, s.addr, "/metrics/resource", s.token); s.req != nil {
				sends <- sent{name: name, s: s}
				continue
			}
			go func() {
				s.req, err = k.conns.send(ctx, s.addr, "/metrics/resource", s.token)
				sends <- sent{name, s, err}
			}()
		}
	}()
	// The batch's room is the last one's and a little more: growing it
	// by appends copied and threw away several times its size.
	b := &Batch{Nodes: make([]NodeSample, 0, len(nodes)), Pods: make([]PodSample, 0, k.podsHint+k.podsHint/8)}
	var batchMu sync.Mutex // guards b and failed
	var failed []error
	fail := func(name string, err error) {
		batchMu.Lock()
		defer batchMu.Unlock()
		failed = append(failed, fmt.Errorf("node %s: %w", name, err))
	}
	var reading sync.WaitGroup
	for range nodes {
		st := <-sends
		if st.err != nil {
			fail(st.name, st.err)
			continue
		}
		p, err := k.parser(ctx)
		if err != nil {
			st.s.req.close()
			fail(st.name, err)
			continue
		}
		reading.Go(func() {
			node, pods, err := k.readNode(ctx, st.s, p)
			k.parsing <- p
			if err != nil {
				fail(st.name, err)
				return
			}
			batchMu.Lock()
			defer batchMu.Unlock()
			if node != nil {
				b.Nodes = append(b.Nodes, *node)
			}
			b.Pods = append(b.Pods, pods...)
		})
	}
	reading.Wait()
	for _, err := range failed {
		k.log.Warn("scraping a kubelet failed", zap.Error(err))
	}
	k.conns.closeIdle() // those of nodes gone
	if len(failed) > 0 && len(failed) == len(nodes) {
		return nil, errors.Join(failed...)
	}
	k.podsHint = len(b.Pods)
	var ref []byte
	k.mu.RLock()
	for i := range b.Pods {
		p := &b.Pods[i]
		ref = appendPodRef(ref[:0], p.Namespace, p.Name)
		p.Labels = k.labels.get(ref)
	}
	k.mu.RUnlock()
	return b, nil
}

// nodeScrape is one kubelet's scrape once its GET is sent.
type nodeScrape struct {
	name        string
	node        kubeletNode
	addr, token string
	start       time.Time
	req         *kubeletRequest
}

// newScrape is the scrape of the node name, its GET not sent yet.
func (k *Kubelets) newScrape(name string, n kubeletNode) (*nodeScrape, error) {
	addr, err := k.address(n)
	if err != nil {
		return nil, err
	}
	s := &nodeScrape{name: name, node: n, addr: addr}
	if k.token != nil {
		if s.token, err = k.token(); err != nil {
			return nil, fmt.Errorf("bearer token: %w", err)
		}
	}
	s.start = k.now()
	return s, nil
}

// parser waits for a free parser. The answers are read only when they
// can be parsed at once: the others wait in their sockets, not in a
// thousand buffers.
func (k *Kubelets) parser(ctx context.Context) (*resourceParser, error) {
	select {
	case p := <-k.parsing:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readNode reads and parses the answer to s with p (sending the GET again
// on a new connection when the kept one had been closed).
func (k *Kubelets) readNode(ctx context.Context, s *nodeScrape, p *resourceParser) (*NodeSample, []PodSample, error) {
	var node *NodeSample
	var pods []PodSample
	decode := func(body io.Reader, h http.Header) (err error) {
		node, pods, err = p.decode(body, answerFormat(h), s.start)
		return err
	}
	err := s.req.read(p.br, decode)
	if errors.Is(err, errStaleConn) {
		var req *kubeletRequest
		if req, err = k.conns.send(ctx, s.addr, "/metrics/resource", s.token); err == nil {
			err = req.read(p.br, decode)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if node != nil {
		node.Name, node.Labels = s.name, s.node.labels
	}
	return node, pods, nil
}

// scrapeNode reads one kubelet: its GET sent, then readNode with a parser.
func (k *Kubelets) scrapeNode(ctx context.Context, name string, n kubeletNode) (*NodeSample, []PodSample, error) {
	s, err := k.newScrape(name, n)
	if err != nil {
		return nil, nil, err
	}
	if s.req, err = k.conns.send(ctx, s.addr, "/metrics/resource", s.token); err != nil {
		return nil, nil, err
	}
	p, err := k.parser(ctx)
	if err != nil {
		s.req.close()
		return nil, nil, err
	}
	defer func() { k.parsing <- p }()
	return k.readNode(ctx, s, p)
}

// resourceFamilies are the metric families of /metrics/resource the
// scrape reads; the others (container_start_time_seconds, the pod_ totals,
// resource_scrape_error: more than half the lines) are dropped before
// parsing.
var resourceFamilies = [][]byte{
	[]byte("container_cpu_usage_seconds_total"), []byte("container_memory_working_set_bytes"),
	[]byte("node_cpu_usage_seconds_total"), []byte("node_memory_working_set_bytes"),
}

// keepFamilies keeps, in place, the lines of the exposition text data that
// belong to resourceFamilies: their samples (the metric name, then "{" or
// a space) and their "# HELP" and "# TYPE" lines. It only selects lines by
// their first word; expfmt parses what is kept. The parser allocates for
// every sample it reads, labels and all, and that was most of a scrape's
// CPU.
func keepFamilies(data []byte) []byte {
	out := data[:0] // writes never pass reads
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		name := line
		if bytes.HasPrefix(name, []byte("# HELP ")) || bytes.HasPrefix(name, []byte("# TYPE ")) {
			name = name[len("# HELP "):]
		}
		for _, f := range resourceFamilies {
			if len(name) > len(f) && bytes.HasPrefix(name, f) && (name[len(f)] == '{' || name[len(f)] == ' ') {
				out = append(append(out, line...), '\n')
				break
			}
		}
	}
	return out
}

// decodeResourceMetrics parses a kubelet's /metrics/resource in the
// Prometheus text format. A series without a timestamp gets the time the
// scrape started. The node is nil unless both its counters are there and
// non-zero; a pod is left out when one of its containers lacks either
// counter, as metrics-server does.
func decodeResourceMetrics(r io.Reader, start time.Time) (*NodeSample, []PodSample, error) {
	return newResourceParser().decode(r, expfmt.FmtText, start)
}

// kubeletAccept is the Accept header of a scrape: the delimited protobuf
// format first, the text format as the fallback, and anything else last,
// as Prometheus asks its targets. A kubelet serves /metrics/resource
// through promhttp, which negotiates the format from this header; parsing
// the protobuf answer costs a fraction of parsing the text (see
// BenchmarkDecodeResourceMetrics). metrics-server asks for nothing and
// gets the text.
const kubeletAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," +
	"text/plain;version=0.0.4;q=0.3,*/*;q=0.1"

// answerFormat is the format of an answer by its Content-Type: the
// delimited protobuf format when it says so, the text format otherwise
// (what metrics-server assumes of every answer).
func answerFormat(h http.Header) expfmt.Format {
	if f := expfmt.ResponseFormat(h); f.FormatType() == expfmt.TypeProtoDelim {
		return f
	}
	return expfmt.FmtText
}

// resourceParser reads and parses answers one at a time, reusing its
// buffers and parsers from one to the next.
type resourceParser struct {
	br *bufio.Reader // a kubelet's connection while its answer is read
	// body reads a protobuf answer; it is large enough that a whole metric
	// family is read in place (protodelim peeks it rather than copying).
	body   *bufio.Reader
	family dto.MetricFamily
	buf    bytes.Buffer // a text answer
	text   expfmt.TextParser
	reader bytes.Reader

	start            time.Time
	nodeCPU, nodeMem *dto.Metric

	containers     []containerAcc
	containerIndex map[containerKey]int
	pods           []podAcc
	podIndex       map[podKey]int
	names          []byte // the kept pods' and containers' names
}

func newResourceParser() *resourceParser {
	return &resourceParser{br: bufio.NewReader(nil), body: bufio.NewReaderSize(nil, 64<<10),
		text: expfmt.NewTextParser(model.UTF8Validation), containerIndex: map[containerKey]int{}, podIndex: map[podKey]int{}}
}

// decode is decodeResourceMetrics with p's buffers, for an answer in
// format (the delimited protobuf format or the text format).
func (p *resourceParser) decode(r io.Reader, format expfmt.Format, start time.Time) (*NodeSample, []PodSample, error) {
	p.start, p.nodeCPU, p.nodeMem = start, nil, nil
	p.containers = p.containers[:0]
	clear(p.containerIndex)
	if format.FormatType() == expfmt.TypeProtoDelim {
		if err := p.decodeProto(r, format); err != nil {
			return nil, nil, err
		}
	} else if err := p.decodeText(r); err != nil {
		return nil, nil, err
	}
	return p.result()
}

// decodeProto reads a delimited protobuf answer whole, keeps the families
// the scrape reads (keepProtoFamilies) and decodes them with expfmt's
// decoder, one metric family at a time.
func (p *resourceParser) decodeProto(r io.Reader, format expfmt.Format) error {
	p.buf.Reset()
	if _, err := p.buf.ReadFrom(r); err != nil {
		return fmt.Errorf("read /metrics/resource: %w", err)
	}
	kept, err := keepProtoFamilies(p.buf.Bytes())
	if err != nil {
		return fmt.Errorf("parse /metrics/resource: %w", err)
	}
	p.reader.Reset(kept)
	p.body.Reset(&p.reader)
	defer p.body.Reset(nil)
	dec := expfmt.NewDecoder(p.body, format) // a *bufio.Reader is used as it is
	for {
		err := dec.Decode(&p.family)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("parse /metrics/resource: %w", err)
		}
		p.add(&p.family)
	}
}

// familyName is the field number of a MetricFamily's name
// (io.prometheus.client.MetricFamily, metrics.proto; TestFamilyNameField
// checks it against the descriptor).
const familyName protowire.Number = 1

// keepProtoFamilies keeps, in place, the length-delimited MetricFamily
// messages of data that belong to resourceFamilies, as keepFamilies keeps
// their lines of the text format: it reads each message's length and its
// name field with protowire and nothing else; expfmt decodes what is kept.
// Decoding a family allocates some twenty times for every sample (every
// label's name and value is a pointer to a string of its own), and the
// families the scrape does not read are more than half the samples.
func keepProtoFamilies(data []byte) ([]byte, error) {
	out := data[:0] // writes never pass reads
	for len(data) > 0 {
		size, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if size > uint64(len(data)-n) {
			return nil, io.ErrUnexpectedEOF
		}
		msg := data[:n+int(size)]
		data = data[len(msg):]
		name, err := protoFamilyName(msg[n:])
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(resourceFamilies, func(f []byte) bool { return bytes.Equal(f, name) }) {
			out = append(out, msg...)
		}
	}
	return out, nil
}

// protoFamilyName is the name field of an encoded MetricFamily, in msg.
func protoFamilyName(msg []byte) ([]byte, error) {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		if num == familyName && typ == protowire.BytesType {
			name, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			return name, nil
		}
		if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	return nil, nil
}

// decodeText reads a text answer whole and parses the families the scrape
// reads with expfmt's text parser.
func (p *resourceParser) decodeText(r io.Reader) error {
	p.buf.Reset()
	if _, err := p.buf.ReadFrom(r); err != nil {
		return fmt.Errorf("read /metrics/resource: %w", err)
	}
	text := p.buf.Bytes()
	blank := len(bytes.TrimSpace(text)) == 0
	kept := keepFamilies(text)
	if len(kept) == 0 && !blank {
		return errors.New("parse /metrics/resource: none of the resource metrics in the answer")
	}
	p.reader.Reset(kept)
	families, err := p.text.TextToMetricFamilies(&p.reader)
	if err != nil {
		return fmt.Errorf("parse /metrics/resource: %w", err)
	}
	// In name order, as a kubelet writes them (and its protobuf answer).
	for _, name := range resourceFamilies {
		if f := families[string(name)]; f != nil {
			p.add(f)
		}
	}
	return nil
}

// add takes what the scrape reads of one metric family: the node's
// counters, or each container's. A family read again replaces the values
// it had set.
func (p *resourceParser) add(f *dto.MetricFamily) {
	switch f.GetName() {
	case "node_cpu_usage_seconds_total":
		if len(f.Metric) > 0 {
			p.nodeCPU = f.Metric[0]
		}
	case "node_memory_working_set_bytes":
		if len(f.Metric) > 0 {
			p.nodeMem = f.Metric[0]
		}
	case "container_cpu_usage_seconds_total":
		for _, m := range f.Metric {
			c := p.container(m)
			c.Usage.CPUNanoseconds, c.Usage.Time = nanos(metricValue(m)), p.at(m)
		}
	case "container_memory_working_set_bytes":
		for _, m := range f.Metric {
			c := p.container(m)
			c.Usage.MemoryBytes, c.Usage.Time = uint64(metricValue(m)), p.at(m)
		}
	}
}

// container is the sample of m's container, added in the order first seen.
func (p *resourceParser) container(m *dto.Metric) *ContainerSample {
	var key containerKey
	for _, l := range m.Label {
		switch l.GetName() {
		case "namespace":
			key.ns = l.GetValue()
		case "pod":
			key.pod = l.GetValue()
		case "container":
			key.container = l.GetValue()
		}
	}
	i, ok := p.containerIndex[key]
	if !ok {
		i = len(p.containers)
		p.containerIndex[key] = i
		p.containers = append(p.containers, containerAcc{key: key, sample: ContainerSample{Name: key.container}})
	}
	return &p.containers[i].sample
}

// at is m's timestamp, or the scrape's start when it has none.
func (p *resourceParser) at(m *dto.Metric) time.Time {
	if m.TimestampMs != nil {
		return time.UnixMilli(m.GetTimestampMs())
	}
	return p.start
}

// metricValue is a counter's, gauge's or untyped metric's value.
func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// result is the node and the pods of the answer read.
func (p *resourceParser) result() (*NodeSample, []PodSample, error) {
	var node *NodeSample
	if p.nodeCPU != nil && p.nodeMem != nil {
		if v, w := metricValue(p.nodeCPU), metricValue(p.nodeMem); v > 0 && w > 0 {
			node = &NodeSample{Usage: Usage{Time: p.at(p.nodeCPU), CPUNanoseconds: nanos(v), MemoryBytes: uint64(w)}}
		}
	}
	p.nodeCPU, p.nodeMem = nil, nil // not kept alive until the next answer
	// The pods in the order first seen; one with an incomplete container
	// is left out.
	p.pods = p.pods[:0]
	clear(p.podIndex)
	for i := range p.containers {
		c := &p.containers[i]
		pk := podKey{c.key.ns, c.key.pod}
		j, ok := p.podIndex[pk]
		if !ok {
			j = len(p.pods)
			p.podIndex[pk] = j
			p.pods = append(p.pods, podAcc{key: pk})
		}
		c.pod = j
		if c.sample.Usage.CPUNanoseconds == 0 || c.sample.Usage.MemoryBytes == 0 {
			p.pods[j].incomplete = true
		} else {
			p.pods[j].n++
		}
	}
	// One allocation for the kept pods, one for all their containers and
	// one for their names.
	total, served := 0, 0
	for j := range p.pods {
		if pa := &p.pods[j]; !pa.incomplete && pa.n > 0 {
			pa.start = total
			total += pa.n
			served++
		}
	}
	// The kept pods' namespaces and names and their containers' names are
	// cut from one string: the answer's own strings (each in a small
	// allocation of its own, in blocks shared with the metric's other
	// labels) are dropped with it. A namespace is written once for the
	// pods after it in the same one.
	keptPod := func(pa *podAcc) bool { return !pa.incomplete && pa.n > 0 }
	keptContainer := func(c *containerAcc) bool {
		return keptPod(&p.pods[c.pod]) && c.sample.Usage.CPUNanoseconds != 0 && c.sample.Usage.MemoryBytes != 0
	}
	p.names = p.names[:0]
	lastNS := "\x00" // no namespace
	for j := range p.pods {
		if pa := &p.pods[j]; keptPod(pa) {
			if pa.key.namespace != lastNS {
				lastNS = pa.key.namespace
				p.names = append(p.names, lastNS...)
			}
			p.names = append(p.names, pa.key.name...)
		}
	}
	for i := range p.containers {
		if c := &p.containers[i]; keptContainer(c) {
			p.names = append(p.names, c.sample.Name...)
		}
	}
	names := string(p.names)
	cut := func(n int) string {
		s := names[:n]
		names = names[n:]
		return s
	}
	slab := make([]ContainerSample, total)
	out := make([]PodSample, 0, served)
	lastNS, ns := "\x00", ""
	for j := range p.pods {
		if pa := &p.pods[j]; keptPod(pa) {
			if pa.key.namespace != lastNS {
				lastNS, ns = pa.key.namespace, cut(len(pa.key.namespace))
			}
			out = append(out, PodSample{Namespace: ns, Name: cut(len(pa.key.name)), Containers: slab[pa.start : pa.start+pa.n : pa.start+pa.n]})
		}
	}
	for i := range p.containers {
		if c := &p.containers[i]; keptContainer(c) {
			pa := &p.pods[c.pod]
			slab[pa.start+pa.filled] = ContainerSample{Name: cut(len(c.sample.Name)), Usage: c.sample.Usage}
			pa.filled++
		}
	}
	return node, out, nil
}

// containerKey names a container in an answer.
type containerKey struct{ ns, pod, container string }

// containerAcc is a container's samples as an answer is read, and the index
// of its pod in resourceParser.pods.
type containerAcc struct {
	key    containerKey
	sample ContainerSample
	pod    int
}

// podAcc is a pod as an answer is read: how many complete containers it
// has, whether one is incomplete, and where its containers go.
type podAcc struct {
	key              podKey
	n, start, filled int
	incomplete       bool
}

// nanos converts a counter in seconds to whole nanoseconds, truncated as
// metrics-server truncates it, so that both compute the same rate from the
// same answer.
func nanos(seconds float64) uint64 { return uint64(seconds * 1e9) }
