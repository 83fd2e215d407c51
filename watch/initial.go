// This file declares that the cacher serves watch-lists, the capability the
// REST layer probes for before it passes sendInitialEvents down.

package watch

// SendsInitialEvents reports that the cacher serves
// storage.WatchOptions.SendInitialEvents: the state as EventAdded events, then
// a bookmark marked InitialEventsEnd, then the changes.
func (c *Cacher) SendsInitialEvents() bool { return true }
