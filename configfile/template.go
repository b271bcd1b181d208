package configfile

import (
	"strconv"
	"strings"
)

// TemplateData fills the file `init` writes.
type TemplateData struct {
	// GitHubURL is written uncommented when it is not the default.
	GitHubURL string
	// TokenEnv, TokenFile: the token source the user chose (TokenFile wins).
	TokenEnv  string
	TokenFile string
	// DataDir is written uncommented when given.
	DataDir string
}

// configFile is the file Template writes, its lines that depend on
// TemplateData in placeholders (@@URL@@ and the like), filled in one pass.
// Not a text/template: that was parsed at the start of every program
// linking this package (a daemon's too, which never writes the file), and
// a binary that executes a template keeps every exported method of its
// types, as text/template calls methods by name.
const configFile = `# runner-manager configuration.
# Reference: docs/configuration.md. Every key can be overridden by the
# environment variable named beside it, and some by a flag; precedence is
# flag > environment > this file > default.
# Secrets never go in this file: the token comes from an environment
# variable or from a file only its owner can read (chmod 600).

# Paths in this file may start with ~ and use $VAR or ${VAR} (an unset one
# is an error); a relative path is relative to this file's directory.

# Where the journal, installed runners and per-attempt directories live.
# ($RUNNER_MANAGER_DATA_DIR, --data-dir)
@@DATA_DIR@@

[log]
# text or json ($RUNNER_MANAGER_LOG_FORMAT, --log-format)
format = "text"
# debug, info, warn or error ($RUNNER_MANAGER_LOG_LEVEL, --log-level)
level = "info"

[github]
# The web URL: https://github.com, or your GitHub Enterprise Server.
@@URL@@
# The REST base; derived from url when left out (https://api.github.com, or
# https://HOST/api/v3 for a server).
# api_url = "https://ghes.example.com/api/v3"

# A token: from this environment variable...
@@TOKEN_ENV@@
# ...or from a file readable by its owner only (chmod 600).
@@TOKEN_FILE@@
# The token needs: on a repository, "Administration: read and write"
# (fine-grained) or the repo scope (classic); on an organization,
# "Self-hosted runners: read and write" or admin:org.

# Or a GitHub App (with the same permissions), instead of a token:
# app_id = 123456            # or client_id = "Iv23..."
# installation_id = 7890123
# private_key_file = "/etc/runner-manager/app.pem"   # chmod 600

[admission]
# Memory kept free for the host itself; runners are admitted within the rest.
memory_reserve = "2GiB"
# No runner starts while the data directory's disk has less free space.
disk_floor = "10GiB"
# Warm spares (runners listening beyond the jobs) kept on this host, all
# policies together; -1: none.
# max_spares = 8

[webhook]
# Classic mode only, when GitHub can reach this host: receive workflow_job
# webhooks here (their secret comes from the variable secret_env names).
# listen = "0.0.0.0:8080"
secret_env = "RUNNER_MANAGER_WEBHOOK_SECRET"
# Larger deliveries are refused unread (workflow_job payloads are a few KiB).
# max_body = "1MiB"

[daemon]
# Serve Prometheus metrics (off when empty). A port alone listens on
# loopback only. ($RUNNER_MANAGER_METRICS_ADDR, --metrics-addr)
# metrics_addr = ":9464"
# A runner alive this long after GitHub said its job completed is hung:
# it is stopped, its job counted done. ($RUNNER_MANAGER_HUNG_GRACE)
# hung_grace = "2m"

[runner]
# Install actions/runner's newest release when there is one (at start, every
# 6 hours, and at once when GitHub refuses the installed version), verified
# against its checksum and proven on one attempt before every policy
# launches it; a failed update leaves the installed runner serving.
# false: never (then install one with ` + "`runner-manager runner install`" + `).
# ($RUNNER_MANAGER_RUNNER_AUTO_UPDATE)
auto_update = true
# Every job's log (and its step summary) shows what it used: peak memory,
# average and busiest CPU, duration, the policy and host that ran it,
# through the runner's job hooks (a hook of your own is kept and run too).
# Native backend. false: no hooks are written. ($RUNNER_MANAGER_RUNNER_JOB_REPORT)
job_report = true

[store]
# Empty: the journal is <data_dir>/journal.db (SQLite); one host needs
# nothing else. Hosts sharing one fleet point at one PostgreSQL database:
# ($RUNNER_MANAGER_STORE, --store)
# url = "postgres://runner_manager@db.example:5432/runner_manager"
# Its password: from $RUNNER_MANAGER_STORE_PASSWORD, or a file readable by
# its owner only (chmod 600), never in this file.
# password_file = "/etc/runner-manager/store-password"
`

// Template returns the commented configuration file `init` writes. It loads
// without error.
func Template(d TemplateData) string {
	if d.TokenEnv == "" {
		d.TokenEnv = DefaultTokenEnv
	}
	dataDir := `# data_dir = "~/.local/state/runner-manager"`
	if d.DataDir != "" {
		dataDir = "data_dir = " + strconv.Quote(d.DataDir)
	}
	url := `url = "https://github.com"`
	if d.GitHubURL != "" {
		url = "url = " + strconv.Quote(d.GitHubURL)
	}
	tokenFile := `# token_file = "/etc/runner-manager/token"`
	if d.TokenFile != "" {
		tokenFile = "token_file = " + strconv.Quote(d.TokenFile)
	}
	// One pass: a value holding a placeholder's text is not read again.
	return strings.NewReplacer("@@DATA_DIR@@", dataDir, "@@URL@@", url,
		"@@TOKEN_ENV@@", "token_env = "+strconv.Quote(d.TokenEnv), "@@TOKEN_FILE@@", tokenFile).Replace(configFile)
}
