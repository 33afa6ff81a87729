package agenttools

import (
	"slices"
	"strconv"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
)

// Spec is one tool as the host shows it to the model, and as the plugin
// declares it: the plugin's TOOL_SPECS (label, description, parameters),
// TOOL_NAMES and OLD_ARGUMENT_NAMES, and its manifest's contracts.tools and
// toolMetadata. A test fails when the plugin and these specs disagree, so
// adding a tool touches this list, the package's runner of it, the
// plugin's list and the manifest.
type Spec struct {
	// Name is the tool's name, as the model calls it.
	Name string `json:"name"`
	// Label is the tool's short title in the host's UI.
	Label string `json:"label"`
	// Description is what the model reads about the tool.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the tool's arguments (an object
	// schema), as the plugin declares it.
	Parameters map[string]any `json:"parameters"`
	// OldArguments are argument names the tool still accepts although the
	// schema no longer declares them (OpenClaw masks an argument named key
	// in its transcript, so purge_control's key became value_id, while
	// older placeholders still name key).
	OldArguments []string `json:"old_arguments,omitempty"`
	// Profiles are the host's tool profiles that include the tool (the
	// manifest's toolMetadata).
	Profiles []string `json:"profiles"`
	// SideEffecting says that a call may change the session (the
	// manifest's toolMetadata.sideEffecting); every tool is replay-safe.
	SideEffecting bool `json:"side_effecting,omitempty"`
}

// str, integer and boolean are JSON Schema property schemas.
func str(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}

func integer(min int, description string) map[string]any {
	return map[string]any{"type": "integer", "minimum": min, "description": description}
}

func boolean(description string) map[string]any {
	return map[string]any{"type": "boolean", "description": description}
}

// object is an object schema with the properties given; closed adds
// "additionalProperties": false (a tool with old argument names is never
// closed, or the host would refuse such a call before the plugin sees it).
func object(closed bool, required []string, properties map[string]any) map[string]any {
	o := map[string]any{"type": "object", "required": required, "properties": properties}
	if closed {
		o["additionalProperties"] = false
	}
	return o
}

var (
	allProfiles    = []string{"minimal", "coding", "messaging", "full"}
	recallProfiles = []string{"coding", "messaging", "full"}
)

// specs are the agent's tools, in the order the plugin registers them.
var specs = []Spec{
	{
		Name:  PurgeControl,
		Label: "BrainSurgeon purge control",
		Description: "Get back content BrainSurgeon moved out of this conversation, and control what it moves. " +
			"A placeholder [[extracted-<key>]] (for example [[extracted-tc-call_1]] or [[extracted-a1b2c3d4]]) means the " +
			"value was stored outside the transcript without loss: call this tool with {\"action\":\"restore\",\"value_id\":\"<key>\"} " +
			"(the key is what follows \"extracted-\") and the exact content comes back in the result, ready to use at once. " +
			"A long value comes in pages of max_chars characters (default " + strconv.Itoa(agenttext.DefaultPageChars) + "): the answer then starts with a line " +
			"\"[BrainSurgeon <key>: characters A–B of N …]\"; if that line says Next:, call again with the offset it gives " +
			"until it says the last page, and put the pages together in order. " +
			"Only restore what you need now. action get_context lists what was extracted from this session; " +
			"action set_extractable with value_id=<entry id> and value \"false\" (never extract), \"true\" (may extract) or N " +
			"(keep while among the last N messages) controls one entry.",
		Parameters: object(false, []string{"action"}, map[string]any{
			"action":   map[string]any{"type": "string", "enum": []string{ActionGetContext, ActionRestore, ActionSetExtractable}, "description": "What to do."},
			"value_id": str("restore: the key from [[extracted-<key>]]; set_extractable: the entry id."),
			"keys":     str("restore only, optional: comma-separated value keys to restore (e.g. \"text\", \"content/0/text\"); default all."),
			"offset":   integer(0, "restore of a tc- key only, optional: the first character of the page to return (the offset the previous page's Next: gives); default 0."),
			"max_chars": map[string]any{"type": "integer", "minimum": agenttext.MinPageChars, "maximum": agenttext.MaxPageChars,
				"description": "restore of a tc- key only, optional: the page length in characters; default " + strconv.Itoa(agenttext.DefaultPageChars) +
					". Keep the default unless asked otherwise: the host cuts longer tool results."},
			"value": str("set_extractable only: \"true\", \"false\" or a whole number N."),
		}),
		OldArguments:  []string{"key"},
		Profiles:      allProfiles,
		SideEffecting: true,
	},
	{
		Name:  RecallGrep,
		Label: "BrainSurgeon recall grep",
		Description: "Search everything this session still holds, including what you no longer see: entries compacted away, " +
			"abandoned branches and values BrainSurgeon extracted. One line per hit with where it was found and the entry " +
			"id; get an extracted hit back with purge_control restore.",
		Parameters: object(true, []string{"pattern"}, map[string]any{
			"pattern":     str("Text to find (a RE2 regular expression when regex is true)."),
			"regex":       boolean("Treat pattern as a regular expression."),
			"ignore_case": boolean("Match letters of either case."),
			"max":         integer(1, "Stop after this many hits."),
			"in":          str("Only these places, comma-separated: active, compacted, off_path, extracted."),
		}),
		Profiles: recallProfiles,
	},
	{
		Name:  RecallDescribe,
		Label: "BrainSurgeon recall describe",
		Description: "Describe one entry of this session by id: type, role, time, size, whether it is compacted away or off the " +
			"active path, and what was extracted from it; for a compaction summary also what it stands for.",
		Parameters: object(true, []string{"id"}, map[string]any{"id": str("The entry id.")}),
		Profiles:   recallProfiles,
	},
	{
		Name:  RecallExpand,
		Label: "BrainSurgeon recall expand",
		Description: "Show the original entries a compaction summary stands for (by the summary's entry id), to read what was " +
			"summarized away. resolve puts extracted values back in the output (the transcript is not changed).",
		Parameters: object(true, []string{"id"}, map[string]any{
			"id":      str("The compaction summary's entry id."),
			"resolve": boolean("Replace placeholders with the extracted values in the output."),
			"max":     integer(1, "Show at most this many entries."),
		}),
		Profiles: recallProfiles,
	},
}

// The tools' names.
const (
	PurgeControl   = "purge_control"
	RecallGrep     = "recall_grep"
	RecallDescribe = "recall_describe"
	RecallExpand   = "recall_expand"
)

// The actions of purge_control.
const (
	ActionGetContext     = "get_context"
	ActionRestore        = "restore"
	ActionSetExtractable = "set_extractable"
)

// Specs returns the agent's tools, in the order the plugin registers
// them. The slice is a copy; the schemas are shared and must not be
// changed.
func Specs() []Spec { return slices.Clone(specs) }

// Names returns the names of the agent's tools, in the order of Specs.
func Names() []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

// Lookup returns the spec of the tool name, and false when there is no
// such tool.
func Lookup(name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// ExpectedTools names the tools for an error message: "purge_control,
// recall_grep, recall_describe or recall_expand".
func ExpectedTools() string {
	names := Names()
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
