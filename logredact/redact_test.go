package logredact_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/logredact"
)

// Credentials of each kind, in the shapes GitHub hands them out.
var (
	pat         = "ghp_" + strings.Repeat("aB3dE6", 6)
	oauth       = "gho_16C7e42F292c6912E7710c838347Ae178B4a"
	installTok  = "ghs_" + strings.Repeat("0f", 18)
	userTok     = "ghu_16C7e42F292c6912E7710c838347Ae178B4a"
	refreshTok  = "ghr_1B4a2e77838347a7E420ce178F2E7c6912E169246c34E1ccbF66C46812d16D5B1A9Dc86A1498"
	fineGrained = "github_pat_11ABCDEFG0123456789abc_" + strings.Repeat("xY9", 20)
	jwt         = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiIxMjM0NSIsImV4cCI6MTcwMDAwMDAwMH0.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU_-w"
	jitBlob     = base64.StdEncoding.EncodeToString([]byte(`{".credentials":"eyJTY2hlbWUiOiJPQXV0aCJ9","` +
		`.runner":"eyJBZ2VudElkIjoxMjMsIkFnZW50TmFtZSI6InJtLWNoYW9zLTAxIn0=",".credentials_rsaparams":"eyJkIjoiQUFBQSJ9"}`))
	// The installation tokens of 2026: ghs_APPID_JWT, and ghs_ + a JWT.
	installTok2026 = "ghs_12_" + jwt
	installTokJWT  = "ghs_" + jwt
	pem            = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----"
)

func TestString(t *testing.T) {
	R := logredact.Marker
	tests := []stringCase{
		{"PAT", "token=" + pat + " rest", "token=" + R + " rest"},
		{"OAuth", "got " + oauth, "got " + R},
		{"Installation", `{"token":"` + installTok + `"}`, `{"token":"` + R + `"}`},
		{"User", userTok, R},
		{"Refresh", "(" + refreshTok + ")", "(" + R + ")"},
		{"FineGrained", "pat " + fineGrained + ".", "pat " + R + "."},
		{"JWT", "jwt " + jwt + " end", "jwt " + R + " end"},
		{"JWTInURLQuery", "https://x/y?t=" + jwt, "https://x/y?t=" + R},
		{"JITBlob", `"encoded_jit_config":"` + jitBlob + `"`, `"encoded_jit_config":"` + R + `"`},
		{"Bearer", "Authorization: Bearer " + "opaque-value-123", "Authorization: " + R},
		{"BearerLower", "authorization: bearer abcdefgh12", "authorization: " + R},
		{"BearerJWT", "Bearer " + jwt, R},
		{"RemoteAuth", "Authorization: RemoteAuth AABF3JGZDX3P5PMEXLND6TS6FCWO6", "Authorization: " + R},
		{"TokenScheme", "Authorization: token 0123456789abcdef0123456789abcdef", "Authorization: " + R},
		{"PEM", "key:\n" + pem + "\nafter", "key:\n" + R + "\nafter"},
		{"PEMUnterminated", "key: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg", "key: " + R},
		{"Two", pat + " and " + installTok, R + " and " + R},
		{"Nothing", "", ""},

		// Near misses: these stay as they are.
		{"HexID", "commit 3f786850e387550fdab836ed7e6dc881de23001b", ""},
		{"UUID", "session 5b0d5c5e-8a8f-4e4e-9d4d-2f0c1f1f6a6a", ""},
		{"SHA256", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ""},
		{"SHA256Base64", "digest 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", ""},
		{"RunnerName", "runner rm-chaos-01JH5Z8Q4V6M2K3N7P9R0S1T2U started", ""},
		{"URL", "POST https://api.github.com/repos/octo/chaos/actions/runners/registration-token: 201", ""},
		{"ActionsURL", "https://pipelines.actions.githubusercontent.com/_apis/oauth2/token", ""},
		{"TokenWords", "the admin token expired; a new token for octo/chaos", ""},
		{"TokenDate", "token 2026-01-01T00:00:00Z", ""},
		{"TokenEnv", "token_env=CHAOS_GH_TOKEN --token-env GH_TOKEN", ""},
		{"BearerWord", "the Bearer scheme", ""},
		{"BearerShort", "Bearer abc", ""},
		{"RemoteAuthAlone", "RemoteAuth scheme", ""},
		{"ShortPrefix", "ghs_abc and ghp_ alone", ""},
		{"InsideWord", "highs_0123456789abcdef sighp_0123456789abcdef", ""},
		{"ShortFinePAT", "github_pat_short", ""},
		{"Eyes", "eyes eyJ eyJhbGci", ""},
		{"EyJInsideRun", "x" + jwt[:40], ""},
		{"JWTTwoSegments", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0", ""},
		{"ShortBase64JSON", base64.StdEncoding.EncodeToString([]byte(`{"a":1}`)), ""},
		{"PublicKey", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----", ""},
		{"Certificate", "-----BEGIN CERTIFICATE-----", ""},
		{"Dashes", "----- chaos: SIGTERM -----", ""},
	}
	runCases(t, tests)
}

// stringCase is a text and what String makes of it ("": the text as it is).
type stringCase struct{ name, in, want string }

func runCases(t *testing.T, tests []stringCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			got := logredact.String(tt.in)
			assert.Equal(t, want, got)
			assert.Equal(t, want != tt.in, logredact.Contains(tt.in))
		})
	}
}

// TestStringInstallationTokens2026 and the other forms and places added
// with them: userinfo, Basic, a glued Authorization, glued credentials.
func TestStringInstallationTokens2026(t *testing.T) {
	R := logredact.Marker
	runCases(t, []stringCase{
		{"Installation2026", installTok2026, R},
		{"Installation2026NoAppID", "got " + installTokJWT + ".", "got " + R + "."},
		{"Installation2026JSON", `{"token":"` + installTok2026 + `","expires_at":"2026-12-07T19:00:00Z"}`, `{"token":"` + R + `","expires_at":"2026-12-07T19:00:00Z"}`},
		{"Installation2026Userinfo", "clone https://x-access-token:" + installTok2026 + "@github.com/octo/chaos.git: exit 128", "clone https://x-access-token:" + R + "@github.com/octo/chaos.git: exit 128"},
		{"Installation2026UserOnly", "https://" + installTok2026 + "@github.com/octo/chaos", "https://" + R + "@github.com/octo/chaos"},
		{"Installation2026TokenScheme", "Authorization: token " + installTok2026, "Authorization: " + R},
		{"Installation2026Glued", "x" + installTok2026 + "y", "x" + R},
		{"Installation2026Long", installTok2026 + strings.Repeat("A", 4000), R},
		{"UserinfoOpaquePassword", "https://x-access-token:s3cr3t-v4lue@ghe.example.com/o/r", "https://x-access-token:" + R + "@ghe.example.com/o/r"},
		{"UserinfoUserAndPassword", "https://" + pat + ":x-oauth-basic@github.com/o/r", "https://" + R + "@github.com/o/r"},
		{"GitExtraHeader", "http.extraheader=AUTHORIZATION: basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+installTok2026)), "http.extraheader=AUTHORIZATION: " + R},
		{"AuthorizationShortToken", `"Authorization":"token abc"`, `"Authorization":"` + R + `"`},
		{"AuthorizationHeaderMap", "map[Authorization:[Bearer xyz]]", "map[Authorization:[" + R + "]]"},
		{"JWTGlued", "id=abc" + jwt, "id=abc" + R},
		{"JWTMoreSegments", "eyJa.eyJb." + jwt, R},
		{"JITBlobGlued", "x" + jitBlob + "_tail", "x" + R},
		{"PEMGlued", "key" + pem, "key" + R},
		{"BearerPEM", "Bearer " + pem, R},
		{"AuthorizationBehindToken", "ghp_00Authorization: token abc123 end", R + " end"},

		// Near misses: these stay as they are.
		{"Installation2026Short", "ghs_12_eyJ", ""},
		{"UserinfoUserOnly", "git clone https://git@github.com/octo/chaos", ""},
		{"HostPort", "GET http://localhost:8080/_apis/x@y", ""},
		{"BasicWords", "basic usage, Basic configuration of the runner", ""},
		{"AuthorizationWords", "authorization: denied; the Authorization header", ""},
		{"InsideWordLong", "sighs_are_heard", ""},
		{"JWTGluedNoAlg", "x" + "eyJzdWIiOiIxIn0.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", ""},
	})
}

func TestStringNoAllocationWhenClean(t *testing.T) {
	s := "POST https://api.github.com/repos/octo/chaos/actions/runners/generate-jitconfig 201 runner=rm-chaos-01JH5Z8Q4V6M2K3N7P9R0S1T2U took=12ms"
	allocs := testing.AllocsPerRun(100, func() { _ = logredact.String(s) })
	assert.Zero(t, allocs)
}

func BenchmarkString(b *testing.B) {
	for _, bm := range []struct{ name, s string }{
		{"Clean", "POST https://api.github.com/repos/octo/chaos/actions/runners/generate-jitconfig 201 runner=rm-chaos-01JH5Z8Q4V6M2K3N7P9R0S1T2U took=12ms"},
		{"Token", "POST https://api.github.com/repos/octo/chaos/actions/runners 401 Authorization: Bearer " + installTok},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.s)))
			for b.Loop() {
				_ = logredact.String(bm.s)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := logredact.NewWriter(&b)
	n, err := fmt.Fprintf(w, "runner-manager-tui: open: %s\n", "Bearer "+installTok)
	assert.NoError(t, err)
	assert.Equal(t, len("runner-manager-tui: open: Bearer "+installTok+"\n"), n, "the length given is the length taken")
	fmt.Fprintf(w, "clean line\n")
	assert.Equal(t, "runner-manager-tui: open: "+logredact.Marker+"\nclean line\n", b.String())
}

// positions are the places a credential stands in a line of text.
var positions = []struct{ name, pre, post string }{
	{"Alone", "", ""},
	{"Start", "", " rest of the line"},
	{"End", "the line ends with ", ""},
	{"Middle", "a ", " b"},
	{"Lines", "line 1\n", "\nline 3"},
	{"Sentence", "got ", "."},
	{"Parens", "(", ")"},
	{"Quoted", `"`, `"`},
	{"KeyValue", "token=", " next=1"},
	{"QueryValue", "https://example.com/x?access_token=", "&page=2"},
	{"GluedBefore", "x", ""},
}

// TestStringEveryPosition plants each kind of credential in each position:
// it is redacted there as it is alone, the text around it kept.
func TestStringEveryPosition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range plants {
		for range 3 { // three lengths of each
			text, secrets := p.make(r)
			alone := logredact.String(text)
			assert.Contains(t, alone, logredact.Marker, p.name)
			assertNoSecret(t, alone, "", secrets)
			for _, pos := range positions {
				t.Run(p.name+"/"+pos.name, func(t *testing.T) {
					in := pos.pre + text + pos.post
					got := logredact.String(in)
					assert.Equal(t, pos.pre+alone+pos.post, got)
					assert.True(t, logredact.Contains(in))
				})
			}
		}
	}
}

// TestStringLongRepeats: text made of one credential's start over and over
// takes time in proportion to its length, not its square.
func TestStringLongRepeats(t *testing.T) {
	for _, unit := range []string{"xghp_", "ghp_", "xeyJ", "xeyI", "-eyJ", "eyJa.", "Bearer ", "token a", "://a:", "-----BEGIN ", "-----BEGIN RSA PRIVATE KEY-----", "Authorization: ", "ghs_1_"} {
		s := strings.Repeat(unit, (200<<10)/len(unit))
		start := time.Now()
		_ = logredact.String(s)
		assert.Less(t, time.Since(start), 2*time.Second, "%q repeated", unit)
	}
}

// TestInstallationToken2026Shape: the tokens the tests plant are as long as
// GitHub's (~520 characters) and longer.
func TestInstallationToken2026Shape(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	longest := 0
	for range 50 {
		tok, _ := installationToken(r)
		assert.Equal(t, 2, strings.Count(tok, "."), tok)
		longest = max(longest, len(tok))
	}
	assert.Greater(t, longest, 520)
}

// assertNoSecret fails when out holds any 16 characters of a secret that
// the text around it (filler) does not hold itself.
func assertNoSecret(t testing.TB, out, filler string, secrets []string) {
	t.Helper()
	const window = 16
	for _, sec := range secrets {
		for k := 0; k+window <= len(sec); k++ {
			w := sec[k : k+window]
			if strings.Contains(out, w) && !strings.Contains(filler, w) {
				t.Fatalf("%q survives in %q", w, out)
			}
		}
	}
}

// FuzzRedactPlanted plants a credential of each kind, made at random
// lengths, at a random position of random text (inside a word too): none
// of it survives String.
func FuzzRedactPlanted(f *testing.F) {
	fillers := []string{
		"", "plain log line", "level=INFO msg=\"sent\" url=https://api.github.com/app/installations/1/access_tokens",
		`{"a":"b","c":[1,2]}`, "eyJa.eyJb.", "Bearer ", "token ", "https://u:", "ghp_ab", "-----BEGIN RSA PRIVATE KEY-----",
		"x", "abc+/=", "://a:b@", "authorization=", "\n\t\x00\xff",
	}
	for k := range plants {
		for i, fl := range fillers {
			f.Add(fl, uint16(i*7), uint8(k), uint64(k*len(fillers)+i))
		}
	}
	f.Fuzz(func(t *testing.T, filler string, pos uint16, kind uint8, seed uint64) {
		p := plants[int(kind)%len(plants)]
		text, secrets := p.make(rand.New(rand.NewPCG(seed, uint64(kind))))
		at := int(pos) % (len(filler) + 1)
		in := filler[:at] + text + filler[at:]
		out := logredact.String(in)
		assertNoSecret(t, out, filler, secrets)
		if logredact.Contains(out) {
			t.Fatalf("String(%q) = %q still holds a credential", in, out)
		}
	})
}

// FuzzString: what String returns holds no credential it would redact, and
// text without one comes back as it was.
func FuzzString(f *testing.F) {
	for _, s := range []string{pat, jwt, jitBlob, pem, "Bearer " + installTok, installTok2026, "https://a:" + installTokJWT + "@h", "token " + strings.Repeat("a1", 12), "plain text", "eyJ.eyJ.eyJ", "ghp_ghp_0123456789"} {
		f.Add(s)
		f.Add("x " + s + " y")
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := logredact.String(s)
		if logredact.Contains(got) {
			t.Fatalf("String(%q) = %q still holds a credential", s, got)
		}
		if !logredact.Contains(s) && got != s {
			t.Fatalf("String(%q) = %q changed text with no credential", s, got)
		}
	})
}
