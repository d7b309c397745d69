package tokens

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/ardanlabs/jinja"
)

// A chat template is code a tokenizer folder brings, and the engine runs it
// without limits: a macro that calls itself exhausts the stack, range(10**9)
// and "x" * 10**9 exhaust memory, and neither can be stopped from outside. As
// transformers renders in Jinja's sandbox (which refuses a range over 100,000
// items, and stops deep recursion with Python's recursion limit), each render
// here runs within budgets, and one that goes past them fails with an error
// wrapping ErrRenderBudget:
//
//   - depth: macro, call-block and recursive-loop calls nested at most
//     renderMaxDepth deep;
//   - steps: at most renderMaxSteps loop iterations and macro calls;
//   - output: no string made by * (repetition), ~ or + longer than
//     renderMaxOutput bytes, nor more than that written in all (the text of
//     the template's loop and macro bodies each time they run, and each
//     {{ ... }}), nor more than renderMaxMade bytes made by them in all;
//     range at most renderMaxRange items.
//
// The budgets are enforced by calls instrumentTemplate adds to the compiled
// template's tree (calls to Go functions each render hands the template):
// the engine exposes no hook of its own, so its tree is rewritten through
// reflection, as loopTemplateOf reads it. A tree of a shape it does not know
// makes instrumentTemplate fail, and the template is refused.
const (
	renderMaxDepth  = 256
	renderMaxSteps  = 1_000_000
	renderMaxRange  = 100_000
	renderMaxOutput = 64 << 20
	renderMaxMade   = 1 << 30
	// templateMaxNesting bounds the nesting of blocks and brackets in a
	// template's source, which the engine parses and runs recursively.
	templateMaxNesting = 500
)

// ErrRenderBudget is wrapped by the error of a render past its budgets.
var ErrRenderBudget = errors.New("the chat template goes past agentrace's rendering budget")

// Names of the functions instrumentTemplate's calls call.
const (
	budgetEnter = "__agentrace_enter" // a macro's or caller's body starts: depth, a step, its text
	budgetLeave = "__agentrace_leave" // it ends
	budgetStep  = "__agentrace_step"  // a loop iteration starts: a step, its text
	budgetOut   = "__agentrace_out"   // a {{ }} writes a value
	budgetLeft  = "__agentrace_left"  // the left operand of *, ~ or + is known
	budgetRight = "__agentrace_right" // its right operand: what the operator would make is checked first
)

// checkNesting refuses a template source whose blocks or brackets nest deeper
// than templateMaxNesting.
func checkNesting(src string) error {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth = max(0, depth-1)
		}
		if depth > templateMaxNesting {
			return fmt.Errorf("brackets nest more than %d deep", templateMaxNesting)
		}
	}
	tags, ok := scanTags(src)
	if !ok {
		return nil // the engine's parser judges it
	}
	depth = 0
	for _, t := range tags {
		switch {
		case t.opens:
			depth++
		case t.closes:
			depth = max(0, depth-1)
		}
		if depth > templateMaxNesting {
			return fmt.Errorf("blocks nest more than %d deep", templateMaxNesting)
		}
	}
	return nil
}

// renderBudget is what one render has spent.
type renderBudget struct {
	depth, steps int
	out, made    int64
	lefts        []jinja.Value // left operands of *, ~ and + whose right operand is being evaluated
}

var emptyString = jinja.NewString("")

func budgetError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRenderBudget}, args...)...)
}

func (b *renderBudget) step(text int64) error {
	if b.steps++; b.steps > renderMaxSteps {
		return budgetError("more than %d loop iterations and macro calls", renderMaxSteps)
	}
	return b.write(text)
}

// make counts n bytes made by an operator.
func (b *renderBudget) make(n int64) error {
	if b.made += n; b.made > renderMaxMade {
		return budgetError("more than %d bytes made by *, ~ and + in all", renderMaxMade)
	}
	return nil
}

func (b *renderBudget) write(n int64) error {
	if b.out += n; b.out > renderMaxOutput {
		return budgetError("more than %d bytes written", renderMaxOutput)
	}
	return nil
}

func intArg(name string, args []jinja.Value) (int64, error) {
	if len(args) != 1 || !args[0].IsInt() {
		return 0, fmt.Errorf("%s: want one int", name)
	}
	return args[0].AsInt(), nil
}

// set puts the budget's functions, and a range bounded as the sandbox's, into
// a render's variables.
func (b *renderBudget) set(data map[string]jinja.Value) {
	data[budgetEnter] = jinja.NewCallable(budgetEnter, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		n, err := intArg(budgetEnter, args)
		if err != nil {
			return emptyString, err
		}
		if b.depth++; b.depth > renderMaxDepth {
			return emptyString, budgetError("macro or loop calls nested more than %d deep", renderMaxDepth)
		}
		return emptyString, b.step(n)
	})
	data[budgetLeave] = jinja.NewCallable(budgetLeave, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		b.depth--
		return emptyString, nil
	})
	data[budgetStep] = jinja.NewCallable(budgetStep, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		n, err := intArg(budgetStep, args)
		if err != nil {
			return emptyString, err
		}
		return emptyString, b.step(n)
	})
	data[budgetOut] = jinja.NewCallable(budgetOut, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("%s: want one value", budgetOut)
		}
		if args[0].IsString() {
			return args[0], b.write(int64(len(args[0].AsString())))
		}
		return args[0], nil
	})
	data[budgetLeft] = jinja.NewCallable(budgetLeft, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("%s: want one value", budgetLeft)
		}
		b.lefts = append(b.lefts, args[0])
		return args[0], nil
	})
	data[budgetRight] = jinja.NewCallable(budgetRight, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 2 || !args[1].IsString() || len(b.lefts) == 0 {
			return jinja.Undefined(), fmt.Errorf("%s: out of order", budgetRight)
		}
		left, right := b.lefts[len(b.lefts)-1], args[0]
		b.lefts = b.lefts[:len(b.lefts)-1]
		return b.operator(args[1].AsString(), left, right)
	})
	data["range"] = jinja.NewCallable("range", boundedRange)
}

// operator checks what left op right would make before it is made, and
// returns right (or what stands for it).
func (b *renderBudget) operator(op string, left, right jinja.Value) (jinja.Value, error) {
	var size int64
	switch {
	case op == "*" && left.IsString() && right.IsInt():
		n, unit := right.AsInt(), int64(len(left.AsString()))
		if n <= 0 {
			return jinja.NewInt(0), nil // Python's "x" * -1 is ""
		}
		if unit > 0 && n > renderMaxOutput/unit {
			return right, budgetError("a string of %d bytes repeated %d times (more than %d bytes)", unit, n, renderMaxOutput)
		}
		size = unit * n
	case op == "+" && left.IsList() && right.IsList():
		n := int64(left.AsList().Len()) + int64(right.AsList().Len())
		if n > renderMaxSteps {
			return right, budgetError("a list of %d items (more than %d)", n, renderMaxSteps)
		}
		size = 16 * n
	case op == "~" || op == "+":
		size = int64(stringLen(left) + stringLen(right))
		if size > renderMaxOutput {
			return right, budgetError("a string of %d bytes (more than %d)", size, renderMaxOutput)
		}
	}
	return right, b.make(size)
}

// stringLen is the length of v when it is a string, else 0.
func stringLen(v jinja.Value) int {
	if v.IsString() {
		return len(v.AsString())
	}
	return 0
}

// boundedRange is the engine's range that refuses more than renderMaxRange
// items, as Jinja's sandbox does (MAX_RANGE), before making any.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var n [3]int64
	for i, a := range args {
		if i >= 3 {
			break
		}
		switch {
		case a.IsInt():
			n[i] = a.AsInt()
		case a.IsFloat():
			n[i] = int64(a.AsFloat())
		case a.IsBool() && a.AsBool():
			n[i] = 1
		case a.IsBool():
		default:
			return jinja.Undefined(), fmt.Errorf("range: argument %d is not a number", i+1)
		}
	}
	start, stop, step := int64(0), int64(0), int64(1)
	switch len(args) {
	case 1:
		stop = n[0]
	case 2:
		start, stop = n[0], n[1]
	case 3:
		start, stop, step = n[0], n[1], n[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1-3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range: step must not be zero")
	}
	var count uint64
	switch {
	case step > 0 && stop > start:
		count = (uint64(stop-start) + uint64(step) - 1) / uint64(step)
	case step < 0 && stop < start:
		count = (uint64(start-stop) + uint64(-step) - 1) / uint64(-step)
	}
	if count > renderMaxRange {
		return jinja.Undefined(), budgetError("range of %d items (the sandbox's limit is %d)", count, renderMaxRange)
	}
	items := make([]jinja.Value, 0, count)
	for i, v := uint64(0), start; i < count; i, v = i+1, v+step {
		items = append(items, jinja.NewInt(v))
	}
	return jinja.NewList(items), nil
}

// treeKit holds the engine's node types, taken from a probe template, to
// build the calls instrumentTemplate adds.
type treeKit struct {
	output, call, name, lit reflect.Type // *outputNode, *callExpr, *nameExpr, *litExpr
	exprs                   reflect.Type // []expr (a callExpr's args)
	nodes                   reflect.Type // []node (a body)
}

// newTreeKit reads the node types from the tree of a probe template.
func newTreeKit() (*treeKit, error) {
	probe, err := jinja.Compile("{{ f(1) }}")
	if err != nil {
		return nil, err
	}
	top, ok := fieldOf(reflect.ValueOf(probe), "nodes")
	if !ok || top.Len() != 1 {
		return nil, errors.New("unexpected template tree")
	}
	k := &treeKit{nodes: top.Type()}
	out := top.Index(0).Elem()
	k.output = out.Type()
	call := field(out, "expression").Elem()
	k.call = call.Type()
	k.name = field(call, "fn").Elem().Type()
	args := field(call, "args")
	k.exprs = args.Type()
	if args.Len() != 1 {
		return nil, errors.New("unexpected template tree")
	}
	k.lit = args.Index(0).Elem().Type()
	if nodeName(out) != "outputNode" || k.call.Elem().Name() != "callExpr" || k.name.Elem().Name() != "nameExpr" || k.lit.Elem().Name() != "litExpr" {
		return nil, errors.New("unexpected template tree")
	}
	return k, nil
}

// field returns the (unexported) field name of the struct p points to, made
// settable.
func field(p reflect.Value, name string) reflect.Value {
	f := p.Elem().FieldByName(name)
	if !f.IsValid() {
		panic(treeShape{name})
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// nodeName is the type name of the node v holds or points to.
func nodeName(v reflect.Value) string { return typeName(elem(v)) }

// treeShape is the panic of a tree instrumentTemplate does not know.
type treeShape struct{ field string }

// callOf builds the call fn(args...).
func (k *treeKit) callOf(fn string, args ...reflect.Value) reflect.Value {
	name := reflect.New(k.name.Elem())
	field(name, "name").SetString(fn)
	call := reflect.New(k.call.Elem())
	field(call, "fn").Set(name)
	list := reflect.MakeSlice(k.exprs, len(args), len(args))
	for i, a := range args {
		list.Index(i).Set(a)
	}
	field(call, "args").Set(list)
	return call
}

// literal is the literal v.
func (k *treeKit) literal(v jinja.Value) reflect.Value {
	lit := reflect.New(k.lit.Elem())
	field(lit, "val").Set(reflect.ValueOf(v))
	return lit
}

// statement is {{ fn(n) }} (fn writes nothing), or {{ fn() }} when n < 0.
func (k *treeKit) statement(fn string, n int) reflect.Value {
	var call reflect.Value
	if n < 0 {
		call = k.callOf(fn)
	} else {
		call = k.callOf(fn, k.literal(jinja.NewInt(int64(n))))
	}
	out := reflect.New(k.output.Elem())
	field(out, "expression").Set(call)
	return out
}

// instrumentTemplate adds the budget's calls to tmpl's tree (see renderBudget).
func instrumentTemplate(tmpl *jinja.Template) (err error) {
	k, err := newTreeKit()
	if err != nil {
		return fmt.Errorf("cannot bound its rendering: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			if s, ok := r.(treeShape); ok {
				err = fmt.Errorf("cannot bound its rendering: the engine's tree has no field %q", s.field)
				return
			}
			panic(r)
		}
	}()
	top, ok := fieldOf(reflect.ValueOf(tmpl), "nodes")
	if !ok {
		return errors.New("cannot bound its rendering: no template tree")
	}
	k.body(reflect.NewAt(top.Type(), unsafe.Pointer(top.UnsafeAddr())).Elem(), "", false)
	return nil
}

// body instruments the statements of a body held in the settable slice v;
// wrap is budgetEnter for a macro's or caller's body, budgetStep for a loop's
// ("" for the template's own), and calls (with wrap budgetEnter) adds the
// matching budgetLeave at its end.
func (k *treeKit) body(v reflect.Value, wrap string, leave bool) {
	text := 0
	for i := 0; i < v.Len(); i++ {
		n := v.Index(i)
		if nodeName(n) == "textNode" {
			text += len(field(n.Elem(), "text").String())
		}
		k.node(n)
	}
	if wrap == "" {
		return
	}
	out := reflect.MakeSlice(k.nodes, 0, v.Len()+2)
	out = reflect.Append(out, k.statement(wrap, text))
	out = reflect.AppendSlice(out, v)
	if leave {
		out = reflect.Append(out, k.statement(budgetLeave, -1))
	}
	v.Set(out)
}

// node instruments the statement in the settable interface v.
func (k *treeKit) node(v reflect.Value) {
	p := v.Elem()
	switch nodeName(p) {
	case "textNode", "breakNode", "continueNode":
	case "outputNode":
		e := field(p, "expression")
		k.expr(e)
		e.Set(k.callOf(budgetOut, e.Elem()))
	case "ifNode":
		branches := field(p, "branches")
		for i := 0; i < branches.Len(); i++ {
			b := branches.Index(i)
			if c := b.FieldByName("condition"); c.IsValid() {
				k.expr(reflect.NewAt(c.Type(), unsafe.Pointer(c.UnsafeAddr())).Elem())
			}
			body := b.FieldByName("body")
			if !body.IsValid() {
				panic(treeShape{"body"})
			}
			k.body(reflect.NewAt(body.Type(), unsafe.Pointer(body.UnsafeAddr())).Elem(), "", false)
		}
	case "forNode":
		k.expr(field(p, "iter"))
		k.expr(field(p, "filterExpr"))
		recursive := field(p, "recursive").Bool()
		if recursive {
			k.body(field(p, "body"), budgetEnter, true)
		} else {
			k.body(field(p, "body"), budgetStep, false)
		}
		k.body(field(p, "elseBody"), "", false)
	case "setNode":
		k.expr(field(p, "value"))
	case "setBlockNode":
		k.body(field(p, "body"), "", false)
	case "macroNode":
		params := field(p, "params")
		for i := 0; i < params.Len(); i++ {
			d := params.Index(i).FieldByName("defaultVal")
			if !d.IsValid() {
				panic(treeShape{"defaultVal"})
			}
			k.expr(reflect.NewAt(d.Type(), unsafe.Pointer(d.UnsafeAddr())).Elem())
		}
		k.body(field(p, "body"), budgetEnter, true)
	case "callNode":
		k.expr(field(p, "expr"))
		k.body(field(p, "body"), budgetEnter, true)
	case "filterBlockNode":
		k.expr(field(p, "filter"))
		k.body(field(p, "body"), "", false)
	default:
		panic(treeShape{nodeName(p)})
	}
}

// expr instruments the expression in the settable interface v (nil: none):
// every expression inside it, and *, ~ and + (what they would make checked
// before it is made: their left operand is kept, and their right one checked
// against it).
func (k *treeKit) expr(v reflect.Value) {
	if v.IsNil() {
		return
	}
	p := v.Elem()
	k.subexprs(p.Elem())
	if nodeName(p) != "binExpr" {
		return
	}
	switch op := field(p, "op").String(); op {
	case "*", "~", "+":
		left, right := field(p, "left"), field(p, "right")
		left.Set(k.callOf(budgetLeft, left.Elem()))
		right.Set(k.callOf(budgetRight, right.Elem(), k.literal(jinja.NewString(op))))
	}
}

// subexprs instruments the expressions held in the fields of the struct s
// (an expression node): fields of the expression interface, slices of them,
// and slices of structs holding them (keyword arguments, dict pairs).
func (k *treeKit) subexprs(s reflect.Value) {
	for i := 0; i < s.NumField(); i++ {
		f := s.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		switch {
		case f.Kind() == reflect.Interface && f.Type().Name() == "expr":
			k.expr(f)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Interface && f.Type().Elem().Name() == "expr":
			for j := 0; j < f.Len(); j++ {
				k.expr(f.Index(j))
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			for j := 0; j < f.Len(); j++ {
				k.subexprs(f.Index(j))
			}
		case f.Kind() == reflect.Interface, f.Kind() == reflect.Slice, f.Kind() == reflect.Pointer, f.Kind() == reflect.Map:
			if !strings.HasPrefix(f.Type().String(), "jinja.") && f.Type().String() != "[]string" {
				panic(treeShape{s.Type().Field(i).Name})
			}
		}
	}
}
