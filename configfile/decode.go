package configfile

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// decodeFile decodes TOML data into c, refusing unknown keys, and records
// the line of every key set.
func decodeFile(c *File, path string, data []byte) error {
	// Decode into a copy holding the defaults so keys absent from the file
	// keep them.
	fileCfg := *c
	md, lines, err := DecodeStrict(path, data, &fileCfg)
	if err != nil {
		return err
	}
	origins := c.Origins
	*c = fileCfg
	c.Origins = origins
	for _, f := range fields(c) {
		if md.IsDefined(strings.Split(f.key, ".")...) {
			c.Origins[f.key] = Origin{Kind: FromFile, Where: where(path, lines[f.key])}
		}
	}
	return nil
}

// DecodeStrict decodes TOML data, read from path, into v (a pointer to a
// struct with toml tags), refusing keys v has no field for. Errors are
// *Error with the file, line and key, and for an unknown key the keys known
// there. It returns the decoder's metadata and the first line of each key.
func DecodeStrict(path string, data []byte, v any) (toml.MetaData, map[string]int, error) {
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(v)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			where := path
			if pe.Position.Line > 0 {
				where = fmt.Sprintf("%s:%d", path, pe.Position.Line)
			}
			return md, nil, &Error{Where: where, Key: pe.LastKey, Msg: pe.Message}
		}
		// Type mismatches come as "toml: line N (last key "k"): message".
		if m := decodeErrRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return md, nil, &Error{Where: where(path, line), Key: m[2], Msg: explainDecodeError(v, data, m[2], m[3])}
		}
		return md, nil, &Error{Where: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	lines := keyLines(data)
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		msg := unknownKeyHelp(knownKeys(reflect.TypeOf(v).Elem(), ""), k, md.Type(k...) == "Hash")
		return md, lines, &Error{Where: where(path, lines[k.String()]), Key: k.String(), Msg: msg}
	}
	return md, lines, nil
}

// knownKeys lists the dotted keys of a struct type's toml fields; a slice
// of structs is an array of tables whose keys are listed under its name.
func knownKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("toml")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !ft.Implements(textUnmarshaler) && !reflect.PointerTo(ft).Implements(textUnmarshaler) {
			out = append(out, knownKeys(ft, prefix+name+".")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

var decodeErrRE = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

func where(path string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", path, line)
	}
	return path
}

// unknownKeyHelp names the keys that are known where an unknown one was
// found.
func unknownKeyHelp(keys []string, k toml.Key, isTable bool) string {
	known := map[string][]string{}
	var tables []string
	for _, key := range keys {
		table, name := "", key
		if i := strings.LastIndex(key, "."); i >= 0 {
			table, name = key[:i], key[i+1:]
		}
		if _, ok := known[table]; !ok && table != "" {
			tables = append(tables, "["+table+"]")
		}
		known[table] = append(known[table], name)
	}
	table := strings.Join(k[:len(k)-1], ".")
	if isTable {
		table = k.String()
	}
	if names, ok := known[table]; ok && !isTable {
		in := "at the top level"
		if table != "" {
			in = "in [" + table + "]"
		}
		return fmt.Sprintf("unknown key; the keys %s are %s", in, strings.Join(names, ", "))
	}
	if len(k) == 1 && !isTable {
		return fmt.Sprintf("unknown key; the top-level keys are %s and the tables %s",
			strings.Join(known[""], ", "), strings.Join(tables, ", "))
	}
	return fmt.Sprintf("unknown table [%s]; the tables are %s", table, strings.Join(tables, ", "))
}

// keyLines finds the line of each key and table in a TOML document: a light
// scan that knows table headers, bare and quoted keys, and dotted keys. It
// only serves error messages; the decoder has already accepted the document.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	table := ""
	inMulti := ""
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if inMulti != "" {
			if strings.Count(line, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			h := strings.Trim(line, "[]")
			if j := strings.Index(h, "]"); j >= 0 {
				h = h[:j]
			}
			table = normalizeKey(h)
			if _, ok := out[table]; !ok {
				out[table] = i + 1
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key := normalizeKey(k)
		if table != "" {
			key = table + "." + key
		}
		if _, ok := out[key]; !ok {
			out[key] = i + 1
		}
		v = strings.TrimSpace(v)
		for _, q := range []string{`"""`, `'''`} {
			if strings.HasPrefix(v, q) && strings.Count(v, q) == 1 {
				inMulti = q
			}
		}
	}
	return out
}

func normalizeKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// setString parses s into v by v's type.
func setString(v reflect.Value, s string) error {
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("cannot set a %s from text", v.Type())
		}
		var list []string
		for _, e := range strings.Split(s, ",") {
			if e = strings.TrimSpace(e); e != "" {
				list = append(list, e)
			}
		}
		v.Set(reflect.ValueOf(list))
	default:
		return fmt.Errorf("cannot set a %s from text", v.Type())
	}
	return nil
}
