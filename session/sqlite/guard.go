package sqlite

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// The projection guard. OpenClaw keeps derived copies of some parts of every
// row: the search index (user and assistant text blocks), the active-path
// projection (the envelope: type, id, parentId, appendMode, …) and the
// model-context flags (excludeFromContext). An edit of those without
// rebuilding the projections leaves OpenClaw inconsistent, and a rebuild
// breaks runs in flight (both seen on a live OpenClaw). So before a row is
// written, its old and new JSON are compared and the whole write is refused
// unless every difference is one of:
//
//   - a string value inside a toolResult's content or any message's
//     details, inside an assistant thinking block (text and signature),
//     inside a toolCall block's arguments, or a bashExecution's output;
//   - a whole image block (which may become a text block holding a
//     "[[extracted-…]]" placeholder, and back);
//   - a top-level member whose name starts with "_" (BrainSurgeon's
//     bookkeeping: _restored, _extractable), added, changed or removed,
//     and "_redacted" inside a content block;
//   - the "output" string of a flat tool_result row (a row without a
//     "message" member whose type is "tool_result", as the first
//     BrainSurgeon wrote and OpenClaw's importer copies verbatim), only
//     when the stored string holds a "[[extracted-…]]" placeholder: a
//     value extracted before the import may be put back, a flat row's
//     output is never extracted here (docs/ARCHITECTURE.md, "The SQLite
//     store's editable fields", says what OpenClaw derives from such a
//     row and why).
//
// Everything else must be equal token by token. checkProjection is the
// one place this rule lives: Rewrite, EditableValues and CheckEdit all
// ask it.

// jnode is a parsed JSON value: objects keep their members in order.
//
// A string that cannot be decoded (a lone UTF-16 surrogate escape, which
// JavaScript's JSON.stringify writes for a string cut inside an emoji, or
// invalid UTF-8) is kept: its str holds the text with U+FFFD in place of
// what could not be decoded, for reading a "type" or a placeholder, and
// sameString compares it by its raw bytes, so that any change of it (one
// lone surrogate for another) is still a change.
type jnode struct {
	kind jsontext.Kind
	raw  []byte // scalars: the raw encoding
	str  string // strings: the decoded value
	// lossy is true for a string that could not be decoded exactly.
	lossy bool
	names []jstring
	vals  []*jnode
}

// jstring is a decoded member name, with its raw encoding when it could
// not be decoded exactly (see jnode).
type jstring struct {
	s   string
	raw []byte // nil when s is exact
}

// unquote decodes a raw JSON string. A string that cannot be decoded
// exactly gives its text with U+FFFD in place of what could not be
// decoded and lossy set.
func unquote(raw []byte) (s string, lossy bool) {
	b, err := jsontext.AppendUnquote(nil, raw)
	return string(b), err != nil
}

// sameString reports whether two strings are equal: by their decoded
// values when both were decoded exactly, else by their raw bytes.
func sameString(a, b string, aRaw, bRaw []byte, lossy bool) bool {
	if lossy {
		return bytes.Equal(aRaw, bRaw)
	}
	return a == b
}

func (n jstring) same(m jstring) bool {
	return sameString(n.s, m.s, n.raw, m.raw, n.raw != nil || m.raw != nil)
}

func parseTree(raw []byte) (*jnode, error) {
	d := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	n, err := readNode(d)
	if err != nil {
		return nil, err
	}
	if d.PeekKind() != 0 {
		return nil, errors.New("two JSON values on one row")
	}
	return n, nil
}

func readNode(d *jsontext.Decoder) (*jnode, error) {
	switch k := d.PeekKind(); k {
	case '{', '[':
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		n := &jnode{kind: k}
		end := jsontext.Kind('}')
		if k == '[' {
			end = ']'
		}
		for d.PeekKind() != end {
			if k == '{' {
				v, err := d.ReadValue()
				if err != nil {
					return nil, err
				}
				name, lossy := unquote(v)
				js := jstring{s: name}
				if lossy {
					js.raw = bytes.Clone(v)
				}
				n.names = append(n.names, js)
			}
			v, err := readNode(d)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		return n, nil
	default:
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		n := &jnode{kind: v.Kind(), raw: bytes.Clone(v)}
		if n.kind == '"' {
			n.str, n.lossy = unquote(v)
		}
		return n, nil
	}
}

// member returns the value of the first member called name, or nil.
func (n *jnode) member(name string) *jnode {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, m := range n.names {
		if m.s == name && m.raw == nil {
			return n.vals[i]
		}
	}
	return nil
}

// strMember returns the string value of member name, or "".
func (n *jnode) strMember(name string) string {
	if v := n.member(name); v != nil && v.kind == '"' {
		return v.str
	}
	return ""
}

// projectionError is a difference the guard refuses.
type projectionError struct {
	pointer, what string
}

func (e *projectionError) Error() string {
	p := e.pointer
	if p == "" {
		p = "the row"
	}
	return p + ": " + e.what
}

func refuse(ptr, format string, args ...any) error {
	return &projectionError{pointer: ptr, what: fmt.Sprintf(format, args...)}
}

// guardAccepts reports whether the guard accepts raw with splices (sorted,
// not overlapping) applied: what Rewrite would check for that edit.
func guardAccepts(raw []byte, splices []bs.Splice) bool {
	next, err := splice(raw, bs.Edit{Splices: splices})
	return err == nil && checkProjection(raw, next) == nil
}

// checkProjection returns nil when old and new differ only where the
// guard allows, else an error naming the first other difference.
func checkProjection(old, new []byte) error {
	o, err := parseTree(old)
	if err != nil {
		return refuse("", "the stored row is not a single JSON value (%v)", err)
	}
	n, err := parseTree(new)
	if err != nil {
		return refuse("", "the edited row is not a single JSON value (%v)", err)
	}
	if o.kind != '{' || n.kind != '{' {
		return exact(o, n, "")
	}
	isMessage := o.strMember("type") == "message"
	isFlat := o.strMember("type") == "tool_result" && o.member("message") == nil
	return members(o, n, "", func(name string) bool { return strings.HasPrefix(name, "_") },
		func(name string, ov, nv *jnode, ptr string) error {
			switch {
			case name == "message" && isMessage:
				return message(ov, nv, ptr)
			case name == "output" && isFlat:
				return flatOutput(ov, nv, ptr)
			}
			return exact(ov, nv, ptr)
		})
}

// flatOutput compares the "output" member of a flat tool_result row: it
// may change only from a string holding a placeholder to another string
// (a restore). OpenClaw derives nothing from that member: the row is not a
// message, so it has no search index row and is never sent to the model,
// and its projections read only the envelope keys (type, id, parentId, …).
// But OpenClaw's own row rewrite compares every member but "message" as
// the envelope, so an extraction there is not started: it would gain
// nothing the model is sent.
func flatOutput(o, n *jnode, ptr string) error {
	if o.kind != '"' || n.kind != '"' {
		return exact(o, n, ptr)
	}
	if sameString(o.str, n.str, o.raw, n.raw, o.lossy || n.lossy) {
		return nil
	}
	if !strings.Contains(o.str, placeholderMark) {
		return refuse(ptr, "string changed (a flat tool_result's output may only be put back from its %s…]] placeholder, never extracted in this store)", placeholderMark)
	}
	return nil
}

// members compares two objects member by member, in order, skipping the
// members skip accepts on either side.
func members(o, n *jnode, ptr string, skip func(string) bool, each func(name string, ov, nv *jnode, ptr string) error) error {
	if o.kind != '{' || n.kind != '{' {
		return exact(o, n, ptr)
	}
	on, ov := filter(o, skip)
	nn, nv := filter(n, skip)
	for i := 0; i < len(on) || i < len(nn); i++ {
		switch {
		case i >= len(on):
			return refuse(jsonedit.Join(ptr, nn[i].s), "member added")
		case i >= len(nn):
			return refuse(jsonedit.Join(ptr, on[i].s), "member removed")
		case !on[i].same(nn[i]):
			return refuse(jsonedit.Join(ptr, on[i].s), "member renamed or moved (now %q)", nn[i].s)
		}
		if err := each(on[i].s, ov[i], nv[i], jsonedit.Join(ptr, on[i].s)); err != nil {
			return err
		}
	}
	return nil
}

func filter(n *jnode, skip func(string) bool) ([]jstring, []*jnode) {
	var names []jstring
	var vals []*jnode
	for i, m := range n.names {
		if skip != nil && skip(m.s) {
			continue
		}
		names = append(names, m)
		vals = append(vals, n.vals[i])
	}
	return names, vals
}

// exact requires o and n to be equal token by token.
func exact(o, n *jnode, ptr string) error {
	if o.kind != n.kind {
		return refuse(ptr, "value changed from %s to %s", jsonedit.KindName(o.kind), jsonedit.KindName(n.kind))
	}
	switch o.kind {
	case '{':
		return members(o, n, ptr, nil, func(_ string, ov, nv *jnode, p string) error { return exact(ov, nv, p) })
	case '[':
		if len(o.vals) != len(n.vals) {
			return refuse(ptr, "array length changed from %d to %d", len(o.vals), len(n.vals))
		}
		for i := range o.vals {
			if err := exact(o.vals[i], n.vals[i], ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		return nil
	case '"':
		if !sameString(o.str, n.str, o.raw, n.raw, o.lossy || n.lossy) {
			return refuse(ptr, "string changed")
		}
		return nil
	}
	if !bytes.Equal(o.raw, n.raw) {
		return refuse(ptr, "value changed from %s to %s", o.raw, n.raw)
	}
	return nil
}

// stringsOnly requires o and n to have the same shape and scalars; only
// string values may differ.
func stringsOnly(o, n *jnode, ptr string) error {
	if o.kind == '"' && n.kind == '"' {
		return nil
	}
	if o.kind != n.kind {
		return refuse(ptr, "value changed from %s to %s", jsonedit.KindName(o.kind), jsonedit.KindName(n.kind))
	}
	switch o.kind {
	case '{':
		return members(o, n, ptr, nil, func(_ string, ov, nv *jnode, p string) error { return stringsOnly(ov, nv, p) })
	case '[':
		if len(o.vals) != len(n.vals) {
			return refuse(ptr, "array length changed from %d to %d", len(o.vals), len(n.vals))
		}
		for i := range o.vals {
			if err := stringsOnly(o.vals[i], n.vals[i], ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		return nil
	}
	return exact(o, n, ptr)
}

// message compares the "message" member of a message entry.
func message(o, n *jnode, ptr string) error {
	if o.kind != '{' || n.kind != '{' {
		return exact(o, n, ptr)
	}
	role := o.strMember("role")
	return members(o, n, ptr, nil, func(name string, ov, nv *jnode, p string) error {
		switch {
		case name == "content":
			return content(role, ov, nv, p)
		case name == "details":
			return stringsOnly(ov, nv, p)
		case name == "output" && role == "bashExecution":
			return stringsOnly(ov, nv, p)
		}
		if err := exact(ov, nv, p); err != nil {
			return fmt.Errorf("%w (a %s message's %q is indexed by OpenClaw)", err, role, name)
		}
		return nil
	})
}

// content compares a message's content.
func content(role string, o, n *jnode, ptr string) error {
	if o.kind == '"' && n.kind == '"' && role == "toolResult" {
		return nil
	}
	if o.kind != '[' || n.kind != '[' {
		if err := exact(o, n, ptr); err != nil {
			return fmt.Errorf("%w (only toolResult content may change)", err)
		}
		return nil
	}
	if len(o.vals) != len(n.vals) {
		return refuse(ptr, "content block count changed from %d to %d", len(o.vals), len(n.vals))
	}
	for i := range o.vals {
		if err := block(role, o.vals[i], n.vals[i], ptr+"/"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// placeholderMark is what every BrainSurgeon placeholder holds.
const placeholderMark = "[[extracted-"

// block compares one content block.
func block(role string, o, n *jnode, ptr string) error {
	if o.kind != '{' || n.kind != '{' {
		return exact(o, n, ptr)
	}
	ot, nt := o.strMember("type"), n.strMember("type")
	switch {
	case ot == "image" && nt == "image":
		return nil
	case ot == "image" && nt == "text":
		if !strings.Contains(n.strMember("text"), placeholderMark) {
			return refuse(ptr, "an image block became a text block without a %s…]] placeholder", placeholderMark)
		}
		return nil
	case ot == "text" && nt == "image":
		if !strings.Contains(o.strMember("text"), placeholderMark) {
			return refuse(ptr, "a text block without a placeholder became an image block")
		}
		return nil
	case ot != nt:
		return refuse(ptr, "block type changed from %q to %q", ot, nt)
	}
	var inner func(name string, ov, nv *jnode, p string) error
	switch {
	case role == "toolResult":
		inner = func(name string, ov, nv *jnode, p string) error {
			if name == "type" {
				return exact(ov, nv, p)
			}
			return stringsOnly(ov, nv, p)
		}
	case role == "assistant" && (ot == "thinking" || ot == "redacted_thinking"):
		inner = func(name string, ov, nv *jnode, p string) error {
			if name == "type" {
				return exact(ov, nv, p)
			}
			return stringsOnly(ov, nv, p)
		}
	case role == "assistant" && ot == "toolCall":
		inner = func(name string, ov, nv *jnode, p string) error {
			if name == "arguments" {
				return stringsOnly(ov, nv, p)
			}
			return exact(ov, nv, p)
		}
	default:
		inner = func(name string, ov, nv *jnode, p string) error {
			if err := exact(ov, nv, p); err != nil {
				return fmt.Errorf("%w (a %s %s block is indexed by OpenClaw's search)", err, role, ot)
			}
			return nil
		}
	}
	return members(o, n, ptr, func(name string) bool { return name == "_redacted" }, inner)
}
