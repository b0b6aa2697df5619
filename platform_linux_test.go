package svc

// hostOf is the Linux platform of sb, for the tests that reach into it.
func hostOf(sb *Sandbox) *host { return sb.host.(*host) }
