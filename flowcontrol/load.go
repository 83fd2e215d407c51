// This file reads configuration objects from YAML or JSON: multi-document
// files, Lists, strict decoding (an unknown field is an error, as kubectl's
// strict field validation), defaulting and validation.

package flowcontrol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	yaml "go.yaml.in/yaml/v3"
)

// Configuration is a set of FlowSchemas and priority levels.
type Configuration struct {
	FlowSchemas    []FlowSchema
	PriorityLevels []PriorityLevelConfiguration
}

// DefaultConfiguration returns kube's mandatory and suggested objects: what
// a kube-apiserver creates in a new cluster.
func DefaultConfiguration() Configuration {
	return Configuration{
		FlowSchemas:    append(MandatoryFlowSchemas(), SuggestedFlowSchemas()...),
		PriorityLevels: append(MandatoryPriorityLevels(), SuggestedPriorityLevels()...),
	}
}

// LoadFiles reads configuration objects from files (--flowcontrol-config-file).
func LoadFiles(paths ...string) (Configuration, error) {
	docs := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return Configuration{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		docs = append(docs, b)
	}
	return Parse(docs...)
}

// Parse reads FlowSchema and PriorityLevelConfiguration objects of
// flowcontrol.apiserver.k8s.io/v1 from YAML or JSON documents, each holding
// one or more objects ("---"-separated) or Lists of them (kind List, v1, or
// FlowSchemaList / PriorityLevelConfigurationList). Decoding is strict: an
// unknown field, kind or apiVersion is ErrInvalidObject. Each object gets
// kube's v1 defaults, then kube's validation; two objects of one kind with
// one name are an error. An object without metadata.uid gets StableUID.
func Parse(docs ...[]byte) (Configuration, error) {
	var c Configuration
	var errs []error
	seenFS, seenPL := map[string]bool{}, map[string]bool{}
	for _, doc := range docs {
		dec := yaml.NewDecoder(bytes.NewReader(doc))
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return Configuration{}, fmt.Errorf("%w: %v", ErrInvalidObject, err)
			}
			if v == nil {
				continue // an empty document
			}
			b, err := json.Marshal(v)
			if err != nil {
				return Configuration{}, fmt.Errorf("%w: %v", ErrInvalidObject, err)
			}
			if err := c.addJSON(b, seenFS, seenPL); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return Configuration{}, errors.Join(errs...)
	}
	return c, nil
}

type typeOnly struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
}

func strictDecode(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidObject, err)
	}
	return nil
}

func (c *Configuration) addJSON(b []byte, seenFS, seenPL map[string]bool) error {
	var t typeOnly
	if err := json.Unmarshal(b, &t); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidObject, err)
	}
	switch {
	case t.Kind == "List" && t.APIVersion == "v1",
		(t.Kind == "FlowSchemaList" || t.Kind == "PriorityLevelConfigurationList") && t.APIVersion == GroupVersion:
		var l struct {
			typeOnly `json:",inline"`
			Metadata json.RawMessage   `json:"metadata"`
			Items    []json.RawMessage `json:"items"`
		}
		if err := strictDecode(b, &l); err != nil {
			return err
		}
		var errs []error
		for _, it := range l.Items {
			if err := c.addJSON(it, seenFS, seenPL); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	case t.APIVersion != GroupVersion:
		return fmt.Errorf("%w: %s: apiVersion %q, want %s", ErrInvalidObject, t.Kind, t.APIVersion, GroupVersion)
	case t.Kind == KindFlowSchema:
		var fs FlowSchema
		if err := strictDecode(b, &fs); err != nil {
			return err
		}
		if seenFS[fs.Metadata.Name] {
			return fmt.Errorf("%w: FlowSchema %q appears twice", ErrInvalidObject, fs.Metadata.Name)
		}
		seenFS[fs.Metadata.Name] = true
		fs.setDefaults()
		if fs.Metadata.UID == "" {
			fs.Metadata.UID = StableUID(KindFlowSchema, fs.Metadata.Name)
		}
		if err := ValidateFlowSchema(&fs); err != nil {
			return err
		}
		c.FlowSchemas = append(c.FlowSchemas, fs)
	case t.Kind == KindPriorityLevelConfiguration:
		var pl PriorityLevelConfiguration
		if err := strictDecode(b, &pl); err != nil {
			return err
		}
		if seenPL[pl.Metadata.Name] {
			return fmt.Errorf("%w: PriorityLevelConfiguration %q appears twice", ErrInvalidObject, pl.Metadata.Name)
		}
		seenPL[pl.Metadata.Name] = true
		pl.setDefaults()
		if pl.Metadata.UID == "" {
			pl.Metadata.UID = StableUID(KindPriorityLevelConfiguration, pl.Metadata.Name)
		}
		if err := ValidatePriorityLevel(&pl); err != nil {
			return err
		}
		c.PriorityLevels = append(c.PriorityLevels, pl)
	default:
		return fmt.Errorf("%w: unsupported kind %q", ErrInvalidObject, t.Kind)
	}
	return nil
}

// merge returns base with over's objects added, replacing base's objects of
// the same kind and name.
func merge(base, over Configuration) Configuration {
	out := Configuration{}
	fsIdx, plIdx := map[string]int{}, map[string]int{}
	for _, fs := range base.FlowSchemas {
		fsIdx[fs.Metadata.Name] = len(out.FlowSchemas)
		out.FlowSchemas = append(out.FlowSchemas, fs)
	}
	for _, pl := range base.PriorityLevels {
		plIdx[pl.Metadata.Name] = len(out.PriorityLevels)
		out.PriorityLevels = append(out.PriorityLevels, pl)
	}
	for _, fs := range over.FlowSchemas {
		if i, ok := fsIdx[fs.Metadata.Name]; ok {
			out.FlowSchemas[i] = fs
		} else {
			out.FlowSchemas = append(out.FlowSchemas, fs)
		}
	}
	for _, pl := range over.PriorityLevels {
		if i, ok := plIdx[pl.Metadata.Name]; ok {
			out.PriorityLevels[i] = pl
		} else {
			out.PriorityLevels = append(out.PriorityLevels, pl)
		}
	}
	return out
}
