package configfile

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// The decoder's words for a value of the wrong type: "incompatible types:
// TOML value has type int64; destination has type string".
var mismatchRE = regexp.MustCompile(`^incompatible types: TOML value has type (.+); destination has type (.+)$`)

// keyHints say what a key holds, beside its type, where the type alone
// does not tell a person what to write.
var keyHints = map[string]string{
	"data_dir":                "a directory",
	"log.format":              `"text" or "json"`,
	"log.level":               `"debug", "info", "warn" or "error"`,
	"github.url":              `a URL such as "https://github.com"`,
	"github.api_url":          `a URL such as "https://api.github.com"`,
	"github.token_env":        "an environment variable name",
	"github.token_file":       "a file path",
	"github.app_id":           "the GitHub App's id",
	"github.client_id":        "the GitHub App's client ID",
	"github.installation_id":  "the App installation's id",
	"github.private_key_file": "a file path",
	"webhook.listen":          `an address such as "127.0.0.1:8080"`,
	"webhook.secret_env":      "an environment variable name",
	"daemon.metrics_addr":     `an address such as "127.0.0.1:9090"`,
	"container.host":          `an engine address such as "unix:///run/podman/podman.sock"`,
	"vm.accel":                `"kvm" or "tcg"`,
	"vm.forward":              `host:port entries such as ["proxy.corp:3128"]`,
	"policy.labels":           `labels such as ["linux", "x64"]`,
	"policy.env":              `variable names such as ["GOFLAGS"]`,
	"policy.volumes":          `SRC:DST such as ["gocache:/cache"]`,
}

// explainDecodeError rewrites a decode error of key, found decoding data
// into v, so it says what the key wants and what it got: "must be a string
// (an environment variable name), got integer 5" rather than the decoder's
// "incompatible types: TOML value has type int64; destination has type
// string". Other messages are returned as they are.
func explainDecodeError(v any, data []byte, key, msg string) string {
	m := mismatchRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	t, ok := fieldType(reflect.TypeOf(v), strings.Split(key, "."))
	if !ok {
		return msg
	}
	want := describeType(t)
	if hint := keyHints[key]; hint != "" {
		want += " (" + hint + ")"
	}
	return fmt.Sprintf("must be %s, got %s", want, describeValue(data, key, m[1]))
}

// fieldType is the Go type of the dotted key in t (a struct, or a pointer
// to one, with toml tags); an array of tables is walked into its element.
func fieldType(t reflect.Type, key []string) (reflect.Type, bool) {
	for _, name := range key {
		for t.Kind() == reflect.Pointer || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct) {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		found := false
		for i := range t.NumField() {
			f := t.Field(i)
			if tag, _, _ := strings.Cut(f.Tag.Get("toml"), ","); tag == name {
				t, found = f.Type, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, true
}

// describeType says what a value of Go type t is written as in TOML.
func describeType(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[Size]():
		return `a size with a unit, such as "2GiB" or "512MiB"`
	case t == reflect.TypeFor[time.Duration]():
		return `a duration such as "30s" or "5m"`
	case reflect.PointerTo(t).Implements(textUnmarshaler) || t.Implements(textUnmarshaler):
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Struct {
			return "an array of tables ([[...]])"
		}
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Struct, reflect.Map:
		return "a table ([...])"
	}
	return t.String()
}

// describeValue is the value of key in data as a person wrote it, "integer
// 5"; tomlType is the decoder's name of its type, which picks the value
// among an array of tables' entries and names it when it cannot be found.
func describeValue(data []byte, key, tomlType string) string {
	tomlType = strings.ReplaceAll(tomlType, "interface {}", "any")
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err == nil {
		for _, v := range lookup(doc, strings.Split(key, ".")) {
			if goTypeName(v) == tomlType {
				return valueText(v)
			}
		}
	}
	return typeWord(tomlType)
}

// lookup finds every value of the dotted key in doc, in each entry of an
// array of tables on the way.
func lookup(doc any, key []string) []any {
	if len(key) == 0 {
		return []any{doc}
	}
	switch d := doc.(type) {
	case map[string]any:
		if v, ok := d[key[0]]; ok {
			return lookup(v, key[1:])
		}
	case []map[string]any:
		var out []any
		for _, e := range d {
			out = append(out, lookup(e, key)...)
		}
		return out
	}
	return nil
}

// goTypeName is the decoder's name of v's type in its messages, with
// "any" for "interface {}".
func goTypeName(v any) string {
	switch v.(type) {
	case []any:
		return "[]any"
	case map[string]any:
		return "map[string]any"
	case []map[string]any:
		return "[]map[string]any"
	}
	return reflect.TypeOf(v).String()
}

// typeWord names a TOML type from the decoder's name of it.
func typeWord(goType string) string {
	switch goType {
	case "int64":
		return "an integer"
	case "float64":
		return "a float"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "time.Time", "toml.LocalDate", "toml.LocalTime", "toml.LocalDatetime":
		return "a date-time"
	case "[]any":
		return "an array"
	case "map[string]any", "[]map[string]any":
		return "a table"
	}
	return goType
}

// valueText is a decoded value with its TOML type: "integer 5", `string
// "5"`, "boolean true", "an array", "a table".
func valueText(v any) string {
	switch x := v.(type) {
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case time.Time:
		return "date-time " + x.Format(time.RFC3339)
	}
	return typeWord(goTypeName(v))
}
