package svc

// SetGoCacheCmdForTest makes the Go build cache prepared with cmd, a
// task's command and arguments, instead of go build std, until restore.
// Set it before New, restore it after Close.
func SetGoCacheCmdForTest(cmd ...string) (restore func()) {
	old := goCacheCmd
	goCacheCmd = cmd
	return func() { goCacheCmd = old }
}

// GoCacheNameForTest is the name of image id's prepared Go build cache
// in Config.GoBuildCache.
func GoCacheNameForTest(id string) string { return goCacheName(id) }

// GoCacheWaitersForTest is the number of requests of sb waiting for its
// Go build cache.
func GoCacheWaitersForTest(sb *Sandbox) int { return int(sb.goWaits.Load()) }
