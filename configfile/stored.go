package configfile

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// storedRecord is the credentials' form in the OS secret store: a JSON
// object holding a token, or a GitHub App's ids and key.
type storedRecord struct {
	Token          string `json:"token,omitempty"`
	AppID          int64  `json:"app_id,omitempty"`
	ClientID       string `json:"client_id,omitempty"`
	InstallationID int64  `json:"installation_id,omitempty"`
	PrivateKey     string `json:"private_key,omitempty"`
}

// MarshalStored is c as the OS secret store keeps it. It refuses
// credentials that are not whole: a token with a space inside, an App
// without its installation or a key that is not one.
func (c Credentials) MarshalStored() ([]byte, error) {
	if c.PrivateKeyPEM == nil {
		if err := CheckToken(c.Token); err != nil {
			return nil, err
		}
		return json.Marshal(storedRecord{Token: c.Token})
	}
	if c.AppID == 0 && c.ClientID == "" {
		return nil, errors.New("a GitHub App needs its app id (or client id)")
	}
	if c.InstallationID == 0 {
		return nil, errors.New("a GitHub App needs its installation id")
	}
	if _, err := KeyFingerprint(c.PrivateKeyPEM); err != nil {
		return nil, err
	}
	return json.Marshal(storedRecord{AppID: c.AppID, ClientID: c.ClientID, InstallationID: c.InstallationID, PrivateKey: string(c.PrivateKeyPEM)})
}

// ParseStored reads credentials as MarshalStored wrote them; a record that
// is not a JSON object is a token alone (a file written by hand).
func ParseStored(b []byte) (Credentials, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		t := string(b)
		if err := CheckToken(t); err != nil {
			return Credentials{}, err
		}
		return Credentials{Token: t}, nil
	}
	var r storedRecord
	if err := json.Unmarshal(b, &r); err != nil {
		// The error of encoding/json may quote the content: say less.
		return Credentials{}, errors.New("not the record runner-manager writes (damaged JSON): run `runner-manager auth login` again")
	}
	if r.PrivateKey == "" {
		if err := CheckToken(r.Token); err != nil {
			return Credentials{}, err
		}
		return Credentials{Token: r.Token}, nil
	}
	c := Credentials{AppID: r.AppID, ClientID: r.ClientID, InstallationID: r.InstallationID, PrivateKeyPEM: []byte(r.PrivateKey)}
	if c.InstallationID == 0 || c.AppID == 0 && c.ClientID == "" {
		return Credentials{}, errors.New("a GitHub App without its app id or installation id: run `runner-manager auth login` again")
	}
	return c, nil
}

// CheckToken refuses what cannot be a token: nothing, or a space or a
// control character inside. Its length is not checked: GitHub's tokens
// change form and size (an App's installation token is about 520
// characters since 2026).
func CheckToken(t string) error {
	if t == "" {
		return errors.New("the token is empty")
	}
	if strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return errors.New("the token holds a space, a line break or a control character: give the token alone")
	}
	return nil
}

// Fingerprint names the credentials without showing them: a token's last
// four characters, an App's ids and its key's fingerprint.
func (c Credentials) Fingerprint() string {
	if c.PrivateKeyPEM != nil {
		app := fmt.Sprintf("GitHub App %d", c.AppID)
		if c.AppID == 0 {
			app = "GitHub App " + c.ClientID
		}
		fp, err := KeyFingerprint(c.PrivateKeyPEM)
		if err != nil {
			fp = "a key that does not parse"
		}
		return fmt.Sprintf("%s, installation %d, key %s", app, c.InstallationID, fp)
	}
	if len(c.Token) < 16 {
		return "a token of " + fmt.Sprint(len(c.Token)) + " characters"
	}
	return "a token ending in …" + c.Token[len(c.Token)-4:]
}

// KeyFingerprint is an App key's fingerprint as GitHub's App settings show
// it: "SHA256:" and the base64 of the SHA-256 of its public key (DER). It
// says nothing of the private key.
func KeyFingerprint(keyPEM []byte) (string, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return "", errors.New("the private key is not PEM (-----BEGIN RSA PRIVATE KEY-----): give the .pem file GitHub generated for the App")
	}
	var key crypto.Signer
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		s, ok := k.(crypto.Signer)
		if !ok {
			return "", errors.New("the private key is not one a GitHub App signs with")
		}
		key = s
	} else {
		return "", errors.New("the PEM block is not an RSA private key: give the .pem file GitHub generated for the App")
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", errors.New("the private key's public half cannot be encoded")
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + base64.StdEncoding.EncodeToString(sum[:]), nil
}
