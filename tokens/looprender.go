package tokens

import (
	"reflect"
	"regexp"
	"strings"

	"github.com/ardanlabs/jinja"
)

// loopTemplate is a chat template rewritten so that ISLCounter can render a
// turn without running the body of the template's message loop again for the
// messages an earlier turn rendered, for any template whose structure allows it
// (loopTemplateOf decides, from the compiled template itself). Chat templates
// are a prologue, one `{% for message in messages %}` loop that writes each
// message, and an epilogue (the generation prompt). The rewritten template runs
// the prologue and the epilogue as the template does, and the loop over the
// messages from loopStartVar on only, each with the loop variable of its
// iteration over the whole list; each iteration it runs is marked in the
// output, and at the first one run and after the last it writes a typed dump
// of the outside state the body reads (the template's own variables and
// namespaces, such as Qwen's ns.last_query_index).
//
// Why the iterations it skips would have written what an earlier render wrote:
// the engine is deterministic, and the analysis (loopBody) admits the loop only
// when each iteration's output and effects depend on nothing but its message,
// the message before it (loop.previtem), the one after it (loop.nextitem,
// loop.last), its index, the inputs fixed for a counter (tools, kwargs, special
// tokens, add_generation_prompt) and the dumped state. Variables a body sets
// persist from one iteration to the next in the engine, so each must be set
// before it is read on every path; no call may mutate a value (append, update,
// ...) or keep state (joiner, cycler, strftime_now); namespace writes go to
// dumped names only. So when the messages up to the reused iterations (and the
// next one) are the same bytes, and the state dumped at the loop's start and at
// the first iteration run equals the earlier render's, every skipped iteration
// is the earlier one: same output, same effect on the state. Anything the
// analysis does not recognize leaves the template to full renders.
type loopTemplate struct {
	tmpl *jinja.Template
	// lookahead: the body reads loop.last or loop.nextitem, so an iteration's
	// output may change when a message follows it.
	lookahead bool
}

// Markers the rewritten template writes; inputs holding them (raw or escaped)
// are rendered in full (hasPlaceholderRunes).
const (
	markIter      = "\uFDD2" // an iteration starts; its state dump follows
	markState     = "\uFDD3" // the state dump ends; the body's output follows
	markEnd       = "\uFDD4" // the last iteration has ended
	markOpaque    = "\uFDD5" // in a dump: a value that cannot be compared
	loopStartVar  = "__agentrace_loop_start"
	loopVarsVar   = "__agentrace_loop_vars"
	loopOrigVar   = "__agentrace_loop"
	loopDumpMacro = "__agentrace_dump"
)

// loopTemplateOf returns the rewritten form of the template compiled from src
// (jinjaSource applied), or nil when its structure does not admit it.
func loopTemplateOf(tmpl *jinja.Template, src string) *loopTemplate {
	if strings.Contains(src, "__agentrace") || strings.ContainsAny(src, "\uFDD0\uFDD1"+markIter+markState+markEnd+markOpaque) {
		return nil
	}
	top, ok := fieldOf(reflect.ValueOf(tmpl), "nodes")
	if !ok {
		return nil
	}
	a := loopAnalysis{sets: map[string]bool{}, macros: map[string]reflect.Value{}, state: map[string]bool{}, whole: map[string]bool{}, attrs: map[string]map[string]bool{}, seen: map[string]bool{}}
	scopeSets(top, a.sets)
	for i := 0; i < top.Len(); i++ {
		n := elem(top.Index(i))
		if typeName(n) == "macroNode" {
			a.macros[n.FieldByName("name").String()] = n
		}
	}
	if a.sets["messages"] || mutates(reflect.ValueOf(tmpl)) {
		// A call that mutates a value anywhere (the prologue may change the
		// messages the reused iterations saw) leaves the template to full renders.
		return nil
	}
	// The main loop: the top-level `for NAME in messages` with the most nodes.
	main, mainAt, fors := reflect.Value{}, -1, 0
	for i := 0; i < top.Len(); i++ {
		n := elem(top.Index(i))
		if typeName(n) != "forNode" {
			continue
		}
		fors++
		iter := elem(n.FieldByName("iter"))
		if typeName(iter) != "nameExpr" || iter.FieldByName("name").String() != "messages" ||
			n.FieldByName("keyVar").String() != "" || !n.FieldByName("filterExpr").IsNil() ||
			n.FieldByName("recursive").Bool() || n.FieldByName("elseBody").Len() > 0 {
			continue
		}
		if !main.IsValid() || n.FieldByName("body").Len() > main.FieldByName("body").Len() {
			main, mainAt = n, fors-1
		}
	}
	if !main.IsValid() {
		return nil
	}
	valVar := main.FieldByName("valVar").String()
	if !a.loopBody(main.FieldByName("body"), valVar) {
		return nil
	}
	for name := range a.state {
		if a.carried[name] || name == valVar || name == "loop" {
			return nil // the dump, written inside the loop, would read the body's variable
		}
	}
	rewritten, ok := rewriteLoop(src, mainAt, valVar, &a)
	if !ok {
		return nil
	}
	t, err := jinja.Compile(rewritten)
	if err != nil {
		return nil
	}
	return &loopTemplate{tmpl: t, lookahead: a.lookahead}
}

// loopAnalysis is the static check of a template's message loop.
type loopAnalysis struct {
	sets    map[string]bool            // names set at the top level (outside loops and macros)
	macros  map[string]reflect.Value   // top-level macros
	state   map[string]bool            // top-level names the body reads: dumped
	whole   map[string]bool            // of those, the ones read other than by attribute
	attrs   map[string]map[string]bool // the attributes read or written of the others
	carried map[string]bool            // names the loop body sets in its own scope
	seen    map[string]bool            // macros analyzed
	// lookahead: the body reads loop.last or loop.nextitem.
	lookahead bool
	failed    bool
}

// scopeSets adds to into the names set in the scope of nodes: set and
// set-block targets, through ifs, filter blocks and loops' else bodies, not
// into loops or macros (their scopes are their own). At the top level they are
// the template's variables; in the message loop's body they persist from
// iteration to iteration.
func scopeSets(nodes reflect.Value, into map[string]bool) {
	forEachNode(nodes, func(n reflect.Value) {
		switch typeName(n) {
		case "setNode":
			if n.FieldByName("namespace").String() == "" {
				into[n.FieldByName("target").String()] = true
			}
		case "setBlockNode":
			into[n.FieldByName("target").String()] = true
			scopeSets(n.FieldByName("body"), into)
		case "ifNode":
			br := n.FieldByName("branches")
			for i := 0; i < br.Len(); i++ {
				scopeSets(br.Index(i).FieldByName("body"), into)
			}
		case "filterBlockNode":
			scopeSets(n.FieldByName("body"), into)
		case "forNode":
			scopeSets(n.FieldByName("elseBody"), into) // runs in the enclosing scope
		}
	})
}

// scopeKind says what the names of a scope under analysis resolve to when not
// set in it.
type scopeKind int

const (
	inBody   scopeKind = iota // the message loop's body: `loop` is the main loop's
	inNested                  // a loop inside the body: `loop` is its own
	inMacro                   // a macro: names resolve to the top level
)

// scope is the analysis of one scope: the names surely set so far on every path
// (defined) and where the others resolve.
type scope struct {
	kind    scopeKind
	defined map[string]bool
	outer   *scope // for inNested: the enclosing scope
}

func (s *scope) clone() *scope {
	d := make(map[string]bool, len(s.defined))
	for k := range s.defined {
		d[k] = true
	}
	return &scope{kind: s.kind, defined: d, outer: s.outer}
}

// loopBody analyzes the main loop's body; false when it does not admit
// incremental rendering.
func (a *loopAnalysis) loopBody(body reflect.Value, valVar string) bool {
	a.carried = map[string]bool{}
	scopeSets(body, a.carried)
	if a.carried["loop"] {
		return false // the rewritten loop sets it
	}
	delete(a.carried, valVar)
	s := &scope{kind: inBody, defined: map[string]bool{valVar: true}}
	a.nodes(body, s)
	return !a.failed
}

// nodes analyzes statements in order, adding to s.defined what they surely set.
func (a *loopAnalysis) nodes(nodes reflect.Value, s *scope) {
	forEachNode(nodes, func(n reflect.Value) { a.node(n, s) })
}

func (a *loopAnalysis) node(n reflect.Value, s *scope) {
	if a.failed {
		return
	}
	switch typeName(n) {
	case "textNode":
	case "outputNode":
		a.expr(n.FieldByName("expression"), s)
	case "ifNode":
		br := n.FieldByName("branches")
		var after map[string]bool
		hasElse := false
		for i := 0; i < br.Len(); i++ {
			b := br.Index(i)
			cond := b.FieldByName("condition")
			if cond.IsNil() {
				hasElse = true
			} else {
				a.expr(cond, s)
			}
			bs := s.clone()
			a.nodes(b.FieldByName("body"), bs)
			after = intersect(after, bs.defined)
		}
		if hasElse && after != nil {
			s.defined = after
		}
	case "forNode":
		if n.FieldByName("recursive").Bool() {
			a.failed = true
			return
		}
		a.expr(n.FieldByName("iter"), s)
		inner := &scope{kind: inNested, defined: map[string]bool{"loop": true, n.FieldByName("valVar").String(): true}, outer: s}
		if k := n.FieldByName("keyVar").String(); k != "" {
			inner.defined[k] = true
		}
		if f := n.FieldByName("filterExpr"); !f.IsNil() {
			a.expr(f, inner)
		}
		a.nodes(n.FieldByName("body"), inner)
		a.nodes(n.FieldByName("elseBody"), s.clone())
	case "setNode":
		a.expr(n.FieldByName("value"), s)
		target := n.FieldByName("target").String()
		if ns := n.FieldByName("namespace").String(); ns != "" {
			// A namespace write must go to a top-level name, which is dumped.
			if a.resolvesLocally(ns, s) {
				a.failed = true
				return
			}
			a.global(ns, target)
			return
		}
		s.defined[target] = true
	case "setBlockNode":
		a.nodes(n.FieldByName("body"), s)
		s.defined[n.FieldByName("target").String()] = true
	case "filterBlockNode":
		a.expr(n.FieldByName("filter"), s)
		a.nodes(n.FieldByName("body"), s)
	case "breakNode", "continueNode":
		if s.kind == inBody {
			a.failed = true // would skip the markers
		}
	default: // macros inside the body, call blocks, anything else
		a.failed = true
	}
}

// resolvesLocally reports whether name, read in s, is a name of the body, a
// nested loop or a macro rather than a top-level one.
func (a *loopAnalysis) resolvesLocally(name string, s *scope) bool {
	for ; s != nil; s = s.outer {
		if s.defined[name] {
			return true
		}
		if s.kind == inBody && (a.carried[name] || name == "loop") {
			return true
		}
		if s.kind == inMacro {
			return false
		}
	}
	return false
}

// read is a read of name in s.
func (a *loopAnalysis) read(name string, s *scope) {
	for ; s != nil; s = s.outer {
		if s.defined[name] {
			return
		}
		switch s.kind {
		case inBody:
			if a.carried[name] || name == "loop" {
				// A body variable read before it is surely set would read the
				// previous iteration's value; `loop` as a whole holds its length.
				a.failed = true
				return
			}
			a.global(name, "")
			return
		case inMacro:
			a.global(name, "")
			return
		}
	}
}

// global is a read of a top-level name, whole (attr "") or of one attribute
// (name.attr, or a namespace write to it).
func (a *loopAnalysis) global(name, attr string) {
	switch {
	case name == "messages" || name == "strftime_now" || name == "joiner" || name == "cycler":
		a.failed = true
	case a.sets[name]:
		a.state[name] = true
		if attr == "" {
			a.whole[name] = true
			return
		}
		if a.attrs[name] == nil {
			a.attrs[name] = map[string]bool{}
		}
		a.attrs[name][attr] = true
	}
}

// callable names that neither keep nor change state.
var pureBuiltins = map[string]bool{"namespace": true, "range": true, "dict": true, "raise_exception": true}

// mutating methods of lists and dicts.
var mutatingMethods = map[string]bool{"append": true, "pop": true, "insert": true, "update": true, "clear": true,
	"extend": true, "remove": true, "setdefault": true, "sort": true, "reverse": true, "popitem": true}

func (a *loopAnalysis) expr(v reflect.Value, s *scope) {
	if a.failed {
		return
	}
	e := elem(v)
	if !e.IsValid() {
		return
	}
	switch typeName(e) {
	case "litExpr":
	case "nameExpr":
		a.read(e.FieldByName("name").String(), s)
	case "attrExpr":
		obj := elem(e.FieldByName("obj"))
		if typeName(obj) == "nameExpr" && obj.FieldByName("name").String() == "loop" && a.mainLoop(s) {
			switch e.FieldByName("attr").String() {
			case "index", "index0", "first", "previtem", "cycle", "depth", "depth0":
			case "last", "nextitem":
				a.lookahead = true
			default: // length, revindex, revindex0, changed: the number of messages
				a.failed = true
			}
			return
		}
		if name := obj.FieldByName("name"); typeName(obj) == "nameExpr" && !a.resolvesLocally(name.String(), s) {
			a.global(name.String(), e.FieldByName("attr").String())
			return
		}
		a.expr(e.FieldByName("obj"), s)
	case "itemExpr":
		a.expr(e.FieldByName("obj"), s)
		a.expr(e.FieldByName("key"), s)
	case "sliceExpr":
		for _, f := range []string{"obj", "start", "stop", "step"} {
			a.expr(e.FieldByName(f), s)
		}
	case "unaryExpr":
		a.expr(e.FieldByName("operand"), s)
	case "binExpr":
		a.expr(e.FieldByName("left"), s)
		a.expr(e.FieldByName("right"), s)
	case "condExpr":
		for _, f := range []string{"trueExpr", "condition", "falseExpr"} {
			a.expr(e.FieldByName(f), s)
		}
	case "callExpr":
		fn := elem(e.FieldByName("fn"))
		switch typeName(fn) {
		case "nameExpr":
			name := fn.FieldByName("name").String()
			switch m, ok := a.macros[name]; {
			case a.resolvesLocally(name, s) || a.sets[name]:
				a.failed = true // a callable held in a variable
			case ok:
				a.macro(name, m)
			case !pureBuiltins[name]:
				a.failed = true
			}
		case "attrExpr":
			if mutatingMethods[fn.FieldByName("attr").String()] {
				a.failed = true
				return
			}
			a.expr(e.FieldByName("fn"), s)
		default:
			a.failed = true
			return
		}
		a.exprs(e.FieldByName("args"), s)
		a.kwargs(e.FieldByName("kwargs"), s)
	case "filterExpr":
		a.expr(e.FieldByName("expr"), s)
		a.exprs(e.FieldByName("args"), s)
		a.kwargs(e.FieldByName("kwargs"), s)
	case "testExpr":
		a.expr(e.FieldByName("expr"), s)
		a.exprs(e.FieldByName("args"), s)
	case "listExpr":
		a.exprs(e.FieldByName("items"), s)
	case "dictExpr":
		p := e.FieldByName("pairs")
		for i := 0; i < p.Len(); i++ {
			a.expr(p.Index(i).FieldByName("key"), s)
			a.expr(p.Index(i).FieldByName("value"), s)
		}
	default:
		a.failed = true
	}
}

// mainLoop reports whether `loop` in s is the message loop's.
func (a *loopAnalysis) mainLoop(s *scope) bool {
	for ; s != nil; s = s.outer {
		if s.defined["loop"] {
			return false
		}
		if s.kind == inBody {
			return true
		}
		if s.kind == inMacro {
			return false
		}
	}
	return false
}

func (a *loopAnalysis) exprs(list reflect.Value, s *scope) {
	for i := 0; i < list.Len(); i++ {
		a.expr(list.Index(i), s)
	}
}

func (a *loopAnalysis) kwargs(list reflect.Value, s *scope) {
	for i := 0; i < list.Len(); i++ {
		a.expr(list.Index(i).FieldByName("value"), s)
	}
}

// macro analyzes a top-level macro the body calls: its scope is fresh at each
// call and its other names resolve to the top level.
func (a *loopAnalysis) macro(name string, m reflect.Value) {
	if a.seen[name] {
		return
	}
	a.seen[name] = true
	s := &scope{kind: inMacro, defined: map[string]bool{"caller": true, "varargs": true, "kwargs": true}}
	params := m.FieldByName("params")
	for i := 0; i < params.Len(); i++ {
		p := params.Index(i)
		a.expr(p.FieldByName("defaultVal"), s)
		s.defined[p.FieldByName("name").String()] = true
	}
	a.nodes(m.FieldByName("body"), s)
}

// rewriteLoop rewrites the template source: the fors-th top-level for tag
// (which must read `for valVar in messages`) iterates messages[loopStartVar:],
// with `loop` set at each iteration to loopVarsVar's entry (the loop variable
// of that message's iteration over the whole list); each iteration is preceded
// by markIter, the state dump (at the first iteration run and the last only)
// and markState, the last followed by markEnd, the state dump after it and
// markState. The tags it adds sit against the loop's own tags and carry their
// whitespace control, so that with loopStartVar 0 and the markers removed the
// output is the template's.
func rewriteLoop(src string, fors int, valVar string, a *loopAnalysis) (string, bool) {
	tags, ok := scanTags(src)
	if !ok {
		return "", false
	}
	depth, seen, open, close := 0, 0, -1, -1
	for i, t := range tags {
		switch {
		case t.opens:
			if depth == 0 && t.word == "for" {
				if seen == fors {
					open = i
				}
				seen++
			}
			depth++
		case t.closes:
			depth--
			if depth < 0 {
				return "", false
			}
			if depth == 0 && open >= 0 && close < 0 && t.word == "endfor" {
				close = i
			}
		}
	}
	if depth != 0 || open < 0 || close < 0 {
		return "", false
	}
	ot, ct := tags[open], tags[close]
	if m := forHeader.FindStringSubmatch(ot.inner); m == nil || m[1] != valVar {
		return "", false
	}
	// The dump: each state name the body reads whole, and of the others each
	// attribute it reads or writes (what else they hold the body cannot see,
	// nor change).
	var names []string
	for name := range a.state {
		names = append(names, name)
	}
	sortStrings(names)
	dump := "''"
	for _, name := range names {
		if a.whole[name] {
			dump += " ~ " + dumpLeaf(name)
			continue
		}
		var attrs []string
		for attr := range a.attrs[name] {
			attrs = append(attrs, attr)
		}
		sortStrings(attrs)
		for _, attr := range attrs {
			dump += " ~ " + dumpLeaf(name+"."+attr)
		}
	}
	// The loop runs over messages[start:]; its first statement replaces the
	// engine's loop variable with the one of the whole list's iteration
	// (loopVarsVar, made by ISLCounter), keeping the engine's own in
	// loopOrigVar for the position.
	header := "{%" + ot.left + " for " + valVar + " in messages[" + loopStartVar + ":] " + ot.right + "%}"
	head := "{% if " + loopOrigVar + " is not defined %}{% set " + loopOrigVar + " = loop %}{% endif %}" +
		"{% set loop = " + loopVarsVar + "[" + loopOrigVar + ".index0] %}" +
		dumpMacro + "{{ '" + markIter + "' }}{% if loop.index0 == " + loopStartVar + " or loop.last %}{{ " + dump + " }}{% endif %}{{ '" + markState + "' }}" +
		"{% if true " + ot.right + "%}"
	tail := "{%" + ct.left + " endif %}{% if loop.last %}{{ '" + markEnd + "' ~ " + dump + " ~ '" + markState + "' }}{% endif %}" +
		"{% endfor " + ct.right + "%}"
	return src[:ot.start] + header + head + src[ot.end:ct.start] + tail + src[ct.end:], true
}

// dumpLeaf is the dump of one expression: strings and integers inline, the
// rest through dumpMacro.
func dumpLeaf(e string) string {
	return "(('S' ~ (" + e + "|length) ~ ':' ~ " + e + ") if " + e + " is string else (('I' ~ " + e + " ~ ';') if " + e + " is integer else " + loopDumpMacro + "(" + e + ", 0)))"
}

var forHeader = regexp.MustCompile(`^for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\s+messages$`)

// dumpMacro writes a value with its type, so that two dumps are equal only when
// the values are: U undefined, N none, T/F booleans, I integers, D floats (their
// shortest round-trip digits), S strings (their length, then the text), L lists
// and M mappings (their length, then the items, keys in order); a callable, or
// nesting past 32 levels, writes markOpaque, which makes the dump compare unequal.
const dumpMacro = "{% macro " + loopDumpMacro + "(v, d) %}" +
	"{% if d > 32 %}" + markOpaque +
	"{% elif v is string %}S{{ v|length }}:{{ v }}{% elif v is integer %}I{{ v }};" +
	"{% elif v is mapping %}M{{ v|length }}:{% for k in v %}{{ " + loopDumpMacro + "(k, d + 1) }}{{ " + loopDumpMacro + "(v[k], d + 1) }}{% endfor %}" +
	"{% elif v is iterable %}L{{ v|length }}:{% for x in v %}{{ " + loopDumpMacro + "(x, d + 1) }}{% endfor %}" +
	"{% elif v is boolean %}{% if v %}T{% else %}F{% endif %}{% elif v is none %}N{% elif v is undefined %}U" +
	"{% elif v is float %}D{{ v|string }};{% else %}" + markOpaque + "{% endif %}{% endmacro %}"

// tag is a block tag of a template source: where it starts and ends, its first
// word, its whitespace-control characters and its text between them.
type tag struct {
	start, end    int
	word, inner   string
	left, right   string
	opens, closes bool
}

// blockOpeners and blockClosers are the tags that nest.
var (
	blockOpeners = map[string]bool{"for": true, "if": true, "macro": true, "call": true, "filter": true}
	blockClosers = map[string]bool{"endfor": true, "endif": true, "endmacro": true, "endcall": true, "endfilter": true, "endset": true}
)

// scanTags lists the block tags of src, skipping comments, expressions and
// string literals inside tags; false for anything it cannot follow (raw blocks,
// an unterminated tag).
func scanTags(src string) ([]tag, bool) {
	var tags []tag
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			break
		}
		i += j
		switch src[i+1] {
		case '#':
			k := strings.Index(src[i+2:], "#}")
			if k < 0 {
				return nil, false
			}
			i += 2 + k + 2
			continue
		case '{', '%':
		default:
			i++
			continue
		}
		closer := "}}"
		if src[i+1] == '%' {
			closer = "%}"
		}
		end, ok := tagEnd(src, i+2, closer)
		if !ok {
			return nil, false
		}
		if src[i+1] == '%' {
			t := tag{start: i, end: end}
			body := src[i+2 : end-2]
			if body != "" && (body[0] == '-' || body[0] == '+') {
				t.left, body = body[:1], body[1:]
			}
			if n := len(body); n > 0 && (body[n-1] == '-' || body[n-1] == '+') {
				t.right, body = body[n-1:], body[:n-1]
			}
			t.inner = strings.TrimSpace(body)
			t.word, _, _ = strings.Cut(t.inner, " ")
			t.word, _, _ = strings.Cut(t.word, "(")
			switch {
			case t.word == "raw":
				return nil, false
			case blockOpeners[t.word]:
				t.opens = true
			case t.word == "set" && !strings.Contains(t.inner, "="):
				t.opens = true // a set block
			case blockClosers[t.word]:
				t.closes = true
			}
			tags = append(tags, t)
		}
		i = end
	}
	return tags, true
}

// tagEnd returns the index after the closer of the tag whose text starts at i,
// skipping string literals and the braces of dict literals.
func tagEnd(src string, i int, closer string) (int, bool) {
	braces := 0
	for i < len(src) {
		switch c := src[i]; c {
		case '\'', '"':
			i++
			for i < len(src) && src[i] != c {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case '{':
			braces++
			i++
		default:
			if braces == 0 && strings.HasPrefix(src[i:], closer) {
				return i + 2, true
			}
			if c == '}' && braces > 0 {
				braces--
			}
			i++
		}
	}
	return 0, false
}

// Reflection over the engine's compiled template (its syntax tree is not
// exported); every shape not recognized makes loopTemplateOf return nil.

func fieldOf(v reflect.Value, name string) (reflect.Value, bool) {
	v = elem(v)
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.FieldByName(name)
	return f, f.IsValid() && f.Kind() == reflect.Slice
}

// elem dereferences interfaces and pointers; the zero Value for nil.
func elem(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

func typeName(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	return v.Type().Name()
}

func forEachNode(nodes reflect.Value, f func(reflect.Value)) {
	if !nodes.IsValid() || nodes.Kind() != reflect.Slice {
		return
	}
	for i := 0; i < nodes.Len(); i++ {
		f(elem(nodes.Index(i)))
	}
}

// mutates reports whether the syntax tree under v calls a method that mutates
// its list or dict.
func mutates(v reflect.Value) bool {
	v = elem(v)
	switch {
	case !v.IsValid():
		return false
	case v.Kind() == reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if mutates(v.Index(i)) {
				return true
			}
		}
	case v.Kind() == reflect.Struct:
		if typeName(v) == "callExpr" {
			if fn := elem(v.FieldByName("fn")); typeName(fn) == "attrExpr" && mutatingMethods[fn.FieldByName("attr").String()] {
				return true
			}
		}
		if typeName(v) == "Value" {
			return false // literals
		}
		for i := 0; i < v.NumField(); i++ {
			if mutates(v.Field(i)) {
				return true
			}
		}
	}
	return false
}

// intersect returns the names in both (a nil a is everything).
func intersect(a, b map[string]bool) map[string]bool {
	if a == nil {
		out := make(map[string]bool, len(b))
		for k := range b {
			out[k] = true
		}
		return out
	}
	for k := range a {
		if !b[k] {
			delete(a, k)
		}
	}
	return a
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
