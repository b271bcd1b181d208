package logredact_test

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
)

// The shapes of credential GitHub and its Actions service hand out, made at
// random lengths. Each maker returns the text to plant and the parts of it
// that are secret (a token's prefix, a JWT's fixed header and a scheme's
// name are not).

const (
	base62    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	base64URL = base62 + "-_"
)

func randString(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwtHeader is an RS256 JWT header: public, the same in every token.
var jwtHeader = b64url([]byte(`{"alg":"RS256","typ":"JWT"}`))

// randJWT is a JWT with a payload of claims and a signature of random
// sizes; secret is its payload and signature.
func randJWT(r *rand.Rand) (tok, secret string) {
	claims, _ := json.Marshal(map[string]any{
		"iss": "github-internal", "exp": 1777300000 + r.IntN(1e6),
		"installation": r.Int64(), "app": r.IntN(1e7), "jti": randString(r, base62, 8+r.IntN(200)),
	})
	secret = b64url(claims) + "." + b64url([]byte(randString(r, base62, 32+r.IntN(256))))
	return jwtHeader + "." + secret, secret
}

// classicToken is ghp_, gho_, ghu_, ghs_ or ghr_ and a base62 body of any
// length from 30 on (the old tokens had 36).
func classicToken(r *rand.Rand) (string, string) {
	body := randString(r, base62, 30+r.IntN(500))
	return "gh" + string("pousr"[r.IntN(5)]) + "_" + body, body
}

// installationToken is the 2026 form: ghs_APPID_JWT (~520 characters).
func installationToken(r *rand.Rand) (string, string) {
	jwt, secret := randJWT(r)
	return "ghs_" + strconv.Itoa(1+r.IntN(1e7)) + "_" + jwt, secret
}

// installationTokenNoAppID is ghs_ followed by a JWT alone.
func installationTokenNoAppID(r *rand.Rand) (string, string) {
	jwt, secret := randJWT(r)
	return "ghs_" + jwt, secret
}

func fineGrainedPAT(r *rand.Rand) (string, string) {
	body := randString(r, base62, 22) + "_" + randString(r, base62, 20+r.IntN(200))
	return "github_pat_" + body, body
}

// jitConfig is an encoded JIT runner configuration: base64 of a JSON object
// of the runner's files, each base64.
func jitConfig(r *rand.Rand) (string, string) {
	files := map[string]string{}
	for _, name := range []string{".runner", ".credentials", ".credentials_rsaparams"} {
		files[name] = base64.StdEncoding.EncodeToString([]byte(randString(r, base62, 20+r.IntN(300))))
	}
	b, _ := json.Marshal(files)
	blob := base64.StdEncoding.EncodeToString(b)
	return blob, blob
}

func pemKey(r *rand.Rand) (string, string) {
	var lines []string
	for range 2 + r.IntN(20) {
		lines = append(lines, base64.StdEncoding.EncodeToString([]byte(randString(r, base62, 48))))
	}
	body := strings.Join(lines, "\n")
	return "-----BEGIN RSA PRIVATE KEY-----\n" + body + "\n-----END RSA PRIVATE KEY-----", body
}

// opaque is an opaque header value with at least one digit.
func opaque(r *rand.Rand, alphabet string) string {
	b := []byte(randString(r, alphabet, 8+r.IntN(200)))
	b[r.IntN(len(b))] = "0123456789"[r.IntN(10)]
	return string(b)
}

// A plant is one way a credential reaches a log line.
type plant struct {
	name string
	make func(r *rand.Rand) (text string, secrets []string)
}

// token wraps a token maker as a plant of the token alone.
func token(name string, mk func(*rand.Rand) (string, string)) plant {
	return plant{name, func(r *rand.Rand) (string, []string) {
		tok, secret := mk(r)
		return tok, []string{secret}
	}}
}

// header plants an Authorization header of scheme with an opaque value.
func header(scheme string) plant {
	return plant{"Authorization " + scheme, func(r *rand.Rand) (string, []string) {
		v := opaque(r, base64URL+".~+/=")
		return "Authorization: " + scheme + " " + v, []string{v}
	}}
}

var plants = []plant{
	token("classic", classicToken),
	token("fine-grained PAT", fineGrainedPAT),
	token("installation 2026", installationToken),
	token("installation 2026 without app id", installationTokenNoAppID),
	token("JWT", randJWT),
	token("JIT config", jitConfig),
	token("PEM key", pemKey),
	header("Bearer"),
	header("RemoteAuth"),
	header("token"),
	{"git extraheader Basic", func(r *rand.Rand) (string, []string) {
		tok, secret := installationToken(r)
		v := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tok))
		return "AUTHORIZATION: basic " + v, []string{v, secret}
	}},
	{"userinfo x-access-token", func(r *rand.Rand) (string, []string) {
		tok, secret := installationToken(r)
		return "https://x-access-token:" + tok + "@github.com/octo/chaos.git", []string{secret}
	}},
	{"userinfo password", func(r *rand.Rand) (string, []string) {
		pw := opaque(r, base62+"-._~")
		return "https://x-access-token:" + pw + "@ghe.example.com/octo/chaos", []string{pw}
	}},
	{"userinfo user", func(r *rand.Rand) (string, []string) {
		tok, secret := classicToken(r)
		return "https://" + tok + "@github.com/octo/chaos", []string{secret}
	}},
	{"JSON value", func(r *rand.Rand) (string, []string) {
		tok, secret := installationToken(r)
		return `{"token":"` + tok + `","expires_at":"2026-12-07T19:00:00Z"}`, []string{secret}
	}},
}
