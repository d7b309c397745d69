package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// visit calls f for every command below root with its path ("log dump").
func visit(cmds []*cli.Command, parent string, f func(path string, c *cli.Command)) {
	for _, c := range cmds {
		path := strings.TrimSpace(parent + " " + c.Name)
		f(path, c)
		visit(c.Commands, path, f)
	}
}

func flagUsage(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.GetUsage()
	}
	return ""
}

func flagVisible(f cli.Flag) bool {
	v, ok := f.(cli.VisibleFlag)
	return !ok || v.IsVisible()
}

// The grammar: the same thing has the same name, alias and type in every command.
func TestCLIGrammarFlags(t *testing.T) {
	// required aliases of the shared names
	wantAliases := map[string][]string{"out": {"o"}, "dataset": {"d"}, "quiet": {"q"}}
	// old spellings that never shipped in a release: refused, not kept
	oldSpellings := map[string]bool{"force": true, "run": true}
	// names whose type differs by command on purpose: one concurrency (replay) or a list
	// (sweep: "1,2,4" parsed with its own messages; demo: a list with a default)
	// (replay and sweep: --endpoint repeatable, one per replica; swebench: one URL)
	typeExceptions := map[string]bool{"concurrency": true, "endpoint": true}

	aliasOwner := map[string]string{} // alias -> long name, across commands
	aliasWhere := map[string]string{}
	flagType := map[string]string{} // long name -> Go type
	typeWhere := map[string]string{}
	seenNames := map[string]bool{}
	commands := 0
	visit(app().Commands, "", func(path string, c *cli.Command) {
		commands++
		names := map[string]bool{}
		for _, f := range c.Flags {
			all := f.Names()
			name, aliases := all[0], all[1:]
			if names[name] {
				t.Errorf("%s: flag --%s defined twice", path, name)
			}
			names[name] = true
			seenNames[name] = true
			if !flagVisible(f) {
				t.Errorf("%s: --%s is hidden (every flag is in --help)", path, name)
			}
			if oldSpellings[name] {
				t.Errorf("%s: --%s is an old spelling (give --overwrite, and runs as arguments)", path, name)
			}
			if strings.TrimSpace(flagUsage(f)) == "" {
				t.Errorf("%s: --%s has no usage text", path, name)
			}
			if want, ok := wantAliases[name]; ok && !slices.Equal(aliases, want) {
				t.Errorf("%s: --%s aliases = %v, want %v", path, name, aliases, want)
			}
			for _, a := range aliases {
				if owner, ok := aliasOwner[a]; ok && owner != name {
					t.Errorf("%s: -%s means --%s here but --%s in %s", path, a, name, owner, aliasWhere[a])
				}
				aliasOwner[a], aliasWhere[a] = name, path
			}
			typ := fmt.Sprintf("%T", f)
			if prev, ok := flagType[name]; ok && prev != typ && !typeExceptions[name] {
				t.Errorf("%s: --%s is %s here but %s in %s", path, name, typ, prev, typeWhere[name])
			}
			flagType[name], typeWhere[name] = typ, path
			// one meaning per name: --profile is the sampling profile wherever it is
			if name == "profile" && !strings.Contains(flagUsage(f), "sampling profile") {
				t.Errorf("%s: --profile is not the sampling profile here: %q", path, flagUsage(f))
			}
			// one default for --ruleset across commands
			if sf, ok := f.(*cli.StringFlag); ok && name == "ruleset" && sf.Value != "auto" {
				t.Errorf("%s: --ruleset defaults to %q, want auto as in every command", path, sf.Value)
			}
		}
	})
	if commands < 17 {
		t.Fatalf("walked %d commands, want every subcommand (at least 17)", commands)
	}
	for _, name := range []string{"out", "dataset", "overwrite", "tokenizer", "ruleset"} {
		if !seenNames[name] {
			t.Errorf("no command has --%s: the test no longer checks the shared names", name)
		}
	}
}

// Every command's help: the usage line names the command, no "(default: ...)" is
// printed twice, and the run folders are positional where a command reads runs.
func TestCLIGrammarHelp(t *testing.T) {
	readsRuns := map[string]string{ // command -> the positional argument its usage names
		"score": "RUNDIR", "report": "RUNDIR", "log dump": "RUNDIR", "log export": "RUNDIR", "rescore": "ARCHIVE",
	}
	found := map[string]bool{}
	visit(app().Commands, "", func(path string, c *cli.Command) {
		out, err := runApp(t, append(strings.Fields(path), "--help")...)
		if err != nil {
			t.Errorf("%s --help: %v", path, err)
			return
		}
		if !strings.Contains(out, "agentrace "+path) {
			t.Errorf("%s --help does not show the command's usage line:\n%s", path, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Count(line, "(default:") > 1 {
				t.Errorf("%s --help: doubled default: %q", path, strings.TrimSpace(line))
			}
		}
		if arg, ok := readsRuns[path]; ok {
			found[path] = true
			usage := c.UsageText
			if !strings.Contains(usage, arg) {
				t.Errorf("%s: usage %q does not name the positional %s", path, usage, arg)
			}
			if i := strings.Index(usage, arg); strings.Contains(usage[:i], "--run ") {
				t.Errorf("%s: usage %q gives the run with a flag", path, usage)
			}
		}
		// urfave/cli takes a flag usage's first `backticked` text as the value's
		// placeholder: a command line there would print as the flag's argument.
		for _, f := range c.Flags {
			if u := flagUsage(f); strings.Count(u, "`") >= 2 {
				if ph := strings.Split(u, "`")[1]; strings.Contains(ph, " ") {
					t.Errorf("%s: --%s's placeholder is %q, not one word", path, f.Names()[0], ph)
				}
			}
		}
		if !flagVisibleByName(c, "out") && strings.Contains(c.UsageText, "--out") {
			t.Errorf("%s: usage %q names --out, which it does not have", path, c.UsageText)
		}
	})
	for path := range readsRuns {
		if !found[path] && path != "log export" {
			t.Errorf("command %q not found", path)
		}
	}
}

func flagVisibleByName(c *cli.Command, name string) bool {
	for _, f := range c.Flags {
		if f.Names()[0] == name && flagVisible(f) {
			return true
		}
	}
	return false
}

// Every command reports a usage error in one format: "CMD: ERR (see agentrace CMD --help)".
func TestCLIGrammarUsageErrors(t *testing.T) {
	check := func(args []string, want string) {
		t.Helper()
		out, err := runApp(t, args...)
		if err == nil {
			t.Errorf("%v: no error", args)
			return
		}
		if err.Error() != want {
			t.Errorf("%v: error %q, want %q", args, err, want)
		}
		if strings.Contains(out, "Incorrect Usage") {
			t.Errorf("%v printed urfave's own usage error:\n%s", args, out)
		}
	}
	visit(app().Commands, "", func(path string, c *cli.Command) {
		args := append(strings.Fields(path), "--no-such-flag")
		check(args, fmt.Sprintf("%s: flag provided but not defined: -no-such-flag (see agentrace %s --help)", path, path))
	})
	check([]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag (see agentrace --help)")
	check([]string{"no-such-command"}, `unknown command "no-such-command" (see agentrace --help)`)
	check([]string{"log", "no-such-command"}, `log: unknown command "no-such-command" (see agentrace log --help)`)
	check([]string{"sweep", "--concurency", "4"}, "sweep: flag provided but not defined: -concurency; did you mean --concurrency? (see agentrace sweep --help)")
	check([]string{"swep"}, `unknown command "swep"; did you mean "sweep"? (see agentrace --help)`)
	check([]string{"log", "dmup"}, `log: unknown command "dmup"; did you mean "dump"? (see agentrace log --help)`)
	check([]string{"report", "--slo-tfft-ms", "5"}, "report: flag provided but not defined: -slo-tfft-ms; did you mean --slo-ttft-ms? (see agentrace report --help)")
	// Flags that shipped under a name now meaning something else: refused, naming the new one.
	for _, cmd := range []string{"sim", "simulate"} {
		check([]string{cmd, "--profile", "x"}, cmd+": flag provided but not defined: -profile; the simulated hardware is --hardware now (--profile names a sampling profile) (see agentrace "+cmd+" --help)")
	}
	check([]string{"demo", "--sim-profile", "x"}, "demo: flag provided but not defined: -sim-profile; the simulated hardware is --hardware now (see agentrace demo --help)")
	check([]string{"synth", "--profile=x"}, "synth: flag provided but not defined: -profile; the traces' shape is --shape now (--profile names a sampling profile) (see agentrace synth --help)")
	check([]string{"score"}, "score: no run directory given (see agentrace score --help)")
	check([]string{"log", "dump"}, "log dump: want exactly one RUNDIR, got 0 arguments (see agentrace log dump --help)")
	check([]string{"synth", "-o", "x.jsonl", "extra"}, `synth: unexpected argument "extra" (use --out FILE) (see agentrace synth --help)`)
}

// The spellings no release shipped (--force, score --run) are usage errors.
func TestCLIGrammarOldSpellingsRefused(t *testing.T) {
	for _, argv := range [][]string{{"score", "--run", t.TempDir()}, {"score", "--force", t.TempDir()}, {"ingest", "--force", "-o", t.TempDir(), t.TempDir()}} {
		_, err := runApp(t, argv...)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "flag provided but not defined: -"+strings.TrimPrefix(argv[1], "--")) {
			t.Errorf("%v: err %v, want a usage error naming the flag", argv, err)
		}
	}
}
