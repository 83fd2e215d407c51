// This file holds the configuration sources Start runs: the files, polled
// for changes, and the cluster, listed and watched through kubeclient as an
// informer does (re-list on 410 Gone or a broken watch; the last good
// configuration stays while the cluster cannot be reached).

package flowcontrol

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/meta"
)

// filesDigest hashes the files' contents; a file that cannot be read counts
// as a change (so the error is logged once per change).
func filesDigest(paths []string) [32]byte {
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(h, "error %s %v", p, err)
		}
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func (c *Controller) runFiles(ctx context.Context) {
	last := c.fileDigest
	t := time.NewTicker(cmp.Or(c.cfg.FileCheckInterval, 10*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d := filesDigest(c.cfg.ConfigFiles)
		if d == last {
			continue
		}
		last = d
		objs, err := c.localConfiguration()
		if err != nil {
			c.reloadErrors.Add(1)
			c.log.Error("flowcontrol configuration files rejected; keeping the last good configuration", zap.Error(err))
			continue
		}
		c.apply(objs)
		c.log.Info("flowcontrol configuration reloaded", zap.Strings("files", c.cfg.ConfigFiles))
	}
}

// The cluster's collections.
const (
	flowSchemasPath    = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	priorityLevelsPath = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
)

// clusterState is what the two informers hold.
type clusterState struct {
	// mu guards the maps and synced.
	mu     sync.Mutex
	fs     map[string]FlowSchema
	pl     map[string]PriorityLevelConfiguration
	synced [2]bool
}

func (c *Controller) runCluster(ctx context.Context) {
	st := &clusterState{fs: map[string]FlowSchema{}, pl: map[string]PriorityLevelConfiguration{}}
	changed := func() {
		st.mu.Lock()
		if !st.synced[0] || !st.synced[1] {
			st.mu.Unlock()
			return
		}
		var objs Configuration
		for _, pl := range st.pl {
			objs.PriorityLevels = append(objs.PriorityLevels, pl)
		}
		for _, fs := range st.fs {
			objs.FlowSchemas = append(objs.FlowSchemas, fs)
		}
		st.mu.Unlock()
		c.apply(objs)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		informer(ctx, c, flowSchemasPath, func(items []json.RawMessage) error {
			m := map[string]FlowSchema{}
			for _, it := range items {
				fs, err := decodeFS(it)
				if err != nil {
					return err
				}
				m[fs.Metadata.Name] = fs
			}
			st.mu.Lock()
			st.fs, st.synced[0] = m, true
			st.mu.Unlock()
			return nil
		}, func(typ string, obj json.RawMessage) error {
			fs, err := decodeFS(obj)
			if err != nil {
				return err
			}
			st.mu.Lock()
			if typ == meta.WatchDeleted {
				delete(st.fs, fs.Metadata.Name)
			} else {
				st.fs[fs.Metadata.Name] = fs
			}
			st.mu.Unlock()
			return nil
		}, changed)
	}()
	go func() {
		defer wg.Done()
		informer(ctx, c, priorityLevelsPath, func(items []json.RawMessage) error {
			m := map[string]PriorityLevelConfiguration{}
			for _, it := range items {
				pl, err := decodePL(it)
				if err != nil {
					return err
				}
				m[pl.Metadata.Name] = pl
			}
			st.mu.Lock()
			st.pl, st.synced[1] = m, true
			st.mu.Unlock()
			return nil
		}, func(typ string, obj json.RawMessage) error {
			pl, err := decodePL(obj)
			if err != nil {
				return err
			}
			st.mu.Lock()
			if typ == meta.WatchDeleted {
				delete(st.pl, pl.Metadata.Name)
			} else {
				st.pl[pl.Metadata.Name] = pl
			}
			st.mu.Unlock()
			return nil
		}, changed)
	}()
	wg.Wait()
}

// Objects from the cluster were validated by kube-apiserver; they are read
// leniently (a newer server may add fields) and defaulted.
func decodeFS(b []byte) (FlowSchema, error) {
	var fs FlowSchema
	if err := json.Unmarshal(b, &fs); err != nil {
		return fs, fmt.Errorf("%w: %v", ErrInvalidObject, err)
	}
	fs.setDefaults()
	return fs, nil
}

func decodePL(b []byte) (PriorityLevelConfiguration, error) {
	var pl PriorityLevelConfiguration
	if err := json.Unmarshal(b, &pl); err != nil {
		return pl, fmt.Errorf("%w: %v", ErrInvalidObject, err)
	}
	pl.setDefaults()
	return pl, nil
}

// informer lists and watches path from the cluster (kubeclient.Inform),
// logging why it keeps the last good configuration while the cluster fails.
func informer(ctx context.Context, c *Controller, path string, replace func([]json.RawMessage) error,
	event func(typ string, obj json.RawMessage) error, changed func()) {
	kubeclient.Inform(ctx, c.cfg.Cluster, path, c.cfg.ClusterRetry, kubeclient.InformHandler{
		Replace: replace, Event: event, Changed: changed,
		OnError: func(err error) {
			c.log.Warn("flowcontrol: cluster configuration unavailable; keeping the last good configuration",
				zap.String("path", path), zap.Error(err))
		}})
}
