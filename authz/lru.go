// This file holds the bounded LRU with per-entry expiry the
// SubjectAccessReview webhook caches its answers in.

package authz

import (
	"container/list"
	"sync"
	"time"
)

type lruEntry[V any] struct {
	key     string
	val     V
	expires time.Time
}

// lru is a least-recently-used cache of at most size entries, each with its
// own expiry. It is safe for concurrent use.
type lru[V any] struct {
	size int

	// mu guards order and items.
	mu    sync.Mutex
	order *list.List // front is most recent
	items map[string]*list.Element
}

func newLRU[V any](size int) *lru[V] {
	return &lru[V]{size: size, order: list.New(), items: make(map[string]*list.Element, min(size, 1024))}
}

// get returns the value of key if present and not expired at now.
func (c *lru[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, key)
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// add stores key until expires, evicting the least recently used entry when
// full.
func (c *lru[V]) add(key string, val V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.val, e.expires = val, expires
		c.order.MoveToFront(el)
		return
	}
	if c.order.Len() >= c.size {
		if old := c.order.Back(); old != nil {
			c.order.Remove(old)
			delete(c.items, old.Value.(*lruEntry[V]).key)
		}
	}
	c.items[key] = c.order.PushFront(&lruEntry[V]{key: key, val: val, expires: expires})
}

func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
