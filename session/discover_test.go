package session_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testtree"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// discoverCorpusDir returns the corpus directory of the shared directory;
// t is skipped when it is missing (failed when CI requires it).
func discoverCorpusDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(oracle.Shared(t), "corpus")
}

// discoverOpenClawCorpus returns a directory of the real OpenClaw corpus.
func discoverOpenClawCorpus(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(discoverCorpusDir(t), "openclaw", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("corpus dir %s: %v", p, err)
	}
	return p
}

// discoverFixture returns the absolute path of testdata/discover/<rel>.
func discoverFixture(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "discover", filepath.FromSlash(rel)))
	dreq.NoError(t, err)
	return p
}

// discoverSummary renders refs as "agent/id key status label" lines.
func discoverSummary(refs []brainsurgeon.SessionRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = fmt.Sprintf("%s/%s key=%s status=%s label=%s", r.Agent, r.ID, r.Key, r.Status, r.Label)
	}
	return out
}

// discoverClassifyTable lists every file name of the corpus and every name
// the research doc (sections 2.1, 2.8, 3, 4) mentions, by expected kind.
var discoverClassifyTable = []struct {
	name  string // CamelCase subtest name
	kind  session.FileKind
	files []string
}{
	{"Transcript", session.FileKindTranscript, []string{
		"b4c26dcb-b630-4911-8f01-5b463210db72.jsonl",
		"d27ecd5a-45f9-41a3-bad1-ddef6a3c79fc.jsonl",
		"0139686e-bbb1-4d89-8ef1-936bb36dd277.jsonl",
		"ea774ff3-e94f-41d2-aba0-a6a1c80697e4.jsonl",
		"compact.jsonl",
		"before-compaction.jsonl",
		"large-session.jsonl",
		"session.jsonl",
		"1f979e30-12ad-4b66-80ac-bcbb53b985ff.jsonl",
		"1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl",
		"29330952-50b3-43df-bbfe-a0e2046f3800.jsonl",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl",
		"edge_cases.jsonl",
		"representative_messages.jsonl",
		"2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05-topic-42.jsonl",
		"config-audit.jsonl",
		"/home/dai/.openclaw/agents/main/sessions/1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl",
		`C:\Users\WH\.openclaw\agents\main\sessions\d27ecd5a-45f9-41a3-bad1-ddef6a3c79fc.jsonl`,
	}},
	{"Lock", session.FileKindLock, []string{
		"b4c26dcb-b630-4911-8f01-5b463210db72.jsonl.lock",
		`C:\Users\WH\.openclaw\agents\main\sessions\d27ecd5a-45f9-41a3-bad1-ddef6a3c79fc.jsonl.lock`,
	}},
	{"ResetArchive", session.FileKindResetArchive, []string{
		"cad3c17f-7294-45e0-b6c3-830c29795e36.jsonl.reset.2026-04-17T03-32-45.138Z",
		"0ff7b343-fcdb-4bc2-8504-ccc296c7e85b.jsonl.reset.2026-05-01T16-27-13.884Z",
		"/home/dai/.openclaw/agents/main/sessions/1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl.reset.x",
	}},
	{"DeletedArchive", session.FileKindDeletedArchive, []string{
		"9b17069a-5c32-4e11-b361-ce9c87ca2769.jsonl.deleted.2026-03-05T17-09-36.953Z",
		"7760a1b7-82b9-4f67-bd74-af93195f4086.jsonl.deleted.2026-04-29T13-33-00.652Z",
	}},
	{"Backup", session.FileKindBackup, []string{
		"1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl.bak-164503-1777924592329",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl.bak",
		"openclaw.json.bak",
	}},
	{"Checkpoint", session.FileKindCheckpoint, []string{
		"29330952-50b3-43df-bbfe-a0e2046f3800.checkpoint.a3de7cd2-45e4-42f5-b649-926d1b13c4e8.jsonl",
	}},
	{"Corrupt", session.FileKindCorrupt, []string{
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl.corrupt-2026-05-01T16-27-13.884Z-0a1b2c3d.jsonl",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.corrupt-2026-05-01T16-27-13-884Z-0a1b2c3d.jsonl",
	}},
	{"Trajectory", session.FileKindTrajectory, []string{
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.trajectory.jsonl",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.trajectory-path.json",
	}},
	{"Store", session.FileKindStore, []string{
		"sessions.json",
		"sessions.json.telegram-sent-messages.json",
		"sessions.json.1234.5678.tmp",
	}},
	{"Other", session.FileKindOther, []string{
		"SOURCES.md",
		"openclaw-agent.sqlite",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl.tmp",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl.tmp-1234-1777924592329",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl.4f3c.tmp",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl~",
		".5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl.swp",
		".5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl",
		".DS_Store",
		".gitattributes",
		"extracted",
		"skills-prompts",
		"session-sqlite-import-archive",
		"0b5e6c1e2f3a4b4c8d9eaaaaaaaaaaaabbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.jsonl.zst",
		"5e9096eb-a13b-48ae-990d-ca9d6f231b05.future-sidecar.jsonl",
		"openclaw.json",
		".jsonl",
		"",
	}},
}

// discoverClassifyNames maps each name of discoverClassifyTable to its kind.
var discoverClassifyNames = func() map[string]session.FileKind {
	m := map[string]session.FileKind{}
	for _, row := range discoverClassifyTable {
		for _, f := range row.files {
			m[f] = row.kind
		}
	}
	return m
}()

func TestClassifyFile(t *testing.T) {
	for _, tt := range discoverClassifyTable {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range tt.files {
				dreq.Equal(t, tt.kind, session.ClassifyFile(f), "ClassifyFile(%q)", f)
			}
		})
	}
}

// TestClassifyFileCorpusNames checks that the table above covers every file
// of the corpus, so a new corpus file gets a deliberate classification.
func TestClassifyFileCorpusNames(t *testing.T) {
	corpus := discoverCorpusDir(t)
	n := 0
	err := filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		_, ok := discoverClassifyNames[d.Name()]
		dreq.True(t, ok, "corpus file %s is missing from the ClassifyFile table", p)
		return nil
	})
	dreq.NoError(t, err)
	dreq.GreaterOrEqual(t, n, 22)
}

func TestClassifyFileKindString(t *testing.T) {
	tests := []struct {
		kind session.FileKind
		want string
	}{
		{session.FileKindOther, "other"},
		{session.FileKindTranscript, "transcript"},
		{session.FileKindLock, "lock"},
		{session.FileKindResetArchive, "reset-archive"},
		{session.FileKindDeletedArchive, "deleted-archive"},
		{session.FileKindBackup, "backup"},
		{session.FileKindCheckpoint, "checkpoint"},
		{session.FileKindCorrupt, "corrupt"},
		{session.FileKindTrajectory, "trajectory"},
		{session.FileKindStore, "store"},
		{session.FileKind(99), "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			dreq.Equal(t, tt.want, tt.kind.String())
		})
	}
	dreq.Equal(t, "openclaw", session.LayoutOpenClaw.String())
	dreq.Equal(t, "pi", session.LayoutPi.String())
	dreq.Equal(t, "unknown", session.Layout(0).String())
}

func TestDiscoverCorpus(t *testing.T) {
	tests := []struct {
		name     string
		root     string
		wantRoot string // suffix of Discovery.Root
		want     []string
		keys     map[string][]string // session id → every key
	}{
		{
			name:     "MuskFanX",
			root:     "Musk-fanX__openclaw-backup/agents",
			wantRoot: "Musk-fanX__openclaw-backup/agents",
			want: []string{
				"main/b4c26dcb-b630-4911-8f01-5b463210db72 key= status= label=",
				"main/d27ecd5a-45f9-41a3-bad1-ddef6a3c79fc key=agent:main:main status= label=",
			},
			keys: map[string][]string{
				"b4c26dcb-b630-4911-8f01-5b463210db72": nil,
				"d27ecd5a-45f9-41a3-bad1-ddef6a3c79fc": {"agent:main:main"},
			},
		},
		{
			name:     "NucboxDotOpenclaw",
			root:     "sirdeuce__nucbox-backup/.openclaw",
			wantRoot: "sirdeuce__nucbox-backup/.openclaw/agents",
			want: []string{
				"main/1d9efd24-3d45-430b-a703-e713c1679ce1 key=agent:main:main status=done label=",
				"main/29330952-50b3-43df-bbfe-a0e2046f3800 key= status= label=",
				"main/5e9096eb-a13b-48ae-990d-ca9d6f231b05 key=agent:main:telegram:direct:8072905176 status=done label=",
			},
			keys: map[string][]string{
				"1d9efd24-3d45-430b-a703-e713c1679ce1": {"agent:main:main"},
				"29330952-50b3-43df-bbfe-a0e2046f3800": nil,
				"5e9096eb-a13b-48ae-990d-ca9d6f231b05": {"agent:main:telegram:direct:8072905176"},
			},
		},
		{
			name:     "ReinforcementSleepingThreeAgents",
			root:     "ReinforcementSleeping__openclaw-backup/agents",
			wantRoot: "ReinforcementSleeping__openclaw-backup/agents",
			want: []string{
				"anuo/0139686e-bbb1-4d89-8ef1-936bb36dd277 key= status= label=",
				"main/ea774ff3-e94f-41d2-aba0-a6a1c80697e4 key= status= label=",
			},
		},
		{
			name:     "OpenClawLogWindowsStore",
			root:     "openclawlaw-cpu__OpenClawLog/.openclaw/agents",
			wantRoot: "openclawlaw-cpu__OpenClawLog/.openclaw/agents",
			want: []string{
				"main/1f979e30-12ad-4b66-80ac-bcbb53b985ff key=agent:main:main status= label=",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := discoverOpenClawCorpus(t, tt.root)
			d, err := session.DiscoverWith(context.Background(), root, session.DiscoverOptions{})
			dreq.NoError(t, err)
			dreq.Empty(t, d.Warnings)
			dreq.Equal(t, session.LayoutOpenClaw, d.Layout)
			dreq.True(t, strings.HasSuffix(d.Root, filepath.FromSlash(tt.wantRoot)), "Root %s", d.Root)
			dreq.Equal(t, tt.want, discoverSummary(d.Sessions))
			for _, ref := range d.Sessions {
				dreq.True(t, filepath.IsAbs(ref.Path), ref.Path)
				dreq.Equal(t, ref.ID+".jsonl", filepath.Base(ref.Path))
				dreq.Equal(t, filepath.Join(d.Root, ref.Agent, "sessions", ref.ID+".jsonl"), ref.Path)
				dreq.Equal(t, session.FileKindTranscript, session.ClassifyFile(ref.Path))
				if tt.keys != nil {
					dreq.Equal(t, tt.keys[ref.ID], d.Keys(ref), "keys of %s", ref)
				}
			}
			refs, err := session.Discover(context.Background(), root)
			dreq.NoError(t, err)
			dreq.Equal(t, d.Sessions, refs)
		})
	}
}

// TestDiscoverCorpusEmptyAgents runs on the SQLite-era corpus: agents dirs
// whose agents have only an agent/ dir are valid and hold no sessions.
func TestDiscoverCorpusEmptyAgents(t *testing.T) {
	root := filepath.Join(discoverCorpusDir(t), "openclaw-sqlite", "ReinforcementSleeping__openclaw-backup", "agents")
	d, err := session.DiscoverWith(context.Background(), root, session.DiscoverOptions{})
	dreq.NoError(t, err)
	dreq.Equal(t, session.LayoutOpenClaw, d.Layout)
	dreq.Empty(t, d.Sessions)
	dreq.Empty(t, d.Warnings)
}

func TestResolveCorpus(t *testing.T) {
	root := discoverOpenClawCorpus(t, "sirdeuce__nucbox-backup/.openclaw")
	d, err := session.DiscoverWith(context.Background(), root, session.DiscoverOptions{})
	dreq.NoError(t, err)
	sessions := filepath.Join(d.Root, "main", "sessions")
	wd, err := os.Getwd()
	dreq.NoError(t, err)
	relToWD, err := filepath.Rel(wd, filepath.Join(sessions, "29330952-50b3-43df-bbfe-a0e2046f3800.jsonl"))
	dreq.NoError(t, err)

	tests := []struct {
		name string
		in   string
		want string // session id
	}{
		{"FullKey", "agent:main:main", "1d9efd24-3d45-430b-a703-e713c1679ce1"},
		{"KeySuffixMainMain", "main:main", "1d9efd24-3d45-430b-a703-e713c1679ce1"},
		{"TelegramDirectSuffix", "direct:8072905176", "5e9096eb-a13b-48ae-990d-ca9d6f231b05"},
		{"TelegramFullKey", "agent:main:telegram:direct:8072905176", "5e9096eb-a13b-48ae-990d-ca9d6f231b05"},
		{"AgentSlashID", "main/29330952-50b3-43df-bbfe-a0e2046f3800", "29330952-50b3-43df-bbfe-a0e2046f3800"},
		{"AgentSlashPrefix", "main/29330952", "29330952-50b3-43df-bbfe-a0e2046f3800"},
		{"BareID", "5e9096eb-a13b-48ae-990d-ca9d6f231b05", "5e9096eb-a13b-48ae-990d-ca9d6f231b05"},
		{"BarePrefix", "1d9efd24", "1d9efd24-3d45-430b-a703-e713c1679ce1"},
		{"AbsolutePath", filepath.Join(sessions, "5e9096eb-a13b-48ae-990d-ca9d6f231b05.jsonl"), "5e9096eb-a13b-48ae-990d-ca9d6f231b05"},
		{"PathRelativeToRoot", "main/sessions/1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl", "1d9efd24-3d45-430b-a703-e713c1679ce1"},
		{"PathRelativeToStateDir", "agents/main/sessions/1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl", "1d9efd24-3d45-430b-a703-e713c1679ce1"},
		{"FileName", "29330952-50b3-43df-bbfe-a0e2046f3800.jsonl", "29330952-50b3-43df-bbfe-a0e2046f3800"},
		{"PathRelativeToWorkingDir", relToWD, "29330952-50b3-43df-bbfe-a0e2046f3800"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, resolve := range []func(string) (brainsurgeon.SessionRef, error){
				d.Resolve,
				func(n string) (brainsurgeon.SessionRef, error) { return session.ResolveRef(d.Sessions, n, nil) },
			} {
				ref, err := resolve(tt.in)
				dreq.NoError(t, err)
				dreq.Equal(t, tt.want, ref.ID)
				dreq.Equal(t, "main", ref.Agent)
			}
		})
	}

	notFound := []struct {
		name, in, msg string
	}{
		{"SkippedKeyWithoutTranscript", "telegram:slash:8072905176", "agent:main:main"},
		{"CronKeyWithoutTranscript", "agent:main:cron:93b9902c-05da-42f4-bc9d-0020a2f61ebb", "no session key"},
		{"ResetArchive", "0ff7b343-fcdb-4bc2-8504-ccc296c7e85b", "no session"},
		{"ResetArchivePath", filepath.Join(sessions, "0ff7b343-fcdb-4bc2-8504-ccc296c7e85b.jsonl.reset.2026-05-01T16-27-13.884Z"), "reset-archive"},
		{"DeletedArchive", "main/7760a1b7-82b9-4f67-bd74-af93195f4086", "its sessions"},
		{"BackupPath", filepath.Join(sessions, "1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl.bak-164503-1777924592329"), "backup"},
		{"CheckpointPath", filepath.Join(sessions, "29330952-50b3-43df-bbfe-a0e2046f3800.checkpoint.a3de7cd2-45e4-42f5-b649-926d1b13c4e8.jsonl"), "checkpoint"},
		{"CheckpointUUID", "a3de7cd2-45e4-42f5-b649-926d1b13c4e8", "no session"},
		{"SessionsJSON", filepath.Join(sessions, "sessions.json"), "a store file"},
		{"MissingPath", filepath.Join(sessions, "00000000-0000-4000-8000-000000000000.jsonl"), "no session at path"},
		{"UnknownAgent", "nobody/1d9efd24", `no agent "nobody"`},
	}
	for _, tt := range notFound {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.Resolve(tt.in)
			dreq.ErrorIs(t, err, brainsurgeon.ErrNotFound)
			dreq.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestDiscoverOpenClawFixture(t *testing.T) {
	root := discoverFixture(t, "openclaw/agents")
	log := &discoverLog{}
	d, err := session.DiscoverWith(context.Background(), root, session.DiscoverOptions{Logger: log})
	dreq.NoError(t, err)
	dreq.Empty(t, d.Warnings)
	dreq.Empty(t, log.warns())
	dreq.Equal(t, session.LayoutOpenClaw, d.Layout)
	dreq.Equal(t, root, d.Root)
	dreq.Equal(t, []string{
		"alpha/11111111-aaaa-4aaa-8aaa-000000000001 key=agent:alpha:main status=running label=Alpha main",
		"alpha/22222222-aaaa-4aaa-8aaa-000000000002 key=agent:alpha:cron:job1 status= label=Cron job 1",
		"alpha/33333333-aaaa-4aaa-8aaa-000000000003 key=agent:alpha:escape status= label=",
		"alpha/55555555-aaaa-4aaa-8aaa-000000000005-topic-3 key=agent:alpha:telegram:group:7:topic:3 status= label=",
		"alpha/66666666-aaaa-4aaa-8aaa-000000000006 key= status= label=",
		"alpha/77777777-7777-4777-8777-777777777777 key= status= label=",
		"beta/11111111-bbbb-4bbb-8bbb-000000000001 key=agent:beta:main status=done label=",
		"beta/77777777-7777-4777-8777-777777777777 key= status= label=",
	}, discoverSummary(d.Sessions))

	byID := map[string]brainsurgeon.SessionRef{}
	for _, ref := range d.Sessions {
		byID[ref.String()] = ref
	}
	dreq.Equal(t, []string{"agent:alpha:main", "agent:alpha:telegram:direct:42"},
		d.Keys(byID["alpha/11111111-aaaa-4aaa-8aaa-000000000001"]))
	dreq.Equal(t, []string{"agent:beta:main", "agent:beta:telegram:direct:42"},
		d.Keys(byID["beta/11111111-bbbb-4bbb-8bbb-000000000001"]))
	dreq.Nil(t, d.Keys(byID["alpha/66666666-aaaa-4aaa-8aaa-000000000006"]))
	// Keys returns a copy.
	k := d.Keys(byID["alpha/11111111-aaaa-4aaa-8aaa-000000000001"])
	k[0] = "changed"
	dreq.Equal(t, "agent:alpha:main", d.Keys(byID["alpha/11111111-aaaa-4aaa-8aaa-000000000001"])[0])

	// Keys whose transcript is missing, a sidecar or outside the store.
	debug := strings.Join(log.debugs(), "\n")
	for _, key := range []string{"agent:alpha:hook:gone", "agent:alpha:sidecar", "agent:alpha:traversal-id"} {
		dreq.Contains(t, debug, key)
		_, err := d.Resolve(key)
		dreq.ErrorIs(t, err, brainsurgeon.ErrNotFound, key)
	}
}

func TestResolveFixture(t *testing.T) {
	d, err := session.DiscoverWith(context.Background(), discoverFixture(t, "openclaw/agents"), session.DiscoverOptions{})
	dreq.NoError(t, err)
	tests := []struct {
		name string
		in   string
		want string // agent/id
	}{
		{"PrimaryKey", "agent:alpha:main", "alpha/11111111-aaaa-4aaa-8aaa-000000000001"},
		{"SecondaryKeyFull", "agent:alpha:telegram:direct:42", "alpha/11111111-aaaa-4aaa-8aaa-000000000001"},
		{"AlphaMainSuffix", "alpha:main", "alpha/11111111-aaaa-4aaa-8aaa-000000000001"},
		{"TopicKeySuffix", "topic:3", "alpha/55555555-aaaa-4aaa-8aaa-000000000005-topic-3"},
		{"TopicByStem", "55555555-aaaa-4aaa-8aaa-000000000005-topic-3", "alpha/55555555-aaaa-4aaa-8aaa-000000000005-topic-3"},
		{"TopicBySessionIDPrefix", "55555555-aaaa", "alpha/55555555-aaaa-4aaa-8aaa-000000000005-topic-3"},
		{"LongerPrefixDisambiguates", "11111111-a", "alpha/11111111-aaaa-4aaa-8aaa-000000000001"},
		{"AgentQualifiedDuplicate", "beta/77777777-7777-4777-8777-777777777777", "beta/77777777-7777-4777-8777-777777777777"},
		{"AgentQualifiedPrefix", "beta/11111111", "beta/11111111-bbbb-4bbb-8bbb-000000000001"},
		{"DisplayNameLabelKey", "cron:job1", "alpha/22222222-aaaa-4aaa-8aaa-000000000002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := d.Resolve(tt.in)
			dreq.NoError(t, err)
			dreq.Equal(t, tt.want, ref.String())
		})
	}

	// The package-level Resolve knows only primary keys.
	_, err = session.ResolveRef(d.Sessions, "agent:alpha:telegram:direct:42", nil)
	dreq.ErrorIs(t, err, brainsurgeon.ErrNotFound)
}

func TestResolveAmbiguous(t *testing.T) {
	d, err := session.DiscoverWith(context.Background(), discoverFixture(t, "openclaw/agents"), session.DiscoverOptions{})
	dreq.NoError(t, err)
	tests := []struct {
		name  string
		in    string
		wants []string // every candidate must be named
	}{
		{"DuplicateIDAcrossAgents", "77777777-7777-4777-8777-777777777777",
			[]string{"alpha/77777777-7777-4777-8777-777777777777", "beta/77777777-7777-4777-8777-777777777777"}},
		{"PrefixAcrossAgents", "11111111",
			[]string{"alpha/11111111-aaaa-4aaa-8aaa-000000000001", "beta/11111111-bbbb-4bbb-8bbb-000000000001"}},
		{"KeySuffixAcrossAgents", "telegram:direct:42",
			[]string{"alpha/11111111-aaaa-4aaa-8aaa-000000000001", "beta/11111111-bbbb-4bbb-8bbb-000000000001", "agent:beta:telegram:direct:42"}},
		{"FileNameInTwoAgents", "77777777-7777-4777-8777-777777777777.jsonl",
			[]string{filepath.Join(d.Root, "alpha", "sessions"), filepath.Join(d.Root, "beta", "sessions")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.Resolve(tt.in)
			dreq.ErrorIs(t, err, brainsurgeon.ErrAmbiguous)
			dreq.NotErrorIs(t, err, brainsurgeon.ErrNotFound)
			for _, w := range tt.wants {
				dreq.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestResolveNotFoundMessage(t *testing.T) {
	var refs []brainsurgeon.SessionRef
	for i := range 25 {
		id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
		refs = append(refs, brainsurgeon.SessionRef{
			Agent: "main", ID: id, Path: "/store/main/sessions/" + id + ".jsonl",
			Key: fmt.Sprintf("agent:main:cron:%02d", i),
		})
	}
	tests := []struct {
		name string
		in   string
		msgs []string
	}{
		{"UnknownID", "deadbeef-dead", []string{"expected agent/sessionId", "00000000-0000-4000-8000-000000000000 (agent:main:cron:00)", "… and 5 more"}},
		{"UnknownKey", "agent:main:nope", []string{"no session key", "agent:main:cron:19", "… and 5 more"}},
		{"UnknownAgentSession", "main/ffffffff", []string{`agent "main" has no session id "ffffffff"`, "… and 5 more"}},
		{"UnknownAgent", "other/ffffffff", []string{`no agent "other"`, "main"}},
		{"AgentNameAlone", "main", []string{"is an agent", "main/<sessionId>"}},
		{"ShortPrefixRefused", "0000001", []string{"8 characters or more"}},
		{"UnknownPath", "/nowhere/x.jsonl", []string{"no session at path", "… and 5 more"}},
		{"UnknownDotSlashName", "./00000001", []string{"no session at path"}},
		{"LockPath", "/store/main/sessions/00000001-0000-4000-8000-000000000000.jsonl.lock", []string{"lock file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.ResolveRef(refs, tt.in, nil)
			dreq.ErrorIs(t, err, brainsurgeon.ErrNotFound)
			for _, m := range tt.msgs {
				dreq.Contains(t, err.Error(), m)
			}
			// Never more than 20 names: the 21st is not listed.
			dreq.NotContains(t, err.Error(), "00000020-0000")
		})
	}
	_, err := session.ResolveRef(nil, "anything", nil)
	dreq.ErrorIs(t, err, brainsurgeon.ErrNotFound)
	dreq.Contains(t, err.Error(), "sessions: none")
}

func TestResolveInvalid(t *testing.T) {
	refs := []brainsurgeon.SessionRef{{Agent: "main", ID: "1d9efd24-3d45-430b-a703-e713c1679ce1", Path: "/store/main/sessions/1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl", Key: "agent:main:main"}}
	tests := []struct {
		name string
		in   string
		msg  string
	}{
		{"Empty", "", "empty session name"},
		{"Blank", "  ", "empty session name"},
		{"NUL", "main/1d9e\x00fd24", "NUL"},
		{"NULInKey", "agent:main\x00:main", "NUL"},
		{"ControlChar", "main/1d9efd24\n", "control character"},
		{"InvalidUTF8", "main/\xff\xfe", "UTF-8"},
		{"DotDotAgent", "../1d9efd24", ".. element"},
		{"DotDotAgentSlashID", "../1d9efd24-3d45-430b-a703-e713c1679ce1", ".. element"},
		{"DotDotSession", "main/..", "not a valid session id"},
		{"DotDotAlone", "..", "not a valid session id"},
		{"TraversalPath", "main/../../../etc/passwd", ".. element"},
		{"TraversalRelative", "../../../../../../etc/passwd", ".. element"},
		{"TraversalBackslash", `main\..\..\etc`, "not a valid session id"},
		{"EmptySession", "main/", "not a valid session id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.ResolveRef(refs, tt.in, nil)
			dreq.ErrorIs(t, err, brainsurgeon.ErrInvalid)
			dreq.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestDiscoverPi(t *testing.T) {
	root := discoverFixture(t, "pi")
	d, err := session.DiscoverWith(context.Background(), root, session.DiscoverOptions{})
	dreq.NoError(t, err)
	dreq.Equal(t, session.LayoutPi, d.Layout)
	dreq.Equal(t, root, d.Root)
	dreq.Equal(t, []string{
		"/0b5e6c1e-2f3a-4b4c-8d9e-aaaaaaaaaaaa key= status= label=--home-u-other--",
		"/d703a1a9-0000-4000-8000-000000000002 key= status= label=--home-u-proj--",
		"/d703a1a9-1b7b-4fb1-b512-c9738b1fe617 key= status= label=--home-u-proj--",
	}, discoverSummary(d.Sessions))
	dreq.Equal(t, filepath.Join(root, "--home-u-proj--", "2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl"), d.Sessions[2].Path)

	tests := []struct {
		name, in, want string
	}{
		{"UUID", "d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"},
		{"UniquePrefix", "0b5e6c1e", "0b5e6c1e-2f3a-4b4c-8d9e-aaaaaaaaaaaa"},
		{"ProjectSlashUUID", "--home-u-proj--/d703a1a9-0000-4000-8000-000000000002", "d703a1a9-0000-4000-8000-000000000002"},
		{"FileStem", "2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617", "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"},
		{"RelativePath", "--home-u-other--/2025-12-01T08-00-00-000Z_0b5e6c1e-2f3a-4b4c-8d9e-aaaaaaaaaaaa.jsonl", "0b5e6c1e-2f3a-4b4c-8d9e-aaaaaaaaaaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := session.ResolveRef(d.Sessions, tt.in, nil)
			dreq.NoError(t, err)
			dreq.Equal(t, tt.want, ref.ID)
			dreq.Empty(t, ref.Agent)
		})
	}
	_, err = session.ResolveRef(d.Sessions, "d703a1a9", nil)
	dreq.ErrorIs(t, err, brainsurgeon.ErrAmbiguous)
	dreq.Contains(t, err.Error(), "--home-u-proj--/d703a1a9-0000-4000-8000-000000000002")
	dreq.Contains(t, err.Error(), "--home-u-proj--/d703a1a9-1b7b-4fb1-b512-c9738b1fe617")
}

func TestDiscoverCorruptStore(t *testing.T) {
	root := discoverFixture(t, "corrupt/agents")
	log := &discoverLog{}
	d, err := session.DiscoverWith(context.Background(), root, session.DiscoverOptions{Logger: log})
	dreq.NoError(t, err)
	dreq.Equal(t, []string{
		"main/aaaaaaaa-0000-4000-8000-000000000001 key= status= label=",
		"other/bbbbbbbb-0000-4000-8000-000000000001 key=agent:other:main status=done label=",
		"other/bbbbbbbb-0000-4000-8000-000000000002 key= status= label=",
	}, discoverSummary(d.Sessions))
	dreq.Len(t, d.Warnings, 3)
	msgs := make([]string, len(d.Warnings))
	for i, w := range d.Warnings {
		msgs[i] = w.Error()
	}
	joined := strings.Join(msgs, "\n")
	dreq.Contains(t, joined, filepath.Join(root, "main", "sessions", "sessions.json")+" is not a JSON object")
	dreq.Contains(t, joined, `entry "agent:other:broken" ignored: the entry is a JSON string, not an object`)
	dreq.Contains(t, joined, `entry "agent:other:badtype" ignored: field "sessionId" is a JSON number, not a string`)
	dreq.Len(t, log.warns(), 3)

	refs, err := session.Discover(context.Background(), root)
	dreq.NoError(t, err, "a bad store is not fatal")
	dreq.Len(t, refs, 3)
}

func TestDiscoverRootErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	empty := t.TempDir()
	dotOnly := t.TempDir()
	dreq.NoError(t, os.WriteFile(filepath.Join(dotOnly, ".keep"), nil, 0o600))
	stateDirNoAgents := t.TempDir()
	dreq.NoError(t, os.MkdirAll(filepath.Join(stateDirNoAgents, "agents"), 0o700))
	dreq.NoError(t, os.WriteFile(filepath.Join(stateDirNoAgents, "openclaw.json"), []byte("{}"), 0o600))

	tests := []struct {
		name    string
		root    string
		is      error
		msgs    []string
		nothing bool // valid, no sessions
	}{
		{name: "Missing", root: missing, is: fs.ErrNotExist, msgs: []string{"agents dir " + missing + " does not exist"}},
		{name: "IsAFile", root: discoverFixture(t, "neither/notes.txt"), is: brainsurgeon.ErrInvalid, msgs: []string{"is a file, not a directory", "expected an OpenClaw agents dir"}},
		{name: "Neither", root: discoverFixture(t, "neither"), is: brainsurgeon.ErrInvalid, msgs: []string{
			"expected an OpenClaw agents dir (<agent>/sessions/*.jsonl) or a pi sessions dir (--<cwd>--/*.jsonl)",
			"found docs/, notes.txt",
		}},
		{name: "EmptyString", root: "", is: brainsurgeon.ErrInvalid, msgs: []string{"no agents dir given"}},
		{name: "NULInRoot", root: "a\x00b", is: brainsurgeon.ErrInvalid, msgs: []string{"NUL"}},
		{name: "EmptyAgentsDir", root: discoverFixture(t, "emptyagents"), nothing: true},
		{name: "EmptyDirectory", root: empty, nothing: true},
		{name: "DotFilesOnly", root: dotOnly, nothing: true},
		{name: "StateDirWithEmptyAgents", root: stateDirNoAgents, nothing: true},
		{name: "AgentsWithOnlyResetArchiveOrNoSessionsDir", root: discoverFixture(t, "openclaw/agents")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs, err := session.Discover(context.Background(), tt.root)
			if tt.is == nil {
				dreq.NoError(t, err)
				if tt.nothing {
					dreq.Empty(t, refs)
				}
				for _, r := range refs {
					dreq.NotEqual(t, "delta", r.Agent, "delta has only a .reset archive")
					dreq.NotEqual(t, "gamma", r.Agent, "gamma has no sessions dir")
				}
				return
			}
			dreq.ErrorIs(t, err, tt.is)
			for _, m := range tt.msgs {
				dreq.Contains(t, err.Error(), m)
			}
		})
	}
}

func TestDiscoverCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := session.Discover(ctx, discoverFixture(t, "openclaw/agents"))
	dreq.ErrorIs(t, err, context.Canceled)
}

// TestDiscoverSymlinkedRoot reaches the store through a symbolic link and
// names a transcript through the real path.
func TestDiscoverSymlinkedRoot(t *testing.T) {
	target := discoverFixture(t, "openclaw/agents")
	link := filepath.Join(t.TempDir(), "agents-link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatalf("symlinks unavailable: %v", err)
	}
	d, err := session.DiscoverWith(context.Background(), link, session.DiscoverOptions{})
	dreq.NoError(t, err)
	dreq.Len(t, d.Sessions, 8)
	ref, err := d.Resolve(filepath.Join(target, "alpha", "sessions", "66666666-aaaa-4aaa-8aaa-000000000006.jsonl"))
	dreq.NoError(t, err)
	dreq.Equal(t, "alpha/66666666-aaaa-4aaa-8aaa-000000000006", ref.String())
	dreq.True(t, strings.HasPrefix(ref.Path, link))
}

// TestDiscoverReadOnly checks that discovery and resolution write nothing:
// every file's content, size, mode and mtime and every directory's listing
// and mtime are the same afterwards.
func TestDiscoverReadOnly(t *testing.T) {
	roots := []string{
		discoverOpenClawCorpus(t, "Musk-fanX__openclaw-backup/agents"),
		discoverOpenClawCorpus(t, "sirdeuce__nucbox-backup/.openclaw"),
		discoverOpenClawCorpus(t, "ReinforcementSleeping__openclaw-backup/agents"),
		discoverFixture(t, "openclaw/agents"),
		discoverFixture(t, "pi"),
		discoverFixture(t, "corrupt/agents"),
	}
	before := make([]map[string]string, len(roots))
	for i, r := range roots {
		before[i] = testtree.Snapshot(t, r)
	}
	for _, r := range roots {
		d, err := session.DiscoverWith(context.Background(), r, session.DiscoverOptions{})
		dreq.NoError(t, err)
		for _, ref := range d.Sessions {
			for _, name := range []string{ref.Path, ref.String(), ref.ID, ref.Key} {
				if name != "" {
					_, _ = d.Resolve(name)
				}
			}
		}
	}
	for i, r := range roots {
		dreq.Equal(t, before[i], testtree.Snapshot(t, r), "tree %s changed", r)
	}
}

// discoverLog records log calls; it is a brainsurgeon.Logger.
type discoverLog struct {
	mu      sync.Mutex
	records []string
}

func (l *discoverLog) add(level, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, level+" "+msg+" "+fmt.Sprint(args...))
}

func (l *discoverLog) Debug(msg string, args ...any) { l.add("DEBUG", msg, args...) }
func (l *discoverLog) Info(msg string, args ...any)  { l.add("INFO", msg, args...) }
func (l *discoverLog) Warn(msg string, args ...any)  { l.add("WARN", msg, args...) }
func (l *discoverLog) Error(msg string, args ...any) { l.add("ERROR", msg, args...) }

func (l *discoverLog) level(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.records {
		if strings.HasPrefix(r, prefix+" ") {
			out = append(out, r)
		}
	}
	return out
}

func (l *discoverLog) warns() []string  { return l.level("WARN") }
func (l *discoverLog) debugs() []string { return l.level("DEBUG") }

var _ brainsurgeon.Logger = (*discoverLog)(nil)

func TestDiscoverMissingRootWrapsOSErrNotExist(t *testing.T) {
	_, err := session.Discover(context.Background(), filepath.Join(t.TempDir(), "missing"))
	dreq.True(t, errors.Is(err, os.ErrNotExist))
	dreq.NotEqual(t, fs.ErrNotExist.Error(), err.Error())
}

// dreq holds the few assertions these tests need. (testify's require cannot
// be built here: its dependencies have no go.sum entries, and go.mod and
// go.sum are not ours to change.) Each one stops the test on failure.
var dreq discoverRequire

type discoverRequire struct{}

func (discoverRequire) fail(t testing.TB, msgAndArgs []any, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if len(msgAndArgs) > 0 {
		if f, ok := msgAndArgs[0].(string); ok {
			msg += ": " + fmt.Sprintf(f, msgAndArgs[1:]...)
		} else {
			msg += ": " + fmt.Sprint(msgAndArgs...)
		}
	}
	t.Fatal(msg)
}

func (r discoverRequire) NoError(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		r.fail(t, msgAndArgs, "unexpected error: %v", err)
	}
}

func (r discoverRequire) ErrorIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		r.fail(t, msgAndArgs, "error %v does not wrap %v", err, target)
	}
}

func (r discoverRequire) NotErrorIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	if errors.Is(err, target) {
		r.fail(t, msgAndArgs, "error %v wraps %v", err, target)
	}
}

func (r discoverRequire) Equal(t testing.TB, want, got any, msgAndArgs ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		r.fail(t, msgAndArgs, "not equal:\nwant %#v\n got %#v", want, got)
	}
}

func (r discoverRequire) NotEqual(t testing.TB, want, got any, msgAndArgs ...any) {
	t.Helper()
	if reflect.DeepEqual(want, got) {
		r.fail(t, msgAndArgs, "both are %#v", got)
	}
}

func (r discoverRequire) True(t testing.TB, ok bool, msgAndArgs ...any) {
	t.Helper()
	if !ok {
		r.fail(t, msgAndArgs, "false")
	}
}

func (r discoverRequire) Nil(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsNil() {
		r.fail(t, msgAndArgs, "not nil: %#v", v)
	}
}

func (r discoverRequire) Len(t testing.TB, v any, n int, msgAndArgs ...any) {
	t.Helper()
	if l := reflect.ValueOf(v).Len(); l != n {
		r.fail(t, msgAndArgs, "length %d, want %d: %#v", l, n, v)
	}
}

func (r discoverRequire) Empty(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if v != nil && reflect.ValueOf(v).Len() != 0 {
		r.fail(t, msgAndArgs, "not empty: %#v", v)
	}
}

func (r discoverRequire) GreaterOrEqual(t testing.TB, got, min int, msgAndArgs ...any) {
	t.Helper()
	if got < min {
		r.fail(t, msgAndArgs, "%d < %d", got, min)
	}
}

func (r discoverRequire) Contains(t testing.TB, s, sub string, msgAndArgs ...any) {
	t.Helper()
	if !strings.Contains(s, sub) {
		r.fail(t, msgAndArgs, "%q does not contain %q", s, sub)
	}
}

func (r discoverRequire) NotContains(t testing.TB, s, sub string, msgAndArgs ...any) {
	t.Helper()
	if strings.Contains(s, sub) {
		r.fail(t, msgAndArgs, "%q contains %q", s, sub)
	}
}

// TestResolveRefOtherBackend resolves among refs of a store that keeps many
// sessions in one database file, as the SQLite backend does: the path names
// no single session, and its file name is no session id.
func TestResolveRefOtherBackend(t *testing.T) {
	db := "/state/agents/main/agent/openclaw-agent.sqlite"
	refs := []brainsurgeon.SessionRef{
		{Backend: brainsurgeon.BackendSQLite, Agent: "main", ID: "1d9efd24-3d45-430b-a703-e713c1679ce1", Key: "agent:main:main", Path: db},
		{Backend: brainsurgeon.BackendSQLite, Agent: "main", ID: "2e0a0b35-0000-4000-8000-000000000002", Key: "agent:main:telegram:direct:42", Path: db},
		{Backend: brainsurgeon.BackendSQLite, Agent: "ops", ID: "3f1b1c46-0000-4000-8000-000000000003", Path: "/state/agents/ops/agent/openclaw-agent.sqlite"},
	}
	for _, tt := range []struct{ name, in, want string }{
		{"AgentSlashID", "main/1d9efd24-3d45-430b-a703-e713c1679ce1", "main/1d9efd24-3d45-430b-a703-e713c1679ce1"},
		{"IDPrefix", "2e0a0b35", "main/2e0a0b35-0000-4000-8000-000000000002"},
		{"Key", "agent:main:main", "main/1d9efd24-3d45-430b-a703-e713c1679ce1"},
		{"KeySuffix", "direct:42", "main/2e0a0b35-0000-4000-8000-000000000002"},
		{"PathOfOneSession", "/state/agents/ops/agent/openclaw-agent.sqlite", "ops/3f1b1c46-0000-4000-8000-000000000003"},
		{"ExtraKey", "agent:main:cron:7", "main/2e0a0b35-0000-4000-8000-000000000002"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keys := func(ref brainsurgeon.SessionRef) []string {
				if ref.ID == refs[1].ID {
					return []string{ref.Key, "agent:main:cron:7"}
				}
				return nil // the ref's Key alone
			}
			ref, err := session.ResolveRef(refs, tt.in, keys)
			dreq.NoError(t, err)
			dreq.Equal(t, tt.want, ref.String())
		})
	}
	_, err := session.ResolveRef(refs, db, nil)
	dreq.ErrorIs(t, err, brainsurgeon.ErrAmbiguous)
	dreq.Contains(t, err.Error(), "matches 2 sessions")
	_, err = session.ResolveRef(refs, "openclaw-agent", nil)
	dreq.ErrorIs(t, err, brainsurgeon.ErrNotFound)
}
