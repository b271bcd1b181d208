// Package runnerproto holds the wire shapes shared by the fake GitHub and the
// fake runner: the files of a JIT configuration, as the real runner writes
// them into its root, and the small job protocol the fake runner speaks with
// the fake's actions service (the real runner speaks a richer one; the fake
// keeps only what the manager can observe: online, busy, started, done).
package runnerproto

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The files a JIT configuration holds, by their name in the runner root.
const (
	FileRunner      = ".runner"
	FileCredentials = ".credentials"
	FileRSAParams   = ".credentials_rsaparams"
)

// RunnerVersion is the version the fake runner reports; marking it deprecated
// on the fake makes the fake runner exit 7.
const RunnerVersion = "2.330.0"

// VersionFile, in a fake runner's bin/, names the version it reports
// instead of RunnerVersion.
const VersionFile = "fake-runner-version"

// EnvJITConfig is where the runner reads its JIT configuration.
const EnvJITConfig = "ACTIONS_RUNNER_INPUT_JITCONFIG"

// EnvReturnDeprecated asks the runner to exit 7 (not 1) when its version is
// deprecated.
const EnvReturnDeprecated = "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"

// RunnerFile is the ".runner" file: who the runner is and where its server is.
type RunnerFile struct {
	AgentID     int64  `json:"agentId"`
	AgentName   string `json:"agentName"`
	PoolID      int64  `json:"poolId"`
	PoolName    string `json:"poolName"`
	Ephemeral   bool   `json:"ephemeral"`
	DisableUpd  bool   `json:"disableUpdate"`
	ServerURL   string `json:"serverUrl"`
	GitHubURL   string `json:"gitHubUrl"`
	WorkFolder  string `json:"workFolder"`
	UseV2Flow   bool   `json:"useV2Flow"`
	ServerURLV2 string `json:"serverUrlV2,omitempty"`
	// FakeBootDelayMS is the fake's own: how long the fake runner takes
	// to start before it connects, as the real listener does (the real
	// .runner file has no such field).
	FakeBootDelayMS int64 `json:"fakeBootDelayMs,omitempty"`
}

// Credentials is the ".credentials" file: an OAuth client whose assertions
// are signed with the key in ".credentials_rsaparams".
type Credentials struct {
	Scheme string          `json:"scheme"`
	Data   CredentialsData `json:"data"`
}

// CredentialsData is the data of Credentials.
type CredentialsData struct {
	ClientID                string `json:"clientId"`
	AuthorizationURL        string `json:"authorizationUrl"`
	RequireFipsCryptography string `json:"requireFipsCryptography"`
}

// RSAParams is the ".credentials_rsaparams" file: an RSA private key as .NET
// RSAParameters, each field base64 of a big-endian integer.
type RSAParams struct {
	D        string `json:"d"`
	DP       string `json:"dp"`
	DQ       string `json:"dq"`
	Exponent string `json:"exponent"`
	InverseQ string `json:"inverseQ"`
	Modulus  string `json:"modulus"`
	P        string `json:"p"`
	Q        string `json:"q"`
}

// EncodeJITConfig returns the encoded form of a JIT configuration: base64 of
// a JSON object mapping each file name to base64 of its content.
func EncodeJITConfig(files map[string][]byte) string {
	m := make(map[string]string, len(files))
	for name, b := range files {
		m[name] = base64.StdEncoding.EncodeToString(b)
	}
	b, _ := json.Marshal(m) // a map of strings always marshals
	return base64.StdEncoding.EncodeToString(b)
}

// ErrBadJITConfig: the configuration cannot be decoded. Its text never
// holds the configuration.
var ErrBadJITConfig = errors.New("the JIT configuration is not valid")

// DecodeJITConfig decodes an encoded JIT configuration into its files; it
// requires the three files a runner needs.
func DecodeJITConfig(encoded string) (map[string][]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64", ErrBadJITConfig)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: not a JSON map of files", ErrBadJITConfig)
	}
	files := make(map[string][]byte, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		b, err := base64.StdEncoding.DecodeString(m[name])
		if err != nil {
			return nil, fmt.Errorf("%w: file %s is not base64", ErrBadJITConfig, name)
		}
		files[name] = b
	}
	for _, need := range []string{FileRunner, FileCredentials, FileRSAParams} {
		if _, ok := files[need]; !ok {
			return nil, fmt.Errorf("%w: file %s is missing", ErrBadJITConfig, need)
		}
	}
	return files, nil
}

// TokenResponse answers the OAuth client-assertion exchange.
type TokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
}

// Agent describes the runner when it opens a session.
type Agent struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	Version       string `json:"version"`
	OSDescription string `json:"osDescription"`
}

// SessionRequest opens a runner session (the runner goes online).
type SessionRequest struct {
	OwnerName string `json:"ownerName"`
	Agent     Agent  `json:"agent"`
}

// Session is an open runner session.
type Session struct {
	SessionID string `json:"sessionId"`
	OwnerName string `json:"ownerName"`
	Agent     Agent  `json:"agent"`
}

// Message is what a runner's long poll returns: a job request.
type Message struct {
	MessageID   int64  `json:"messageId"`
	MessageType string `json:"messageType"`
	// Body is JSON of a JobRequest, as a string (like the real service).
	Body string `json:"body"`
}

// MessageTypeJobRequest is the type of a Message carrying a JobRequest.
const MessageTypeJobRequest = "PipelineAgentJobRequest"

// JobRequest tells a runner which job to run and what it costs.
type JobRequest struct {
	RequestID   int64  `json:"requestId"`
	JobID       int64  `json:"jobId"`
	RunID       int64  `json:"runId"`
	Repository  string `json:"repository"`
	Workflow    string `json:"workflow"`
	DisplayName string `json:"displayName"`
	// JobKey is the job's id in its workflow (GITHUB_JOB).
	JobKey        string `json:"jobKey,omitempty"`
	DurationMS    int64  `json:"durationMs"`
	MemoryBytes   uint64 `json:"memoryBytes"`
	CPUMillicores int    `json:"cpuMillicores"`
	// Script is a shell script the runner runs as the job's step.
	Script string `json:"script,omitempty"`
	// Result is what the job concludes with ("succeeded", "failed").
	Result string `json:"result"`
	// RenewMS is how often the runner renews its lock on the job.
	RenewMS int64 `json:"renewMs"`
	// HangAfter makes the runner hang once it reported the job's end: it
	// neither closes its session nor exits until it is stopped.
	HangAfter bool `json:"hangAfter,omitempty"`
	// CI, when set, makes the job's first step a CI setup: a checkout, a
	// toolchain into the tool cache and dependencies into npm's cache.
	CI *CISetup `json:"ci,omitempty"`
	// Probe, when set, makes the job try to read these paths or globs
	// ($NAME and ${NAME} expanded from the job's environment) and report
	// what it could read.
	Probe []string `json:"probe,omitempty"`
}

// CISetup is what a CI-shaped job fetches from BaseURL (the fake GitHub's
// content routes, over loopback): the repository's tree at Commit, a
// toolchain and the dependencies a lock file would name.
type CISetup struct {
	BaseURL string `json:"baseUrl"`
	Commit  string `json:"commit"`
	// TreeURL answers the commit's tree: JSON of []CIObject.
	TreeURL  string     `json:"treeUrl"`
	Tool     CITool     `json:"tool"`
	Packages []CIObject `json:"packages"`
}

// CIObject is a file (or package) named by the id of its content, as a
// git object is: the same id is the same bytes. BlobURL/<id> serves it.
type CIObject struct {
	Path string `json:"path"`
	ID   string `json:"id"`
	Size int64  `json:"size"`
}

// CITool is a toolchain the job installs into the tool cache, as
// actions/setup-* do: a tar served at URL, kept under
// <tool cache>/<Name>/<Version>/<Arch>.
type CITool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
	URL     string `json:"url"`
}

// SetupReport is what a CI-shaped job's setup took: its time, and per
// phase its time, the bytes it fetched over HTTP and whether it found
// its folder warm (nothing left to fetch).
type SetupReport struct {
	DurationMS int64       `json:"durationMs"`
	Checkout   PhaseReport `json:"checkout"`
	Tool       PhaseReport `json:"tool"`
	Deps       PhaseReport `json:"deps"`
	// Error is why the setup failed ("" when it did not).
	Error string `json:"error,omitempty"`
}

// Fetched is the bytes the setup fetched over HTTP, all phases.
func (r SetupReport) Fetched() int64 { return r.Checkout.Fetched + r.Tool.Fetched + r.Deps.Fetched }

// Warm reports whether every phase found its folder warm.
func (r SetupReport) Warm() bool { return r.Checkout.Warm && r.Tool.Warm && r.Deps.Warm }

// PhaseReport is one phase of a setup.
type PhaseReport struct {
	DurationMS int64 `json:"durationMs"`
	// Fetched is the bytes fetched over HTTP (manifests included).
	Fetched int64 `json:"fetched"`
	// Objects is how many files (objects, packages, tool archives) it
	// fetched, of Total it needed.
	Objects int `json:"objects"`
	Total   int `json:"total"`
	// Warm: it fetched no content (a checkout still asks for the tree).
	Warm bool `json:"warm"`
	// Dir is the folder it used (workspace, tool cache, npm cache).
	Dir string `json:"dir"`
}

// ProbeReport is what a probe job could read.
type ProbeReport struct {
	// Bytes and Files readable over all patterns.
	Bytes int64         `json:"bytes"`
	Files int           `json:"files"`
	Paths []ProbeResult `json:"paths"`
}

// ProbeResult is one pattern's reading.
type ProbeResult struct {
	// Pattern as given, and Expanded with the job's variables.
	Pattern  string `json:"pattern"`
	Expanded string `json:"expanded"`
	// Matches are the paths the pattern matched.
	Matches int   `json:"matches"`
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	// Denied counts what could not be opened or read.
	Denied int `json:"denied"`
}

// Finish reports a job's end.
type Finish struct {
	Result string `json:"result"`
	// Log is the job's log: each step's output, the job hooks' with it
	// (the real runner uploads it apart, as the job's log).
	Log string `json:"log,omitempty"`
	// StepSummary is what the steps wrote to GITHUB_STEP_SUMMARY (the
	// real runner attaches it to the job: FileCommandManager.cs:275).
	StepSummary string `json:"stepSummary,omitempty"`
	// Setup is a CI-shaped job's setup; Probe a probe job's reading.
	Setup *SetupReport `json:"setup,omitempty"`
	Probe *ProbeReport `json:"probe,omitempty"`
}

// Exception is an error body of the actions service (the real service's
// shape); TypeName says what went wrong.
type Exception struct {
	TypeName string `json:"typeName"`
	Message  string `json:"message"`
}

// The exception type names the fake runner acts on.
const (
	ExAgentNotFound      = "GitHub.DistributedTask.WebApi.AgentNotFoundException"
	ExSessionConflict    = "GitHub.DistributedTask.WebApi.TaskAgentSessionConflictException"
	ExVersionDeprecated  = "GitHub.DistributedTask.WebApi.RunnerVersionDeprecatedException"
	ExJobNotFound        = "GitHub.DistributedTask.WebApi.TaskOrchestrationJobNotFoundException"
	ExInvalidCredentials = "GitHub.Services.OAuth.InvalidClientException"
)
