package watch

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// TestPagedListRemainingItemCount pages through the whole collection and
// through one namespace, with writes between the pages: every page's
// remainingItemCount is exactly what is left of the snapshot the first page
// read (the count comes from the cache's counters and the tokens, not from
// walking the rest), and the pages hold every object once.
func TestPagedListRemainingItemCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name, prefix string
		total        int
	}{{"all", prefix(""), 94}, {"namespace", prefix("ns1"), 31}} {
		t.Run(tt.name, func(t *testing.T) {
			store := openBolt(t, true)
			for i := range 95 {
				ns := fmt.Sprintf("ns%d", i%3)
				if _, err := store.Create(ctx, key(ns, fmt.Sprintf("o%03d", i)), object(ns, fmt.Sprintf("o%03d", i), "1")); err != nil {
					t.Fatal(err)
				}
			}
			c := startCacher(t, store, Config{})
			// Changes the cache applies as events: its counters follow.
			for _, name := range []string{"o001", "o004"} {
				if _, err := c.Delete(ctx, key("ns1", name), storage.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Create(ctx, key("ns1", "late"), object("ns1", "late", "1")); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			token := ""
			for pageNo := 0; ; pageNo++ {
				res, err := c.List(ctx, tt.prefix, storage.ListOptions{Limit: 10, Continue: token})
				if err != nil {
					t.Fatalf("page %d: %v", pageNo, err)
				}
				for _, o := range res.Items {
					if seen[o.Key] {
						t.Fatalf("page %d: %s twice", pageNo, o.Key)
					}
					seen[o.Key] = true
				}
				left := tt.total - len(seen)
				if left == 0 {
					if res.Continue != "" || res.RemainingItemCount != nil {
						t.Fatalf("last page: continue %q, remaining %v", res.Continue, res.RemainingItemCount)
					}
					break
				}
				if res.RemainingItemCount == nil || *res.RemainingItemCount != int64(left) {
					t.Fatalf("page %d: remainingItemCount %v, want %d", pageNo, res.RemainingItemCount, left)
				}
				token = res.Continue
				// Writes between pages change the latest state, not the
				// snapshot the pages read.
				ns := fmt.Sprintf("ns%d", pageNo%3)
				if _, err := store.Create(ctx, key(ns, fmt.Sprintf("new%03d", pageNo)), object(ns, "x", "1")); err != nil {
					t.Fatal(err)
				}
			}
			if len(seen) != tt.total {
				t.Fatalf("paged %d objects, want %d", len(seen), tt.total)
			}
		})
	}
}

// TestPagedListForgedRemaining: a continue token is the client's to send; a
// remaining count that cannot be right changes only the count reported,
// never the objects, and the count stays positive while a next page exists.
func TestPagedListForgedRemaining(t *testing.T) {
	t.Parallel()
	store := openBolt(t, true)
	ctx := context.Background()
	for i := range 30 {
		if _, err := store.Create(ctx, key("ns", fmt.Sprintf("o%03d", i)), object("ns", fmt.Sprintf("o%03d", i), "1")); err != nil {
			t.Fatal(err)
		}
	}
	c := startCacher(t, store, Config{})
	first, err := c.List(ctx, prefix(""), storage.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(first.Continue)
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	if tok["rem"] != float64(20) {
		t.Fatalf("token %s: rem %v, want 20", raw, tok["rem"])
	}
	for _, forged := range []int64{0, 1 << 40} {
		tok["rem"] = forged
		b, _ := json.Marshal(tok)
		res, err := c.List(ctx, prefix(""), storage.ListOptions{Limit: 10, Continue: base64.RawURLEncoding.EncodeToString(b)})
		if err != nil {
			t.Fatalf("rem %d: %v", forged, err)
		}
		if len(res.Items) != 10 || res.Items[0].Key != key("ns", "o010") || res.Continue == "" {
			t.Fatalf("rem %d: %d items from %s, continue %q", forged, len(res.Items), res.Items[0].Key, res.Continue)
		}
		if r := res.RemainingItemCount; r == nil || *r < 1 || *r > 30 {
			t.Fatalf("rem %d: remainingItemCount %v, want within 1..30", forged, r)
		}
	}
}

// TestFutureContinueToken: a continue token from the future is refused
// naming the revision it asked for, from the cache as from the store.
func TestFutureContinueToken(t *testing.T) {
	t.Parallel()
	store := openBolt(t, true)
	ctx := context.Background()
	if _, err := store.Create(ctx, key("ns", "a"), object("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	c := startCacher(t, store, Config{})
	pr, err := backend.PrefixRange(prefix(""))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := backend.EncodeContinue(key("ns", "a")+"\x00", pr, 999999)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]storage.Interface{"cacher": c, "store": store} {
		_, err := s.List(ctx, prefix(""), storage.ListOptions{Limit: 1, Continue: tok})
		var se *storage.Error
		if !errors.As(err, &se) || !errors.Is(err, storage.ErrTooLargeResourceVersion) || se.Requested != 999999 || se.ResourceVersion == 0 {
			t.Errorf("%s: %#v, want ErrTooLargeResourceVersion for 999999 with the current revision", name, err)
		}
	}
}
