package postgres

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestPasswordNeverShown: the redacted form, a DSN that does not parse and
// a database that cannot be reached never show the DSN's password.
func TestPasswordNeverShown(t *testing.T) {
	const secret = "hunter2-s3cret"
	for _, tc := range []struct {
		name, dsn string
	}{
		{"url_unreachable", "postgres://annex:" + secret + "@127.0.0.1:1/annex?sslmode=disable&connect_timeout=2"},
		{"keyword_unreachable", "host=127.0.0.1 port=1 user=annex password=" + secret + " dbname=annex sslmode=disable connect_timeout=2"},
		{"unparsable", "postgres://annex:" + secret + "@127.0.0.1:notaport/annex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{DSN: tc.dsn}
			if r := c.Redacted(); strings.Contains(r, secret) {
				t.Errorf("Redacted() = %q shows the password", r)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := c.Open(ctx, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open of an unreachable database succeeded")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Open error shows the password: %v", err)
			}
		})
	}
	if r := (Config{DSN: "postgres://annex:" + secret + "@db.example:5433/objects"}).Redacted(); r != "postgres://annex@db.example:5433/objects" {
		t.Errorf("Redacted() = %q", r)
	}
}

func TestOptionsRefuseABadTablePrefix(t *testing.T) {
	for _, bad := range []string{"Annex", "a-b", "x; DROP TABLE y", "1abc"} {
		if _, err := (Options{Table: bad}).withDefaults(); err == nil {
			t.Errorf("table prefix %q accepted", bad)
		}
	}
	o, err := Options{}.withDefaults()
	if err != nil || o.Table != "annex" || o.CompactionInterval != 5*time.Minute || o.MaxObjectSize != 1536<<10 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}
