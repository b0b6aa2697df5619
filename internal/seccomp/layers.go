package seccomp

import (
	"fmt"
	"math/bits"
	"slices"
)

// Layers split the filters of a set of profiles in two: a base, which a
// sandbox shell's init installs once and every task process it makes
// inherits, and for each profile a residual, which each task process
// installs. The kernel runs every filter of a process and takes the
// strictest answer (kill over ENOSYS over notify over allow), so the base
// and a profile's residual together decide every call as the profile
// does. A task installs only the residual, a small part of the profile:
// installing a filter costs its conversion, JIT and the kernel's cache of
// always-allowed calls, each in proportion to its length.
//
// The base decides each call as the least strict profile of the set does
// it, where the rules show which one that is, and allows it outright
// otherwise; it also allows outright the calls the shell makes after
// installing it (the setup calls): what the init does for each task and
// what a task process does before its residual. So the base is never
// stricter than a profile. A residual holds its profile's rules for the
// calls where the base is less strict, under a default of Allow.
type Layers struct {
	Base     *Profile
	Residual map[string]*Profile // by profile name
}

// strictness orders actions as the kernel does when filters disagree.
func strictness(a Action) int {
	switch a {
	case Allow:
		return 0
	case Notify:
		return 1
	case ENOSYS, EACCES:
		return 2
	}
	return 3 // Kill
}

// NewLayers splits profiles, which must share their default action, with
// setup the calls the base allows outright. It is an error when a call's
// rules cannot be split (see Layers); the caller then installs whole
// profiles.
func NewLayers(profiles []*Profile, setup []string) (*Layers, error) {
	if len(profiles) == 0 {
		return nil, fmt.Errorf("seccomp: layers of no profile")
	}
	def := profiles[0].Default
	for _, p := range profiles {
		if p.Default != def {
			return nil, fmt.Errorf("seccomp: layers: %s and %s differ in their default action", profiles[0].Name, p.Name)
		}
	}
	l := &Layers{
		Base:     &Profile{Name: "base", Default: def},
		Residual: make(map[string]*Profile, len(profiles)),
	}
	for _, p := range profiles {
		l.Residual[p.Name] = &Profile{Name: p.Name + "-residual", Default: Allow}
	}
	var calls []string
	for _, p := range profiles {
		calls = append(calls, p.Syscalls()...)
	}
	calls = append(calls, setup...)
	slices.Sort(calls)
	for _, call := range slices.Compact(calls) {
		if err := l.split(profiles, call, slices.Contains(setup, call)); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// split decides call in the base and the residuals.
func (l *Layers) split(profiles []*Profile, call string, setup bool) error {
	rules := make([][]Rule, len(profiles))
	for i, p := range profiles {
		rules[i] = p.rulesOf(call)
	}
	// The least of the profiles for call: every other one decides each
	// of its calls at least as strictly.
	least := -1
	if !setup {
		for i := range profiles {
			if !slices.ContainsFunc(profiles, func(q *Profile) bool { return !q.atLeast(call, profiles[i]) }) {
				least = i
				break
			}
		}
	}
	if least >= 0 {
		l.Base.add(rules[least])
		for i, p := range profiles {
			if !sameRules(rules[i], rules[least]) {
				l.Residual[p.Name].add(total(rules[i], p.Default, call))
			}
		}
		return nil
	}
	// A setup call, or no least profile: the base allows the call, and
	// each residual decides it whole. What a profile leaves to its
	// default, the residual's default decides the same only if that is
	// Allow.
	l.Base.add([]Rule{{Syscall: call, Action: Allow}})
	for i, p := range profiles {
		if p.Default != Allow && !p.decidesAll(call) {
			return fmt.Errorf("seccomp: layers: %s leaves %s to its default for some arguments only", p.Name, call)
		}
		l.Residual[p.Name].add(total(rules[i], p.Default, call))
	}
	return nil
}

// add appends the rules that say something other than the default.
func (p *Profile) add(rules []Rule) {
	for _, r := range rules {
		if r.Action != p.Default {
			p.Rules = append(p.Rules, r)
		}
	}
}

// total returns rules, or for a call without rules an unconditional rule
// with the profile's default.
func total(rules []Rule, def Action, call string) []Rule {
	if len(rules) == 0 {
		return []Rule{{Syscall: call, Action: def}}
	}
	return rules
}

// rulesOf returns the profile's rules for call.
func (p *Profile) rulesOf(call string) []Rule {
	var out []Rule
	for _, r := range p.Rules {
		if r.Syscall == call {
			out = append(out, r)
		}
	}
	return out
}

// decidesAll reports whether the rules of call decide every value of its
// arguments without the default: there is none, or one without a
// condition, or a pair that splits every value in two (Cond), or
// conditions on arg0 bits few enough to try every combination of, which
// all match some rule.
func (p *Profile) decidesAll(call string) bool {
	rules := p.rulesOf(call)
	if len(rules) == 0 || slices.ContainsFunc(rules, func(r Rule) bool { return r.Arg0 == nil }) {
		return true
	}
	for _, r := range rules {
		if r.Arg0.Ne && slices.ContainsFunc(rules, func(q Rule) bool {
			return !q.Arg0.Ne && q.Arg0.Mask == ^uint64(0) && q.Arg0.Value == r.Arg0.Value
		}) {
			return true
		}
	}
	if slices.ContainsFunc(rules, func(r Rule) bool { return r.Arg0.Ne }) {
		return false // not worked out
	}
	var mask uint64
	for _, r := range rules {
		mask |= r.Arg0.Mask
	}
	if bits.OnesCount64(mask) > 16 {
		return false
	}
	// Every value of the mask's bits, through the subsets of mask.
	for v := uint64(0); ; v = (v - mask) & mask {
		if !slices.ContainsFunc(rules, func(r Rule) bool { return r.Arg0.Holds(v) }) {
			return false
		}
		if v == mask {
			return true
		}
	}
}

// atLeast reports whether p decides each call of call at least as
// strictly as q does, as far as the rules show without solving their
// conditions: both have the same rules, or p decides every value by its
// own rules (or its default), each action at least as strict as every
// action q can give it.
func (p *Profile) atLeast(call string, q *Profile) bool {
	pr, qr := p.rulesOf(call), q.rulesOf(call)
	if sameRules(pr, qr) && (p.Default == q.Default || q.decidesAll(call)) {
		return true
	}
	least := strictness(p.Default)
	if len(pr) > 0 {
		if !p.decidesAll(call) {
			return false
		}
		least = 3
		for _, r := range pr {
			least = min(least, strictness(r.Action))
		}
	}
	most := 0
	for _, r := range qr {
		most = max(most, strictness(r.Action))
	}
	if len(qr) == 0 || !q.decidesAll(call) {
		most = max(most, strictness(q.Default))
	}
	return least >= most
}

// sameRules reports whether a and b are the same rules in the same order.
func sameRules(a, b []Rule) bool {
	return slices.EqualFunc(a, b, func(x, y Rule) bool {
		return x.Syscall == y.Syscall && x.Action == y.Action &&
			(x.Arg0 == nil) == (y.Arg0 == nil) && (x.Arg0 == nil || *x.Arg0 == *y.Arg0)
	})
}

// Watched returns the layers for a shell whose base filter has the
// listener ([Watched]), which decides every call it is notified of as the
// task's profile does ([Profile.Decider]). Under allowlists, a call some
// residual refuses outright (ENOSYS without a condition: a call one
// profile allows and another does not, such as pidfd_open) would be
// answered by the kernel before the listener could count it, since a task
// process's residual can have no listener of its own: it notifies in the
// base instead, and leaves the residuals. The profiles that allow it then take the
// listener's slow path for it, those that refuse it have it counted. It
// is an error if a residual refuses a call for some arguments only.
func (l *Layers) Watched() (*Layers, error) {
	w := &Layers{Residual: make(map[string]*Profile, len(l.Residual))}
	var moved []string
	for name, r := range l.Residual {
		res := &Profile{Name: r.Name, Default: r.Default}
		for _, rule := range r.Rules {
			switch {
			case rule.Action != ENOSYS || l.Base.Default != ENOSYS ||
				slices.ContainsFunc(refusedByRule(), func(q Rule) bool { return q.Syscall == rule.Syscall }):
				res.Rules = append(res.Rules, rule)
			case rule.Arg0 != nil:
				return nil, fmt.Errorf("seccomp: layers: %s refuses %s for some arguments only: no listener could count it", r.Name, rule.Syscall)
			default:
				moved = append(moved, rule.Syscall)
			}
		}
		w.Residual[name] = res
	}
	base := &Profile{Name: l.Base.Name, Default: l.Base.Default, Table: l.Base.Table}
	for _, rule := range l.Base.Rules {
		if !slices.Contains(moved, rule.Syscall) {
			base.Rules = append(base.Rules, rule)
		}
	}
	slices.Sort(moved)
	for _, call := range slices.Compact(moved) {
		base.Rules = append(base.Rules, Rule{Syscall: call, Action: Notify})
	}
	var err error
	if w.Base, err = Watched(base); err != nil {
		return nil, err
	}
	return w, nil
}
