package config

import "reflect"

// zeroUnimplemented forgets the values of unimplemented keys, so a loaded
// configuration compares equal to one built in code.
func (c *Config) zeroUnimplemented() { zeroUnimplemented(reflect.ValueOf(c).Elem()) }

func zeroUnimplemented(v reflect.Value) {
	for _, f := range fieldsOf(v.Type()) {
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case kindUnimplemented:
			fv.SetZero()
		case kindStruct:
			zeroUnimplemented(fv)
		case kindStructs:
			for i := range fv.Len() {
				zeroUnimplemented(fv.Index(i))
			}
		}
	}
}
